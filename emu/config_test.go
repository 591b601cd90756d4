package emu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunConfigValidate(t *testing.T) {
	good := func() RunConfig { c, _ := DemoConfig(2); return c }
	neg := -1
	for _, tc := range []struct {
		name string
		mut  func(*RunConfig)
		want string
	}{
		{"ok", func(*RunConfig) {}, ""},
		{"no taps", func(c *RunConfig) { c.TAPs = nil }, "at least one"},
		{"dup name", func(c *RunConfig) { c.TAPs[1].Name = c.TAPs[0].Name }, "used twice"},
		{"bad mac", func(c *RunConfig) { c.TAPs[0].MAC = "zz" }, "mac"},
		{"multicast mac", func(c *RunConfig) { c.TAPs[0].MAC = "01:00:5e:00:00:01" }, "multicast"},
		{"bad addr", func(c *RunConfig) { c.TAPs[0].Addrs = []string{"10.0.0.1"} }, "prefix length"},
		{"long name", func(c *RunConfig) { c.TAPs[0].Name = "abcdefghijklmnop" }, "15 bytes"},
		{"neg host", func(c *RunConfig) { c.TAPs[0].Host = &neg }, "host -1"},
		{"own netns without netns", func(c *RunConfig) { c.TAPs[0].Netns = "" }, "own_netns needs netns"},
		{"dilation", func(c *RunConfig) { c.Pacing.Dilation = 0 }, "dilation"},
		{"admit", func(c *RunConfig) { c.AdmitBytes = 10 }, "admit_bytes"},
		{"realtime priority", func(c *RunConfig) { c.Pacing.RealtimePriority = 100 }, "pacing.realtime_priority 100"},
		{"negative realtime priority", func(c *RunConfig) { c.Pacing.RealtimePriority = -1 }, "pacing.realtime_priority -1"},
		{"log", func(c *RunConfig) { c.Log.Format = "xml" }, "log.format"},
	} {
		c := good()
		tc.mut(&c)
		err := c.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	if _, err := DemoConfig(1); err == nil {
		t.Error("DemoConfig(1): no error")
	}
}

func TestLoadRunConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.yaml")
	_ = os.WriteFile(p, []byte("taps:\n  - name: t0\n    mac: 02:00:00:00:00:01\npacing: {dilation: 10, lag_threshold: 5ms}\n"), 0o644)
	c, err := LoadRunConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pacing.Dilation != 10 || c.Pacing.LagThreshold.String() == "" || c.TAPs[0].Name != "t0" {
		t.Errorf("%+v", c)
	}
	m, err := c.ResolveModel()
	if err != nil || m.Topology.Kind == "" {
		t.Errorf("ResolveModel: %v", err)
	}
	_ = os.WriteFile(p, []byte("taps:\n  - name: t0\n    macc: x\n"), 0o644)
	if _, err := LoadRunConfig(p); err == nil || !strings.Contains(err.Error(), "run.yaml:3") {
		t.Errorf("unknown key: %v", err)
	}
}

// Offloads are on by default for a device in a namespace of its own (its
// peer is that namespace's kernel stack), off with a reason where the peer
// may not take super-frames, and as written when the file says.
func TestOffloadDefault(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/run.yaml"
	yaml := `taps:
  - {name: a0, netns: ns-a}
  - {name: a1, netns: ns-b, offload: false}
  - {name: a2}
  - {name: a3, netns: ns-c, persist: true}
  - {name: a4, owner: 1000, netns: ns-d}
  - {name: a5, offload: true}
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadRunConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		on  bool
		why string // in the reason; "" = the file said
	}{{true, "kernel stack"}, {false, ""}, {false, "own namespace"}, {false, "VM"}, {false, "VM"}, {true, ""}} {
		on, why := c.TAPs[i].OffloadDefault()
		if on != want.on || (want.why == "") != (why == "") || !strings.Contains(why, want.why) {
			t.Errorf("taps[%d]: offload %v (%q), want %v (%q)", i, on, why, want.on, want.why)
		}
		if tc, err := c.TAPs[i].tapConfig(); err != nil || tc.Offload != on {
			t.Errorf("taps[%d]: tap config offload %v (%v), want %v", i, tc.Offload, err, on)
		}
	}
}

// pacing.busy_poll: on polls, off never, auto only with a CPU to spare.
func TestBusyPollFor(t *testing.T) {
	p := DefaultRunConfig().Pacing
	for _, tc := range []struct {
		mode string
		ncpu int
		want time.Duration
	}{{"auto", 2, 0}, {"auto", 4, 2 * time.Millisecond}, {"on", 2, 2 * time.Millisecond}, {"off", 16, 0}} {
		p.BusyPoll = tc.mode
		if got := p.BusyPollFor(tc.ncpu); got != tc.want {
			t.Errorf("busy_poll %s on %d CPUs: %v, want %v", tc.mode, tc.ncpu, got, tc.want)
		}
	}
	c := DefaultRunConfig()
	c.TAPs = []TAPConfig{{Name: "x"}}
	c.Pacing.BusyPoll = "always"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "busy_poll") {
		t.Errorf("busy_poll always: %v", err)
	}
}

// gc_memory_limit: 0 (off) or at least 64 MiB.
func TestGCMemoryLimitValidate(t *testing.T) {
	c := DefaultRunConfig()
	c.TAPs = []TAPConfig{{Name: "x"}}
	for _, tc := range []struct {
		limit int64
		ok    bool
	}{{0, true}, {512 << 20, true}, {1 << 20, false}, {-1, false}} {
		c.GCMemoryLimit = tc.limit
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("gc_memory_limit %d: %v", tc.limit, err)
		}
	}
}
