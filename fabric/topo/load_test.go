package topo

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestLoadEdgeListFixtures(t *testing.T) {
	for _, path := range []string{"testdata/ring3.yaml", "testdata/ring3.json"} {
		t.Run(path, func(t *testing.T) {
			tp, err := LoadFile(path, "")
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, tp)
			if tp.Kind != KindGeneric || tp.Name != "ring3" || tp.NumSwitches() != 3 || tp.NumHosts() != 6 || len(tp.Links) != 3 {
				t.Fatalf("got %s", tp.Describe())
			}
			if r, ok := tp.Peer(0, 2); !ok || r != (PortRef{1, 3}) {
				t.Errorf("s0/p2 peer %v", r)
			}
			if tp.Hosts[3].Name != "h3" || tp.Hosts[3].At != (PortRef{1, 1}) {
				t.Errorf("host 3 = %+v", tp.Hosts[3])
			}
			if tp.Diameter() != 1 {
				t.Errorf("diameter %d", tp.Diameter())
			}
		})
	}
}

// TestEdgeListRoundTrip writes built topologies as YAML and JSON and loads
// them back.
func TestEdgeListRoundTrip(t *testing.T) {
	for _, mk := range []func() (*Topology, error){
		func() (*Topology, error) { return Torus([]int{3, 2}, 2, 0) },
		func() (*Topology, error) { return MIN(16, 4, 0) },
		func() (*Topology, error) { return Irregular(12, 8, 4, 5) },
	} {
		tp, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		el := EdgeListOf(tp)
		y, _ := yaml.Marshal(el)
		j, _ := json.MarshalIndent(el, "", "\t")
		for _, c := range []struct {
			name string
			load func(string, *bytes.Reader) (*Topology, error)
			data []byte
		}{
			{"x.yaml", func(n string, r *bytes.Reader) (*Topology, error) { return LoadYAML(n, r) }, y},
			{"x.json", func(n string, r *bytes.Reader) (*Topology, error) { return LoadJSON(n, r) }, j},
		} {
			back, err := c.load(c.name, bytes.NewReader(c.data))
			if err != nil {
				t.Fatalf("%s %s: %v", tp.Name, c.name, err)
			}
			if !reflect.DeepEqual(back.Links, tp.Links) || !reflect.DeepEqual(back.Hosts, tp.Hosts) {
				t.Fatalf("%s %s: round trip differs", tp.Name, c.name)
			}
		}
	}
}

const goodYAML = `switches:
  - {name: s0, ports: 4}
  - {name: s1, ports: 4}
hosts:
  - {name: h0, switch: s0, port: 0}
  - {name: h1, switch: s1, port: 0}
links:
  - a: {switch: s0, port: 3}
    b: {switch: s1, port: 3}
`

func TestLoadYAMLErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unknown top key", "nodes: []\n" + goodYAML, "t.yaml:1: unknown key \"nodes\""},
		{"unknown host key", strings.Replace(goodYAML, "port: 0}\n  - {name: h1", "port: 0, lid: 4}\n  - {name: h1", 1), "t.yaml:5: unknown key \"lid\" in hosts[0]"},
		{"unknown link key", strings.Replace(goodYAML, "b: {switch: s1, port: 3}", "b: {switch: s1, port: 3, width: 4}", 1), "t.yaml:9: unknown key \"width\" in links[0].b"},
		{"zero ports", strings.Replace(goodYAML, "{name: s1, ports: 4}", "{name: s1, ports: 0}", 1), "t.yaml:3: switch \"s1\": ports = 0"},
		{"negative ports", strings.Replace(goodYAML, "{name: s1, ports: 4}", "{name: s1, ports: -4}", 1), "t.yaml:3: switch \"s1\": ports = -4"},
		{"unknown switch", strings.Replace(goodYAML, "switch: s1, port: 0", "switch: s9, port: 0", 1), "t.yaml:6: hosts[1]: switch \"s9\" is not defined"},
		{"port range", strings.Replace(goodYAML, "a: {switch: s0, port: 3}", "a: {switch: s0, port: 4}", 1), "t.yaml:8: links[0].a: port 4 of switch \"s0\" out of range"},
		{"port twice", strings.Replace(goodYAML, "a: {switch: s0, port: 3}", "a: {switch: s0, port: 0}", 1), "t.yaml:8: links[0].a: port 0 of switch \"s0\" is already used by hosts[0] (line 5)"},
		{"self link", strings.Replace(goodYAML, "b: {switch: s1", "b: {switch: s0", 1), "t.yaml:8: links[0]: link from switch \"s0\" to itself"},
		{"duplicate switch", strings.Replace(goodYAML, "name: s1, ports", "name: s0, ports", 1), "t.yaml:3: switch \"s0\" defined twice (first at line 2)"},
		{"duplicate host", strings.Replace(goodYAML, "name: h1", "name: h0", 1), "t.yaml:6: host \"h0\" defined twice (first at line 5)"},
		{"disconnected", strings.Replace(goodYAML, "links:\n  - a: {switch: s0, port: 3}\n    b: {switch: s1, port: 3}\n", "links: []\n", 1), "t.yaml: topology \"t.yaml\" is disconnected"},
		{"bad type", strings.Replace(goodYAML, "ports: 4}", "ports: four}", 1), "t.yaml:2: cannot unmarshal"},
		{"syntax", "switches: [\n", "t.yaml:"},
		{"empty", "", "t.yaml: empty file"},
		{"no switches", "switches: []\nhosts: []\n", "t.yaml:1: no switches"},
		{"no hosts", "switches: [{name: s, ports: 1}]\nhosts: []\n", "t.yaml:2: no hosts"},
		{"unnamed host", strings.Replace(goodYAML, "name: h1, ", "", 1), "t.yaml:6: hosts[1]: host without a name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadYAML("t.yaml", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := LoadYAML("t.yaml", strings.NewReader(goodYAML)); err != nil {
		t.Fatal(err)
	}
}

