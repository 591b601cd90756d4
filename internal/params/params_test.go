package params

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/internal/units"
	"gopkg.in/yaml.v3"
)

// ptime mimics des.Time: picoseconds, text form through the units package.
type ptime int64

func (t ptime) MarshalText() ([]byte, error) { return []byte(units.FormatPicos(int64(t))), nil }
func (t *ptime) UnmarshalText(b []byte) error {
	v, err := units.ParsePicos(string(b))
	if err != nil {
		return err
	}
	*t = ptime(v)
	return nil
}
func (ptime) ParamType() string { return "duration" }

// scheme is an enum decoded only through UnmarshalYAML.
type scheme string

func (s *scheme) UnmarshalYAML(n *yaml.Node) error {
	switch n.Value {
	case "IQ", "VOQnet", "RECN":
		*s = scheme(n.Value)
		return nil
	}
	return fmt.Errorf("queue scheme %q: want IQ, VOQnet or RECN", n.Value)
}

type linkConfig struct {
	Rate    units.BitRate `yaml:"rate" doc:"link bit rate" paper:"004 §4.1"`
	LengthM float64       `yaml:"length_m" doc:"cable length" unit:"m"`
}

type fabricConfig struct {
	BufferBytes  units.Bytes       `yaml:"buffer_bytes" doc:"input buffer per virtual lane" paper:"004 §4.1"`
	RoutingDelay ptime             `yaml:"routing_delay" doc:"switch routing time" paper:"004 §4.1"`
	Scheme       scheme            `yaml:"scheme" doc:"queue scheme"`
	VLs          int               `yaml:"vls" doc:"virtual lanes" unit:"lanes"`
	Link         linkConfig        `yaml:"link"`
	Weights      map[string]int    `yaml:"weights" doc:"arbiter weight per VL"`
	Delays       map[int]ptime     `yaml:"delays" doc:"extra delay per port"`
	Escape       *linkConfig       `yaml:"escape"`
	Tags         map[string]string `yaml:"tags" doc:"free labels"`
}

type topoConfig struct {
	Kind string `yaml:"kind" doc:"topology family"`
	K    []int  `yaml:"k" doc:"radix per dimension"`
	Seed *int64 `yaml:"seed" doc:"random seed"`
}

type common struct {
	Name string `yaml:"name" doc:"run name"`
}

type nicConfig struct {
	MTU     uint16 `yaml:"mtu" doc:"fabric MTU" unit:"bytes" paper:"004 §4.1"`
	InOrder bool   `yaml:"in_order" doc:"deliver in order"`
	common  `yaml:",inline"`
	Hidden  int `yaml:"-"`
}

type config struct {
	Fabric   fabricConfig `yaml:"fabric"`
	Topology topoConfig   `yaml:"topology"`
	NIC      nicConfig    `yaml:"nic"`
}

func preset() config {
	return config{
		Fabric: fabricConfig{
			BufferBytes:  8 * units.KiB,
			RoutingDelay: 100_000,
			Scheme:       "IQ",
			VLs:          2,
			Link:         linkConfig{Rate: 2_500_000_000, LengthM: 20},
			Weights:      map[string]int{"0": 1, "1": 1},
		},
		Topology: topoConfig{Kind: "torus", K: []int{4, 4}},
		NIC:      nicConfig{MTU: 256, common: common{Name: "run"}},
	}
}

