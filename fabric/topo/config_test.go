package topo

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestBuildPaperSetups(t *testing.T) {
	tests := []struct {
		name string
		cfg  func() Config
		want string
	}{
		{"default torus (004 §4.1)", func() Config { return DefaultConfig(KindTorus) }, "4x4 torus, 16 switches, 128 hosts, 32 links"},
		{"16x16 torus (002)", func() Config {
			c := DefaultConfig(KindTorus)
			c.K, c.N, c.HostsPerSwitch = []int{16}, 2, 1
			return c
		}, "16x16 torus, 256 switches, 256 hosts, 512 links"},
		{"mesh", func() Config { return DefaultConfig(KindMesh) }, "4x4 mesh, 16 switches, 128 hosts, 24 links"},
		{"MIN 64 (000 §4.1)", func() Config { return DefaultConfig(KindMIN) }, "3-stage perfect-shuffle MIN of 8-port switches, 48 switches, 64 hosts, 128 links"},
		{"MIN 512 (000 §4.1)", func() Config {
			c := DefaultConfig(KindMIN)
			c.Hosts = 512
			return c
		}, "5-stage perfect-shuffle MIN of 8-port switches, 640 switches, 512 hosts, 2048 links"},
		{"MIN 256 of 32x32 (003 §4.2)", func() Config {
			c := DefaultConfig(KindMIN)
			c.Hosts, c.MINRadix = 256, 32
			return c
		}, "2-stage perfect-shuffle MIN of 32-port switches, 32 switches, 256 hosts, 256 links"},
		{"irregular (004 §4.1)", func() Config { return DefaultConfig(KindIrregular) }, "irregular (irregular-32s-8p-h4-seed1), 32 switches, 128 hosts, 64 links"},
		{"file", func() Config {
			c := DefaultConfig(KindFile)
			c.Path = "testdata/ib-two-leaves.txt"
			return c
		}, "generic (testdata/ib-two-leaves.txt), 2 switches, 4 hosts, 2 links"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := Build(tc.cfg())
			if err != nil {
				t.Fatal(err)
			}
			if got := tp.Describe(); got != tc.want {
				t.Errorf("Describe = %q, want %q", got, tc.want)
			}
			s := tp.Summarize()
			if s.Switches != tp.NumSwitches() || s.Description != tp.Describe() {
				t.Errorf("summary %+v", s)
			}
			if _, err := json.Marshal(s); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mod    func(*Config)
		kind   Kind
		field  string
		substr string
	}{
		{"unknown kind", func(c *Config) {}, "hypercube", "kind", `"hypercube" unknown`},
		{"empty k", func(c *Config) { c.K = nil }, KindTorus, "k", "empty"},
		{"zero k", func(c *Config) { c.K = []int{4, 0} }, KindTorus, "k[1]", "at least 1"},
		{"n mismatch", func(c *Config) { c.N = 3 }, KindTorus, "n", "does not match"},
		{"negative n", func(c *Config) { c.N = -1 }, KindTorus, "n", "negative"},
		{"zero hosts per switch", func(c *Config) { c.HostsPerSwitch = 0 }, KindMesh, "hosts_per_switch", "at least 1"},
		{"too few cube ports", func(c *Config) { c.Ports = 10 }, KindTorus, "ports", "fewer than 8 hosts + 4 neighbour ports"},
		{"huge cube", func(c *Config) { c.K = []int{1 << 15, 1 << 15} }, KindTorus, "k", "more than"},
		{"zero min hosts", func(c *Config) { c.Hosts = 0 }, KindMIN, "hosts", "at least 1"},
		{"odd radix", func(c *Config) { c.MINRadix = 7 }, KindMIN, "min_radix", "even"},
		{"hosts not multiple", func(c *Config) { c.Hosts = 63 }, KindMIN, "hosts", "not a multiple"},
		{"too few stages", func(c *Config) { c.Stages = 2 }, KindMIN, "stages", "at least 3"},
		{"negative seedless count", func(c *Config) { c.Switches = -2 }, KindIrregular, "switches", "negative"},
		{"zero switches", func(c *Config) { c.Switches = 0 }, KindIrregular, "switches", "at least 1"},
		{"irregular ports", func(c *Config) { c.Ports = 5 }, KindIrregular, "ports", "fewer than 4 hosts + 2"},
		{"no path", func(c *Config) {}, KindFile, "path", "empty"},
		{"bad format", func(c *Config) { c.Path, c.Format = "x", "xml" }, KindFile, "format", `"xml" unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig(tc.kind)
			tc.mod(&c)
			err := c.Validate()
			fe, ok := err.(*FieldError)
			if !ok || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.substr) {
				t.Fatalf("err = %v, want field %s with %q", err, tc.field, tc.substr)
			}
			if _, err := Build(c); err == nil {
				t.Fatal("Build accepted an invalid config")
			}
		})
	}
	for _, k := range []Kind{KindTorus, KindMesh, KindMIN, KindIrregular} {
		c := DefaultConfig(k)
		if err := c.Validate(); err != nil {
			t.Errorf("default %s: %v", k, err)
		}
	}
}

func TestDecodeConfig(t *testing.T) {
	tests := []struct {
		name, in, format string
		want             func() Config
		err              string
	}{
		{"fixture", mustRead(t, "testdata/torus.yaml"), "yaml", func() Config { return DefaultConfig(KindTorus) }, ""},
		{"kind defaults", "kind: irregular\nseed: 7\n", "yaml", func() Config {
			c := DefaultConfig(KindIrregular)
			c.Seed = 7
			return c
		}, ""},
		{"k replaced", "k: [3, 3, 3]\nhosts_per_switch: 1\n", "yaml", func() Config {
			c := DefaultConfig(KindTorus)
			c.K, c.HostsPerSwitch = []int{3, 3, 3}, 1
			return c
		}, ""},
		{"json", `{"kind": "min", "hosts": 256, "min_radix": 32}`, "json", func() Config {
			c := DefaultConfig(KindMIN)
			c.Hosts, c.MINRadix = 256, 32
			return c
		}, ""},
		{"empty is default", "", "yaml", func() Config { return DefaultConfig(KindTorus) }, ""},
		{"unknown key", "kind: torus\nk: [4, 4]\nhost_per_switch: 8\n", "yaml", nil, `c.yaml:3: unknown key "host_per_switch" in the top level`},
		{"zero count", mustRead(t, "testdata/bad-config.yaml"), "yaml", nil, "c.yaml:4: hosts_per_switch: 0: must be at least 1"},
		{"negative", "kind: min\nhosts: 64\nstages: -3\n", "yaml", nil, "c.yaml:3: stages: -3 is negative"},
		{"k entry", "kind: mesh\nk:\n  - 4\n  - 0\n", "yaml", nil, "c.yaml:4: k[1]: 0: switches per dimension"},
		{"ports", "kind: torus\nports: 3\n", "yaml", nil, "c.yaml:2: ports: 3 is fewer than"},
		{"json unknown", "{\n \"kind\": \"torus\",\n \"rate\": 5\n}", "json", nil, `c.yaml:3: unknown key "rate"`},
		{"json zero", "{\n \"kind\": \"irregular\",\n \"switches\": 0\n}", "json", nil, "c.yaml:3: switches: 0: must be at least 1"},
		{"bad type", "k: four\n", "yaml", nil, "c.yaml:1: cannot unmarshal"},
		{"bad format", "", "toml", nil, `config format "toml" unknown`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeConfig("c.yaml", strings.NewReader(tc.in), tc.format)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want(); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestParamsCoverConfig(t *testing.T) {
	keys := map[string]bool{}
	for _, p := range Params() {
		keys[p.Name] = true
	}
	typ := reflect.TypeOf(Config{})
	for i := 0; i < typ.NumField(); i++ {
		key := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]
		if !keys[key] {
			t.Errorf("Config field %s (%s) missing from Params", typ.Field(i).Name, key)
		}
		if !contains(configKeys[""], key) {
			t.Errorf("Config field %s (%s) missing from configKeys", typ.Field(i).Name, key)
		}
	}
	if len(keys) != typ.NumField() {
		t.Errorf("Params has %d entries, Config %d fields", len(keys), typ.NumField())
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte("kind: irregular\nswitches: 16\nseed: 3\n"), false)
	f.Add([]byte("kind: min\nhosts: 64\n"), false)
	f.Add([]byte(`{"kind": "mesh", "k": [3, 2]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		format := "yaml"
		if isJSON {
			format = "json"
		}
		cfg, err := DecodeConfig("fuzz", strings.NewReader(string(data)), format)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if cfg.Kind == KindFile {
			return // do not read arbitrary paths
		}
		// Keep the build cheap: only small networks.
		if cfg.Kind == KindMIN && cfg.Hosts > 4096 || cfg.Kind == KindIrregular && (cfg.Switches > 64 || cfg.Ports > 64) {
			return
		}
		if n := len(cfg.Dims()); cfg.Kind == KindTorus || cfg.Kind == KindMesh {
			total := 1
			for _, k := range cfg.Dims() {
				total *= k
			}
			if total*cfg.HostsPerSwitch > 1<<16 || n > 8 {
				return
			}
		}
		if cfg.Stages > 16 || cfg.HostsPerSwitch > 64 || cfg.Ports > 256 {
			return
		}
		if _, err := Build(cfg); err != nil {
			t.Fatalf("valid config %+v does not build: %v", cfg, err)
		}
	})
}