func TestLoadJSONErrors(t *testing.T) {
	good, _ := json.MarshalIndent(EdgeList{
		Switches: []EdgeSwitch{{"s0", 4}, {"s1", 4}},
		Hosts:    []EdgeHost{{"h0", "s0", 0}, {"h1", "s1", 0}},
		Links:    []EdgeLink{{EdgePort{"s0", 3}, EdgePort{"s1", 3}}},
	}, "", "  ")
	g := string(good)
	tests := []struct {
		name, in, want string
	}{
		{"unknown key", strings.Replace(g, `"name": "h1",`, `"name": "h1", "mtu": 2048,`, 1), `t.json:19: unknown key "mtu" in hosts[1]`},
		{"syntax", strings.Replace(g, `"ports": 4`, `"ports": 4,,`, 1), "t.json:5: invalid character ','"},
		{"type", strings.Replace(g, `"ports": 4`, `"ports": "4"`, 1), "t.json:5: switches.ports: cannot use JSON string as int"},
		{"zero ports", strings.Replace(g, `"ports": 4`, `"ports": 0`, 1), `t.json:5: switch "s0": ports = 0`},
		{"trailing", g + "{}", "unexpected data after the top-level value"},
		{"empty", "", "t.json"},
		{"unknown switch", strings.Replace(g, `"switch": "s1"`, `"switch": "nope"`, 1), `hosts[1]: switch "nope" is not defined`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadJSON("t.json", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// JSON escapes YAML would not take must work.
	esc := strings.Replace(g, `"h0"`, `"h\/0 \ud83d\ude00"`, 1)
	tp, err := LoadJSON("t.json", strings.NewReader(esc))
	if err != nil || tp.Hosts[0].Name != "h/0 😀" {
		t.Fatalf("escapes: %v %+v", err, tp)
	}
}

func TestLoadFixtureErrors(t *testing.T) {
	tests := []struct{ path, want string }{
		{"testdata/bad-unknown-key.yaml", "testdata/bad-unknown-key.yaml:4: unknown key \"speed\" in hosts[0]"},
		{"testdata/bad-unknown-key.json", "testdata/bad-unknown-key.json:5: unknown key \"speed\" in hosts[0]"},
		{"testdata/bad-disconnected.yaml", "testdata/bad-disconnected.yaml: topology \"testdata/bad-disconnected.yaml\" is disconnected"},
		{"testdata/ib-inconsistent.txt", "testdata/ib-inconsistent.txt:14: inconsistent cable: this line says S-0002c903007b5a40 port 36 <-> S-0002c903007b5b80 port 36, but line 24 says S-0002c903007b5b80 port 36 <-> S-0002c903007b5a40 port 34"},
		{"testdata/ib-malformed.txt", "testdata/ib-malformed.txt:12: port line: remote port: expected [port]"},
	}
	for _, tc := range tests {
		_, err := LoadFile(tc.path, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant %q", tc.path, err, tc.want)
		}
	}
}

func TestLoadIBNetDiscoverFixture(t *testing.T) {
	tp, err := LoadFile("testdata/ib-two-leaves.txt", "")
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, tp)
	if tp.NumSwitches() != 2 || tp.NumHosts() != 4 || len(tp.Links) != 2 {
		t.Fatalf("got %s", tp.Describe())
	}
	wantSw := []Switch{{Name: "leaf1:SX6036/U1", Ports: 36}, {Name: "leaf2:SX6036/U1", Ports: 36}}
	if !reflect.DeepEqual(tp.Switches, wantSw) {
		t.Errorf("switches %+v", tp.Switches)
	}
	wantHosts := []Host{
		{"host1 HCA-1", PortRef{0, 0}},
		{"host2 HCA-1", PortRef{0, 1}},
		{"host3 HCA-1/1", PortRef{1, 0}},
		{"host3 HCA-1/2", PortRef{1, 2}},
	}
	if !reflect.DeepEqual(tp.Hosts, wantHosts) {
		t.Errorf("hosts %+v", tp.Hosts)
	}
	wantLinks := []Link{{PortRef{0, 34}, PortRef{1, 34}}, {PortRef{0, 35}, PortRef{1, 35}}}
	if !reflect.DeepEqual(tp.Links, wantLinks) {
		t.Errorf("links %+v", tp.Links)
	}
}

// ibSwitchOnly has no Ca blocks: hosts come from the switch side alone.
const ibSwitchOnly = `# comment
switchguid=0x10(10)
Switch	4 "S-0000000000000010"		# "MF0;a" enhanced port 0 lid 1 lmc 0
[1]	"H-0000000000000100"[1](101) 		# "n1 HCA-1" lid 5 4xQDR
[4]	"S-0000000000000020"[4]		# "MF0;b" lid 2 4xQDR

switchguid=0x20(20)
Switch	4 "S-0000000000000020"		# "MF0;b" enhanced port 0 lid 2 lmc 0
[2][ext 7]	"H-0000000000000200"[1](201) 		# "n2 HCA-1" lid 6 4xQDR
[3]	"R-0000000000000300"[1]		# "router" lid 9 4xQDR
[4]	"S-0000000000000010"[4]		# "MF0;a" lid 1 4xQDR
`

func TestLoadIBNetDiscoverVariants(t *testing.T) {
	tp, err := LoadIBNetDiscover("f.txt", strings.NewReader(ibSwitchOnly))
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{{"n1 HCA-1", PortRef{0, 0}}, {"n2 HCA-1", PortRef{1, 1}}}
	if !reflect.DeepEqual(tp.Hosts, want) || len(tp.Links) != 1 || tp.Switches[1].Name != "b" {
		t.Fatalf("hosts %+v links %+v switches %+v", tp.Hosts, tp.Links, tp.Switches)
	}

	// -g grouping output: chassis lines are skipped.
	grouped := "Chassis 1 (guid 0x8f104004128ec)\n\n# Spine Nodes\nNon-Chassis Nodes\n" + ibSwitchOnly
	if _, err := LoadIBNetDiscover("g.txt", strings.NewReader(grouped)); err != nil {
		t.Fatal(err)
	}
}

func TestLoadIBNetDiscoverErrors(t *testing.T) {
	lines := strings.Split(ibSwitchOnly, "\n")
	with := func(line int, text string) string { // replace 1-based line
		l := append([]string(nil), lines...)
		l[line-1] = text
		return strings.Join(l, "\n")
	}
	tests := []struct{ name, in, want string }{
		{"garbage", with(2, "hello world"), "f.txt:2: unrecognised line \"hello world\""},
		{"attr", with(2, "vendid=2c9"), "f.txt:2: vendid=\"2c9\": expected a hexadecimal value"},
		{"attr key", with(2, "colour=0x1"), "f.txt:2: unknown attribute \"colour\""},
		{"switchguid paren", with(2, "switchguid=0x10(zz)"), "f.txt:2: switchguid="},
		{"port count", with(3, `Switch	x "S-0000000000000010"`), "f.txt:3: Switch header: port count \"x\""},
		{"zero ports", with(3, `Switch	0 "S-0000000000000010"`), "f.txt:3: Switch header: port count \"0\""},
		{"negative ports", with(3, `Switch	-4 "S-0000000000000010"`), "f.txt:3: Switch header: port count \"-4\""},
		{"bad id", with(3, `Switch	4 "X-10"`), "f.txt:3: Switch header: bad node id \"X-10\""},
		{"wrong prefix", with(3, `Switch	4 "H-0000000000000010"`), "should start with S-"},
		{"unquoted", with(3, `Switch	4 S-10`), "f.txt:3: Switch header: node id: expected a quoted id"},
		{"port range", with(4, `[5]	"H-0000000000000100"[1](101)`), "f.txt:4: port line: port 5 out of range"},
		{"port zero", with(4, `[0]	"H-0000000000000100"[1](101)`), "f.txt:4: port line: port 0 out of range"},
		{"no bracket", with(4, `[1	"H-0000000000000100"[1](101)`), "f.txt:4: port line: port number \"1\\t"},
		{"bad port guid", with(4, `[1]	"H-0000000000000100"[1](xyz)`), "f.txt:4: port line: bad port GUID"},
		{"trailing", with(4, `[1]	"H-0000000000000100"[1](101) junk`), "f.txt:4: port line: unexpected \"junk\""},
		{"port twice", with(5, `[1]	"S-0000000000000020"[4]`), "f.txt:5: port 1 of S-0000000000000010 listed twice (first at line 4)"},
		{"outside block", "[1]	\"H-0000000000000100\"[1]\n", "f.txt:1: port line outside a Switch, Ca or Rt block"},
		{"duplicate block", ibSwitchOnly + "\n" + lines[2] + "\n", "f.txt:13: node S-0000000000000010 described twice (first block at line 3)"},
		{"one-sided", with(11, ""), "f.txt:5: S-0000000000000010 port 4 is cabled to S-0000000000000020 port 4, but the block of S-0000000000000020 (line 8) does not list its port 4"},
		{"missing switch block", with(5, `[4]	"S-0000000000000099"[4]`), "f.txt:5: switch S-0000000000000099 is referenced but has no Switch block"},
		{"remote range", with(5, `[4]	"S-0000000000000020"[9]`), "f.txt:5: S-0000000000000010 port 4: remote port 9 out of range"},
		{"self", with(5, `[4]	"S-0000000000000010"[4]`), "f.txt:5: port 4 of S-0000000000000010 is cabled to itself"},
		{"no switches", "# nothing\n", "f.txt: no Switch blocks found"},
		{"ca to ca", "Ca 1 \"H-01\"\n[1](2) \"H-02\"[1] (3)\nCa 1 \"H-02\"\n[1](3) \"H-01\"[1] (2)\nSwitch 1 \"S-09\"\n", "f.txt:2: CA H-01 port 1 is cabled directly to CA H-02"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadIBNetDiscover("f.txt", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	if _, err := LoadFile("testdata/does-not-exist.yaml", ""); err == nil || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadFile("testdata/ring3.yaml", "xml"); err == nil || !strings.Contains(err.Error(), `format "xml" unknown`) {
		t.Errorf("bad format: %v", err)
	}
	// A YAML file read as JSON fails with the file name and line.
	_, err := LoadFile("testdata/ring3.yaml", FormatJSON)
	if err == nil || !strings.HasPrefix(err.Error(), filepath.FromSlash("testdata/ring3.yaml:1:")) {
		t.Errorf("yaml as json: %v", err)
	}
}

func fuzzSeeds(f *testing.F, paths ...string) {
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzLoadYAML(f *testing.F) {
	fuzzSeeds(f, "testdata/ring3.yaml", "testdata/bad-unknown-key.yaml", "testdata/bad-disconnected.yaml")
	f.Add([]byte(goodYAML))
	f.Add([]byte("switches: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := LoadYAML("fuzz.yaml", bytes.NewReader(data))
		if err == nil {
			checkInvariants(t, tp)
		} else if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

func FuzzLoadJSON(f *testing.F) {
	fuzzSeeds(f, "testdata/ring3.json", "testdata/bad-unknown-key.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := LoadJSON("fuzz.json", bytes.NewReader(data))
		if err == nil {
			checkInvariants(t, tp)
		} else if !strings.HasPrefix(err.Error(), "fuzz.json") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

func FuzzLoadIBNetDiscover(f *testing.F) {
	fuzzSeeds(f, "testdata/ib-two-leaves.txt", "testdata/ib-inconsistent.txt", "testdata/ib-malformed.txt")
	f.Add([]byte(ibSwitchOnly))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := LoadIBNetDiscover("fuzz.txt", bytes.NewReader(data))
		if err == nil {
			checkInvariants(t, tp)
		} else if !strings.HasPrefix(err.Error(), "fuzz.txt") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