func TestDecodeYAML(t *testing.T) {
	seed := int64(7)
	tests := []struct {
		name string
		in   string
		want func(*config) // applied to preset(); nil when an error is expected
		err  []string      // substrings the error must contain
	}{
		{name: "empty file", in: "", want: func(*config) {}},
		{name: "comments only", in: "# nothing\n\n", want: func(*config) {}},
		{name: "null document", in: "---\n~\n", want: func(*config) {}},
		{name: "override only what is named", in: "fabric:\n  vls: 4\n  link:\n    rate: 10G\nnic:\n  mtu: 2048\n",
			want: func(c *config) { c.Fabric.VLs = 4; c.Fabric.Link.Rate = 10 * units.Gbps; c.NIC.MTU = 2048 }},
		{name: "custom types", in: "fabric:\n  buffer_bytes: 128 KB\n  routing_delay: 1.5us\n  scheme: RECN\n  delays: {3: 20ns}\n",
			want: func(c *config) {
				c.Fabric.BufferBytes = 128 * units.KiB
				c.Fabric.RoutingDelay = 1_500_000
				c.Fabric.Scheme = "RECN"
				c.Fabric.Delays = map[int]ptime{3: 20_000}
			}},
		{name: "plain number into duration type", in: "fabric:\n  routing_delay: 0\n",
			want: func(c *config) { c.Fabric.RoutingDelay = 0 }},
		{name: "list replaces, map merges, pointers", in: "topology:\n  k: [8, 8, 8]\n  seed: 7\nfabric:\n  weights: {\"1\": 3}\n  escape: {rate: 1G}\n",
			want: func(c *config) {
				c.Topology.K = []int{8, 8, 8}
				c.Topology.Seed = &seed
				c.Fabric.Weights = map[string]int{"0": 1, "1": 3}
				c.Fabric.Escape = &linkConfig{Rate: units.Gbps}
			}},
		{name: "inline struct key", in: "nic:\n  name: sweep-3\n", want: func(c *config) { c.NIC.Name = "sweep-3" }},
		{name: "null clears list, keeps scalar", in: "topology:\n  k: ~\n  kind:\n",
			want: func(c *config) { c.Topology.K = nil }},
		{name: "anchors and merge keys", in: "base: &b {rate: 8G}\n",
			err: []string{`cfg.yaml:1: unknown key "base" at the top level`}},
		{name: "merge key", in: "fabric:\n  link: &l\n    rate: 8G\n  escape:\n    <<: *l\n    length_m: 5\n",
			want: func(c *config) {
				c.Fabric.Link.Rate = 8 * units.Gbps
				c.Fabric.Escape = &linkConfig{Rate: 8 * units.Gbps, LengthM: 5}
			}},
		{name: "unknown key with suggestion", in: "fabric:\n  vls: 4\n  bufer_bytes: 4KiB\n",
			err: []string{`cfg.yaml:3: unknown key "bufer_bytes" in fabric (did you mean "buffer_bytes"?)`}},
		{name: "unknown key lists valid keys", in: "fabric:\n  link:\n    zzzzzz: 1\n",
			err: []string{`cfg.yaml:3: unknown key "zzzzzz" in fabric.link (valid keys: rate, length_m)`}},
		{name: "unknown top-level key", in: "fabrik:\n  vls: 4\n",
			err: []string{`cfg.yaml:1: unknown key "fabrik" at the top level (did you mean "fabric"?)`}},
		{name: "hidden field is unknown", in: "nic:\n  hidden: 1\n", err: []string{`cfg.yaml:2: unknown key "hidden" in nic`}},
		{name: "int type error", in: "nic:\n  mtu: big\n", err: []string{`cfg.yaml:2: nic.mtu: cannot use "big" as uint16`}},
		{name: "int overflow", in: "nic:\n  mtu: 70000\n", err: []string{`cfg.yaml:2: nic.mtu: cannot use "70000" as uint16`}},
		{name: "fraction into int", in: "fabric:\n  vls: 1.5\n", err: []string{`cfg.yaml:2: fabric.vls: cannot use "1.5" as int: want a whole number`}},
		{name: "bad duration", in: "\n\nfabric:\n  routing_delay: 100 parsecs\n",
			err: []string{`cfg.yaml:4: fabric.routing_delay: duration "100 parsecs": unknown unit`}},
		{name: "bad size", in: "fabric:\n  buffer_bytes: -8KiB\n", err: []string{`cfg.yaml:2: fabric.buffer_bytes: negative size`}},
		{name: "bad enum", in: "fabric:\n  scheme: VOQsw\n", err: []string{`cfg.yaml:2: fabric.scheme: queue scheme "VOQsw"`}},
		{name: "bad map key type", in: "fabric:\n  delays: {x: 1ns}\n", err: []string{`cfg.yaml:2: fabric.delays.x: cannot use "x" as int`}},
		{name: "list for scalar", in: "nic:\n  mtu: [1]\n", err: []string{`cfg.yaml:2: nic.mtu: want a single uint16 value, got a list`}},
		{name: "scalar for struct", in: "fabric: 3\n", err: []string{`cfg.yaml:1: fabric: want a mapping of keys, got "3"`}},
		{name: "scalar for list", in: "topology:\n  k: 8\n", err: []string{`cfg.yaml:2: topology.k: want a list`}},
		{name: "bad list element", in: "topology:\n  k: [8, x]\n", err: []string{`cfg.yaml:2: topology.k[1]: cannot use "x" as int`}},
		{name: "duplicate key", in: "nic:\n  mtu: 1\n  mtu: 2\n", err: []string{`cfg.yaml:3: nic: key "mtu" given twice (first at line 2)`}},
		{name: "several errors", in: "nic:\n  mtu: x\n  in_order: maybe\n", err: []string{"cfg.yaml:2: nic.mtu", "cfg.yaml:3: nic.in_order"}},
		{name: "two documents", in: "nic: {mtu: 1}\n---\nnic: {mtu: 2}\n", err: []string{"cfg.yaml:3: a second YAML document"}},
		{name: "syntax error", in: "fabric:\n  vls: 4\n bad\n", err: []string{"cfg.yaml:2: did not find expected key"}},
		{name: "top level not a mapping", in: "- 1\n", err: []string{`cfg.yaml:1: want a mapping of keys, got a list`}},
		{name: "tab indentation", in: "fabric:\n\tvls: 4\n", err: []string{"cfg.yaml:2: "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := preset()
			err := DecodeYAML(strings.NewReader(tc.in), "cfg.yaml", &got)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("no error; want %q", tc.err)
				}
				for _, e := range tc.err {
					if !strings.Contains(err.Error(), e) {
						t.Errorf("error %q does not contain %q", err, e)
					}
				}
				if !reflect.DeepEqual(got, preset()) {
					t.Errorf("destination changed on error: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			want := preset()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeYAMLBadDestination(t *testing.T) {
	var c config
	for _, dst := range []any{nil, c, (*config)(nil)} {
		if err := DecodeYAML(strings.NewReader("nic: {mtu: 1}"), "cfg.yaml", dst); err == nil {
			t.Errorf("DecodeYAML into %T succeeded", dst)
		}
	}
}

func TestDecodeYAMLAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [[], [], [], [], [], [], [], [], [], []]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	type list []list // every expansion is valid, so only the node budget stops it
	type bomb struct {
		A map[string]list `yaml:",inline"`
	}
	var dst bomb
	err := DecodeYAML(strings.NewReader(b.String()), "bomb.yaml", &dst)
	if err == nil || !strings.Contains(err.Error(), "too many YAML nodes") {
		t.Fatalf("alias bomb: %v", err)
	}
}

func TestLoadYAML(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("fabric:\n  routing_delay: 150ns\n  link:\n    rate_gbps: 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := preset()
	err := LoadYAML(path, &c)
	want := path + `:4: unknown key "rate_gbps" in fabric.link (did you mean "rate"?)`
	if err == nil || err.Error() != want {
		t.Fatalf("LoadYAML error = %v\nwant %s", err, want)
	}
	if err := os.WriteFile(path, []byte("fabric:\n  routing_delay: 150ns\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := LoadYAML(path, &c); err != nil || c.Fabric.RoutingDelay != 150_000 {
		t.Fatalf("LoadYAML = %v, delay %d", err, c.Fabric.RoutingDelay)
	}
	if err := LoadYAML(filepath.Join(dir, "missing.yaml"), &c); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestSet(t *testing.T) {
	seed := int64(42)
	tests := []struct {
		set  string
		want func(*config)
		err  string
	}{
		{"fabric.link.rate=10G", func(c *config) { c.Fabric.Link.Rate = 10 * units.Gbps }, ""},
		{"fabric.link.rate = 2.5Gb/s", func(c *config) { c.Fabric.Link.Rate = 2_500_000_000 }, ""},
		{"topology.k=[8,8]", func(c *config) { c.Topology.K = []int{8, 8} }, ""},
		{"topology.k.1=16", func(c *config) { c.Topology.K = []int{4, 16} }, ""},
		{"nic.mtu=2048", func(c *config) { c.NIC.MTU = 2048 }, ""},
		{"nic.in_order=true", func(c *config) { c.NIC.InOrder = true }, ""},
		{"nic.name=a: b #c", func(c *config) { c.NIC.Name = "a: b #c" }, ""},
		{"nic.name=", func(c *config) { c.NIC.Name = "" }, ""},
		{"fabric.routing_delay=150ns", func(c *config) { c.Fabric.RoutingDelay = 150_000 }, ""},
		{"fabric.buffer_bytes=8 KB", func(c *config) { c.Fabric.BufferBytes = 8192 }, ""},
		{"fabric.scheme=VOQnet", func(c *config) { c.Fabric.Scheme = "VOQnet" }, ""},
		{"fabric.weights.1=5", func(c *config) { c.Fabric.Weights = map[string]int{"0": 1, "1": 5} }, ""},
		{"fabric.weights.7=2", func(c *config) { c.Fabric.Weights = map[string]int{"0": 1, "1": 1, "7": 2} }, ""},
		{"fabric.weights={a: 1}", func(c *config) { c.Fabric.Weights = map[string]int{"a": 1} }, ""},
		{"fabric.delays.3=1us", func(c *config) { c.Fabric.Delays = map[int]ptime{3: 1_000_000} }, ""},
		{"fabric.tags.owner=x=y", func(c *config) { c.Fabric.Tags = map[string]string{"owner": "x=y"} }, ""},
		{"fabric.escape.rate=1G", func(c *config) { c.Fabric.Escape = &linkConfig{Rate: units.Gbps} }, ""},
		{"topology.seed=42", func(c *config) { c.Topology.Seed = &seed }, ""},
		{"fabric.link={length_m: 5}", func(c *config) { c.Fabric.Link.LengthM = 5 }, ""},
		{"topology.k=~", func(c *config) { c.Topology.K = nil }, ""},

		{"fabric.lnk.rate=10G", nil, `--set fabric.lnk.rate: unknown key "lnk" in fabric (did you mean "link"?)`},
		{"fabrc.vls=1", nil, `--set fabrc.vls: unknown key "fabrc" at the top level (did you mean "fabric"?)`},
		{"fabric.link.rate_gbps=10", nil, `--set fabric.link.rate_gbps: unknown key "rate_gbps" in fabric.link (did you mean "rate"?)`},
		{"nic.mtu.x=1", nil, `--set nic.mtu.x: nic.mtu is a single uint16 value; it has no key "x"`},
		{"fabric.routing_delay.x=1", nil, `--set fabric.routing_delay.x: fabric.routing_delay is a single duration value; it has no key "x"`},
		{"topology.k.2=1", nil, `--set topology.k.2: topology.k has 2 elements; "2" is not an index of one`},
		{"fabric.delays.x=1ns", nil, `--set fabric.delays.x: fabric.delays.x: "x" is not a valid int key`},
		{"nic.mtu=abc", nil, `--set nic.mtu: cannot use "abc" as uint16`},
		{"nic.mtu=", nil, `--set nic.mtu: empty value for a uint16`},
		{"nic.mtu=[1", nil, `--set nic.mtu: value "[1" is not valid YAML`},
		{"fabric.routing_delay=-5ns", nil, `--set fabric.routing_delay: negative duration "-5ns"`},
		{"fabric.routing_delay=100", nil, `--set fabric.routing_delay: duration "100": missing unit`},
		{"fabric.scheme=4Q", nil, `--set fabric.scheme: queue scheme "4Q": want IQ, VOQnet or RECN`},
		{"topology.k=[8,x]", nil, `--set topology.k: topology.k[1]: cannot use "x" as int`},
		{"fabric.link={lenght_m: 5}", nil, `--set fabric.link: unknown key "lenght_m" in fabric.link (did you mean "length_m"?)`},
		{"fabric.vls=1.5", nil, `--set fabric.vls: cannot use "1.5" as int: want a whole number`},
		{"nic.mtu", nil, `--set "nic.mtu": want key=value`},
		{"=1", nil, `want key=value`},
		{"nic..mtu=1", nil, `--set nic..mtu: empty key in path`},
		{"nic.hidden=1", nil, `unknown key "hidden" in nic`},
	}
	for _, tc := range tests {
		t.Run(tc.set, func(t *testing.T) {
			got := preset()
			err := Set(&got, tc.set)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Set(%q) error = %v; want %q", tc.set, err, tc.err)
				}
				if !reflect.DeepEqual(got, preset()) {
					t.Errorf("destination changed on error: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Set(%q): %v", tc.set, err)
			}
			want := preset()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestSetCopiesShared checks that Set does not write through maps, slices or
// pointees a preset shares.
func TestSetCopiesShared(t *testing.T) {
	shared := map[string]int{"0": 1}
	k := []int{4, 4}
	esc := &linkConfig{Rate: units.Gbps}
	c := preset()
	c.Fabric.Weights, c.Topology.K, c.Fabric.Escape = shared, k, esc
	for _, s := range []string{"fabric.weights.0=9", "topology.k.0=9", "fabric.escape.rate=9G"} {
		if err := Set(&c, s); err != nil {
			t.Fatal(err)
		}
	}
	if shared["0"] != 1 || k[0] != 4 || esc.Rate != units.Gbps {
		t.Errorf("shared values changed: %v %v %v", shared, k, esc)
	}
	if c.Fabric.Weights["0"] != 9 || c.Topology.K[0] != 9 || c.Fabric.Escape.Rate != 9*units.Gbps {
		t.Errorf("values not set: %+v", c)
	}
}

func TestExplain(t *testing.T) {
	c := preset()
	got := Explain(&c)
	want := []struct{ path, typ, unit, def, paper string }{
		{"fabric.buffer_bytes", "size", "", "8KiB", "004 §4.1"},
		{"fabric.routing_delay", "duration", "", "100ns", "004 §4.1"},
		{"fabric.scheme", "string", "", "IQ", ""},
		{"fabric.vls", "int", "lanes", "2", ""},
		{"fabric.link.rate", "rate", "", "2.5Gbps", "004 §4.1"},
		{"fabric.link.length_m", "float64", "m", "20", ""},
		{"fabric.weights", "map[string]int", "", `{"0": 1, "1": 1}`, ""},
		{"fabric.delays", "map[int]duration", "", "{}", ""},
		{"fabric.escape.rate", "rate", "", "0bps", "004 §4.1"},
		{"fabric.escape.length_m", "float64", "m", "0", ""},
		{"fabric.tags", "map[string]string", "", "{}", ""},
		{"topology.kind", "string", "", "torus", ""},
		{"topology.k", "[]int", "", "[4, 4]", ""},
		{"topology.seed", "int64", "", "null", ""},
		{"nic.mtu", "uint16", "bytes", "256", "004 §4.1"},
		{"nic.in_order", "bool", "", "false", ""},
		{"nic.name", "string", "", "run", ""},
	}
	if len(got) != len(want) {
		for _, p := range got {
			t.Logf("%+v", p)
		}
		t.Fatalf("Explain returned %d params, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Path != w.path || g.Type != w.typ || g.Unit != w.unit || g.Default != w.def || g.Paper != w.paper || g.Doc == "" {
			t.Errorf("param %d = %+v\nwant %+v", i, g, w)
		}
	}
	if ps := Explain(42); ps != nil {
		t.Errorf("Explain(42) = %v", ps)
	}
	if ps := Explain((*config)(nil)); len(ps) != len(want) {
		t.Errorf("Explain(nil pointer) = %d params", len(ps))
	}
}

func TestWriteExplainAndMarkdown(t *testing.T) {
	ps := []Param{
		{Path: "fabric.buffer_bytes", Type: "size", Default: "8KiB", Doc: "input buffer per virtual lane", Paper: "004 §4.1"},
		{Path: "nic.mtu", Type: "int", Unit: "bytes", Default: "256", Doc: "MTU | with\na pipe"},
	}
	var b bytes.Buffer
	if err := WriteExplain(&b, ps); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PARAMETER") {
		t.Fatalf("table:\n%s", b.String())
	}
	// Columns are aligned: DEFAULT starts at the same offset on every line.
	col := strings.Index(lines[0], "DEFAULT")
	if strings.Index(lines[1], "8KiB") != col || strings.Index(lines[2], "256") != col {
		t.Errorf("columns not aligned:\n%s", b.String())
	}
	if !strings.Contains(lines[1], "  -  ") || !strings.Contains(lines[2], "MTU | with a pipe") {
		t.Errorf("table:\n%s", b.String())
	}

	b.Reset()
	if err := WriteMarkdown(&b, ps); err != nil {
		t.Fatal(err)
	}
	want := "| Parameter | Default | Unit | Type | Paper | Description |\n" +
		"|---|---|---|---|---|---|\n" +
		"| ` fabric.buffer_bytes ` | ` 8KiB ` |  | size | 004 §4.1 | input buffer per virtual lane |\n" +
		"| ` nic.mtu ` | ` 256 ` | bytes | int |  | MTU \\| with a pipe |\n"
	if b.String() != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCheckDocumented(t *testing.T) {
	if err := CheckDocumented(preset()); err != nil {
		t.Errorf("sample config: %v", err)
	}
	type sub struct {
		A int `yaml:"a"`
		B int `yaml:"b" doc:"documented"`
	}
	type cfg struct {
		Sub sub `yaml:"sub"`
		C   int `doc:"  "`
	}
	err := CheckDocumented(&cfg{})
	if err == nil || err.Error() != "config fields without a doc tag: sub.a (sub.A), c (cfg.C)" {
		t.Errorf("CheckDocumented = %v", err)
	}
}

func TestDumpRoundTrip(t *testing.T) {
	c := preset()
	c.Fabric.Delays = map[int]ptime{2: 1500}
	c.Fabric.Escape = &linkConfig{Rate: units.Gbps, LengthM: 1.5}
	c.Fabric.Tags = map[string]string{"owner": "x: y"} // a nil map would come back empty
	out, err := Dump(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"fabric:\n  buffer_bytes: 8KiB\n  routing_delay: 100ns\n", "rate: 2.5Gbps", "2: 1.5ns", "k:\n    - 4\n"} {
		if !strings.Contains(string(out), s) {
			t.Errorf("dump lacks %q:\n%s", s, out)
		}
	}
	// Struct order, not alphabetical.
	if strings.Index(string(out), "fabric:") > strings.Index(string(out), "topology:") {
		t.Errorf("dump not in struct order:\n%s", out)
	}
	var back config
	if err := DecodeYAML(bytes.NewReader(out), "dump.yaml", &back); err != nil {
		t.Fatalf("dump does not decode: %v\n%s", err, out)
	}
	back.NIC.Hidden = c.NIC.Hidden
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, c)
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"buffer_bytes", "routing_delay", "link", "vls"}
	tests := []struct{ in, want string }{
		{"bufer_bytes", "buffer_bytes"}, {"BUFFER_BYTES", "buffer_bytes"}, {"routingdelay", "routing_delay"},
		{"lnk", "link"}, {"vl", "vls"}, {"buffer", "buffer_bytes"}, {"vls_count", "vls"}, {"xyzzy", ""}, {"", ""},
	}
	for _, tc := range tests {
		if got := suggest(tc.in, keys); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzDecodeYAML(f *testing.F) {
	for _, s := range []string{
		"", "fabric:\n  vls: 4\n", "fabric: {link: {rate: 10G}}\n", "topology: {k: [1, 2]}\n",
		"a: &a {b: *a}\n", "fabric:\n  link: &l {rate: 1G}\n  escape: {<<: *l}\n", "---\n---\n",
		"nic: {mtu: 1.5}\n", "fabric: {delays: {1: 1ns}}\n", "- [\n", "fabric: !!binary AAA=\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := preset()
		err := DecodeYAML(strings.NewReader(s), "fuzz.yaml", &c)
		if err != nil && !strings.HasPrefix(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

func FuzzSet(f *testing.F) {
	for _, s := range []string{
		"fabric.link.rate=10G", "topology.k=[8,8]", "nic.mtu=2048", "fabric.routing_delay=150ns",
		"fabric.weights.1=2", "fabric.delays.1=1ns", "fabric.escape={rate: 1G}", "topology.k.0=1", "x", "=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := preset()
		if err := Set(&c, s); err != nil {
			if !reflect.DeepEqual(c, preset()) {
				t.Fatalf("Set(%q) failed (%v) but changed the destination", s, err)
			}
		}
	})
}

// TestDumpWritesEveryKey: omitempty keys and empty lists are written, so a
// dump read over a base whose values differ replaces them all.
func TestDumpWritesEveryKey(t *testing.T) {
	type inner struct {
		K    []int  `yaml:"k,omitempty"`
		Path string `yaml:"path,omitempty"`
	}
	type outer struct {
		Inner inner    `yaml:"inner"`
		List  []inner  `yaml:"list"`
		Ptr   *inner   `yaml:"ptr"`
		Names []string `yaml:"names"`
	}
	v := outer{List: []inner{{}}}
	out, err := Dump(&v)
	if err != nil {
		t.Fatal(err)
	}
	want := "inner:\n  k: []\n  path: \"\"\nlist:\n  - k: []\n    path: \"\"\nptr: null\nnames: []\n"
	if string(out) != want {
		t.Fatalf("dump:\n%s\nwant:\n%s", out, want)
	}
	base := outer{Inner: inner{K: []int{8, 8}, Path: "x"}, Names: []string{"a"}}
	if err := DecodeYAML(bytes.NewReader(out), "dump.yaml", &base); err != nil {
		t.Fatal(err)
	}
	again, err := Dump(&base)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != want {
		t.Fatalf("dump over another base:\n%s\nwant:\n%s", again, want)
	}
}

// TestNonzeroTag: a field tagged nonzero refuses an explicit 0 (or 0.0)
// from a file, a --set and a --set of its enclosing struct, naming the key
// and the tag's range; other values, and leaving the key out, pass.
func TestNonzeroTag(t *testing.T) {
	type inner struct {
		N int `yaml:"n" doc:"n" nonzero:"1 to 8 (leave the key out for the default, 4)"`
		M int `yaml:"m" doc:"m"`
	}
	type outer struct {
		In inner `yaml:"in"`
	}
	for _, tc := range []struct {
		name, file, set, want string
	}{
		{"file 0", "in:\n  n: 0\n", "", "c.yaml:2: in.n: 0: want 1 to 8 (leave the key out for the default, 4)"},
		{"file 0.0", "in: {n: 0.0}\n", "", "in.n: 0: want 1 to 8"},
		{"set 0", "", "in.n=0", "--set in.n: 0: want 1 to 8"},
		{"set struct", "", "in={n: 0}", "in.n: 0: want 1 to 8"},
		{"file 3", "in:\n  n: 3\n  m: 0\n", "", ""},
		{"set 3", "", "in.n=3", ""},
		{"untagged 0", "", "in.m=0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst outer
			var err error
			if tc.file != "" {
				err = DecodeYAML(strings.NewReader(tc.file), "c.yaml", &dst)
			} else {
				err = Set(&dst, tc.set)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
