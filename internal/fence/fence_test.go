package fence

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestModule checks the real module against Rules.
func TestModule(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(dir)
	if errors.Is(err, ErrNoGoTool) {
		t.Skip("the go command is not on PATH, so the import graph cannot be listed")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Packages[g.Module+"/fabric"]; !ok {
		t.Fatalf("go list found no %s/fabric: the graph is not the module's", g.Module)
	}
	violations, unmatched := Check(g, Rules)
	for _, u := range unmatched {
		t.Error(u)
	}
	for _, v := range violations {
		t.Error(v)
	}
}

const mod = "example.com/m"

// fakeGraph builds a graph from "pkg: imp imp ..." lines; paths without a
// dot in their first element are standard library, paths starting with
// "m/" are the module's.
func fakeGraph(lines ...string) *Graph {
	g := &Graph{Module: mod, Packages: map[string]*Package{}}
	full := func(p string) string {
		if r, ok := strings.CutPrefix(p, "m/"); ok {
			return mod + "/" + r
		}
		return p
	}
	for _, l := range lines {
		name, imps, _ := strings.Cut(l, ":")
		p := &Package{Path: full(name), Standard: !strings.Contains(strings.Split(name, "/")[0], ".") && !strings.HasPrefix(name, "m/")}
		for _, i := range strings.Fields(imps) {
			p.Imports = append(p.Imports, full(i))
		}
		g.Packages[p.Path] = p
	}
	// Leaves named only as imports.
	for _, p := range g.Packages {
		for _, i := range p.Imports {
			if g.Packages[i] == nil {
				_, inMod := g.rel(i)
				g.Packages[i] = &Package{Path: i, Standard: !inMod && !strings.Contains(strings.Split(i, "/")[0], ".")}
			}
		}
	}
	return g
}

// clean is a graph that keeps every rule.
var clean = []string{
	"m/fabric: m/fabric/des m/internal/units fmt golang.org/x/sys/unix",
	"m/fabric/des: m/internal/units sync",
	"m/internal/units: gopkg.in/yaml.v3 fmt",
	"m/reorder: fmt",
	"m/injection: m/internal/units",
	"m/nic/traffic: m/internal/units math",
	"m/nic: m/fabric m/reorder m/injection m/nic/traffic",
	"m/cmd/fabemu: m/nic",
}

func TestCleanGraph(t *testing.T) {
	v, u := Check(fakeGraph(clean...), Rules)
	if len(v) != 0 || len(u) != 0 {
		t.Fatalf("clean graph: violations %v, unmatched %v", v, u)
	}
}

// TestViolations feeds Check graphs that each break one rule and checks
// the message names the rule and the import chain.
func TestViolations(t *testing.T) {
	replace := func(pkg, line string) []string {
		var out []string
		for _, l := range clean {
			if strings.HasPrefix(l, pkg+":") {
				continue
			}
			out = append(out, l)
		}
		return append(out, line)
	}
	tests := []struct {
		name  string
		graph []string
		want  string // substring of the one violation
	}{
		{"fabric imports nic", replace("m/fabric/des", "m/fabric/des: m/nic sync"),
			"the fabric knows nothing above it: fabric/des -> nic (nic is not in fabric/..., internal/..., std, third-party)"},
		{"fabric reaches nic through internal", append(replace("m/internal/units", "m/internal/units: m/nic/traffic"), "m/nic/traffic:"),
			"fabric/des -> internal/units -> nic/traffic (nic/traffic is not in"},
		{"fabric imports tracefmt", replace("m/fabric", "m/fabric: m/fabric/des m/tracefmt"),
			"fabric -> tracefmt (tracefmt is not in"},
		{"reorder imports the fabric", replace("m/reorder", "m/reorder: m/fabric"),
			"reorder is a pure library (standard library and internal/ only): reorder -> fabric (fabric is not in internal/..., std)"},
		{"injection imports a third-party package", replace("m/injection", "m/injection: gopkg.in/yaml.v3"),
			"injection -> gopkg.in/yaml.v3 (gopkg.in/yaml.v3 is a third-party package; allowed: internal/..., std)"},
		{"traffic at its new path imports nic", append(replace("m/nic/traffic", "m/workload/traffic: m/nic"), "m/nic: m/fabric"),
			"traffic patterns are a pure library (standard library and internal/ only): workload/traffic -> nic"},
		{"a library imports the command", replace("m/nic", "m/nic: m/fabric m/reorder m/injection m/nic/traffic m/cmd/fabemu"),
			"nothing outside cmd/ imports a command: nic -> cmd/fabemu (cmd/fabemu is in cmd/...)"},
		{"nic imports the model", append(replace("m/nic", "m/nic: m/fabric m/reorder m/injection m/nic/traffic m/model"), "m/model:"),
			"the NIC does not import the model, workloads or experiments above it: nic -> model (model is in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, u := Check(fakeGraph(tt.graph...), Rules)
			if len(u) != 0 {
				t.Fatalf("unmatched rules: %v", u)
			}
			var msgs []string
			for _, x := range v {
				msgs = append(msgs, x.String())
			}
			if len(v) == 0 || !strings.Contains(strings.Join(msgs, "\n"), tt.want) {
				t.Fatalf("violations:\n%s\nwant one containing:\n%s", strings.Join(msgs, "\n"), tt.want)
			}
		})
	}
}

// TestRenameCannotDisableFence: a rule whose packages all moved away is
// an error, not a silent pass; traffic may be at either path.
func TestRenameCannotDisableFence(t *testing.T) {
	var moved []string
	for _, l := range clean {
		moved = append(moved, strings.ReplaceAll(l, "m/reorder", "m/reordering"))
	}
	_, u := Check(fakeGraph(moved...), Rules)
	if len(u) != 1 || !strings.Contains(u[0], "no package matches reorder/...") {
		t.Fatalf("unmatched = %q, want one naming reorder/...", u)
	}

	var noTraffic []string
	for _, l := range clean {
		if !strings.HasPrefix(l, "m/nic/traffic:") {
			noTraffic = append(noTraffic, strings.ReplaceAll(l, " m/nic/traffic", ""))
		}
	}
	_, u = Check(fakeGraph(noTraffic...), Rules)
	if len(u) != 1 || !strings.Contains(u[0], "nic/traffic/... or workload/traffic/...") {
		t.Fatalf("unmatched = %q, want the traffic rule", u)
	}
	_, u = Check(fakeGraph(append(noTraffic, "m/workload/traffic: math")...), Rules)
	if len(u) != 0 {
		t.Fatalf("traffic at workload/traffic: unmatched = %q", u)
	}
}

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, rel string
		want         bool
	}{
		{"fabric/...", "fabric", true},
		{"fabric/...", "fabric/des", true},
		{"fabric/...", "fabricx", false},
		{"nic", "nic", true},
		{"nic", "nic/tap", false},
		{"...", "", true},
		{"...", "a/b", true},
	} {
		if got := Match(tt.pattern, tt.rel); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.rel, got, tt.want)
		}
	}
}
