package reorder

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseMemorySpec(t *testing.T) {
	tests := []struct {
		in      string
		want    MemorySpec
		wantErr string
	}{
		{in: "static:2KiB", want: Static2KiB},
		{in: "static:32KiB", want: Static32KiB},
		{in: "dynamic:256KiB,cap=128KiB", want: Dynamic256KiB},
		{in: "dynamic:4MiB,cap=1MiB", want: Dynamic4MiB},
		{in: "unlimited", want: UnlimitedSpace},
		{in: " Unlimited ", want: UnlimitedSpace},
		{in: "static:2KB", want: Static2KiB},  // KB is binary
		{in: "static:2 kb", want: Static2KiB}, // spaces, case
		{in: "static:2048", want: Static2KiB}, // bare bytes
		{in: "static:32B", want: MemorySpec{Kind: Static, PerConn: 32}},
		{in: "static:0", want: MemorySpec{Kind: Static}}, // no buffer: §3.1 alone
		{in: "dynamic:4MB,cap=1MB", want: Dynamic4MiB},
		{in: "dynamic:1GiB", want: MemorySpec{Kind: Dynamic, Pool: 1 << 30, Cap: 1 << 30}},
		{in: "dynamic: 256K , CAP = 128K", want: Dynamic256KiB},
		{in: "", wantErr: "empty"},
		{in: "static", wantErr: "needs a buffer size"},
		{in: "static:", wantErr: "needs a buffer size"},
		{in: "static:-2KiB", wantErr: "does not start with a number"},
		{in: "static:1.5KiB", wantErr: "whole numbers"},
		{in: "static:2XB", wantErr: `unknown unit "XB"`},
		{in: "static:2KiB,cap=1KiB", wantErr: "static takes one size"},
		{in: "static:99999999999999999999", wantErr: "out of range"},
		{in: "static:9999999999999GiB", wantErr: "too large"},
		{in: "dynamic", wantErr: "needs a pool size"},
		{in: "dynamic:128KiB,cap=256KiB", wantErr: "cap 256KiB exceeds the pool 128KiB"},
		{in: "dynamic:256KiB,limit=1KiB", wantErr: `unknown option "limit=1KiB"`},
		{in: "dynamic:256KiB,cap=1KiB,cap=2KiB", wantErr: "cap given twice"},
		{in: "dynamic:256KiB,cap=", wantErr: "cap: missing size"},
		{in: "unlimited:1MiB", wantErr: "takes no size"},
		{in: "elastic:1MiB", wantErr: `unknown memory kind "elastic"`},
	}
	for _, tc := range tests {
		got, err := ParseMemorySpec(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseMemorySpec(%q): err = %v, want it to contain %q", tc.in, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.in) {
				t.Errorf("ParseMemorySpec(%q): error %q does not quote the input", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseMemorySpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestMemorySpecString(t *testing.T) {
	for _, tc := range []struct {
		spec MemorySpec
		want string
	}{
		{Static2KiB, "static:2KiB"},
		{MemorySpec{Kind: Static, PerConn: 2560}, "static:2560B"},
		{Dynamic256KiB, "dynamic:256KiB,cap=128KiB"},
		{Dynamic4MiB, "dynamic:4MiB,cap=1MiB"},
		{UnlimitedSpace, "unlimited"},
		{MemorySpec{Kind: Static}, "static:0B"},
	} {
		if got := tc.spec.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.spec, got, tc.want)
		}
		back, err := ParseMemorySpec(tc.want)
		if err != nil || back != tc.spec {
			t.Errorf("round trip %q: %+v, %v", tc.want, back, err)
		}
	}
}

func TestMemorySpecValidate(t *testing.T) {
	bad := []MemorySpec{
		{},
		{Kind: 9},
		{Kind: Static, PerConn: -1},
		{Kind: Static, PerConn: 1, Cap: 1},
		{Kind: Dynamic, Pool: -1},
		{Kind: Dynamic, Pool: 10, Cap: 11},
		{Kind: Dynamic, Pool: 10, Cap: 5, PerConn: 1},
		{Kind: Unlimited, Pool: 1},
	}
	for _, s := range bad {
		if s.Validate() == nil {
			t.Errorf("%+v: Validate accepted an invalid spec", s)
		}
	}
}

func FuzzParseMemorySpec(f *testing.F) {
	for _, s := range []string{"static:2KiB", "dynamic:256KiB,cap=128KiB", "unlimited", "static:1.5K",
		"dynamic:4MiB,cap=1MiB,cap=2", "static:9223372036854775807", "dynamic:0,cap=0", ":", "static:2 GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseMemorySpec(s)
		if err != nil {
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("ParseMemorySpec(%q) returned an invalid spec %+v: %v", s, spec, err)
		}
		back, err := ParseMemorySpec(spec.String())
		if err != nil || back != spec {
			t.Fatalf("round trip of %q via %q: %+v, %v", s, spec.String(), back, err)
		}
	})
}

func TestMemorySpecText(t *testing.T) {
	type config struct {
		Memory MemorySpec `json:"memory"`
		Kind   MemoryKind `json:"kind"`
	}
	b, err := json.Marshal(config{Dynamic256KiB, Static})
	if err != nil || string(b) != `{"memory":"dynamic:256KiB,cap=128KiB","kind":"static"}` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var c config
	if err := json.Unmarshal([]byte(`{"memory":"static:32KiB","kind":"Unlimited"}`), &c); err != nil || c.Memory != Static32KiB || c.Kind != Unlimited {
		t.Fatalf("unmarshal: %+v, %v", c, err)
	}
	if err := json.Unmarshal([]byte(`{"memory":"static:lots"}`), &c); err == nil || !strings.Contains(err.Error(), "static:lots") {
		t.Fatalf("bad spec: %v", err)
	}
	if _, err := json.Marshal(config{Memory: MemorySpec{Kind: Static, PerConn: -1}, Kind: Static}); err == nil {
		t.Fatal("marshalled an invalid spec")
	}
}
