package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/model"
)

// TestConfigDumpEveryCommand: for every preset, and for run and
// experiment rows, the dumped configuration read back as --config (over
// the command's default preset, not the one it came from) dumps to the
// same text.
func TestConfigDumpEveryCommand(t *testing.T) {
	type tc struct {
		name   string
		dump   []string
		reload []string // the command that reads the dump as --config
	}
	var cases []tc
	for _, p := range model.Presets() {
		cases = append(cases,
			tc{"sim/" + p.Name, []string{"config", "dump", "--preset", p.Name}, []string{"config", "dump"}},
			tc{"replay/" + p.Name, []string{"config", "dump", "replay", "--preset", p.Name}, []string{"config", "dump", "replay"}})
	}
	cases = append(cases,
		tc{"sim/forced routing", []string{"config", "dump", "--preset", "paper004-irregular16", "--delivery", "adaptive-inorder", "--set", "topology.seed=3"}, []string{"config", "dump"}},
		tc{"sim/emptied list", []string{"config", "dump", "--set", "topology.kind=irregular", "--set", "topology.k=[]", "--set", "topology.switches=8", "--set", "topology.ports=8"}, []string{"config", "dump"}},
		tc{"replay/disk hosts", []string{"config", "dump", "replay", "--set", "replay.disk_hosts=[1,5,9]", "--delivery", "adaptive-ooo", "--limit", "10"}, []string{"config", "dump", "replay"}},
		tc{"run/demo", []string{"config", "dump", "run", "--demo", "2", "--preset", "tap-square-10g", "--delivery", "adaptive-inorder"}, []string{"config", "dump"}},
		tc{"experiment/replay row", []string{"config", "dump", "experiment", "paper004-table1", "--row", "Adap-LI/dynamic-256KB"}, []string{"config", "dump", "replay"}},
		tc{"experiment/sim row", []string{"config", "dump", "experiment", "paper004-fig5", "--row", "irr64/bitrev/Adap", "--quick"}, []string{"config", "dump"}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			first, err := run(t, c.dump...)
			if err != nil {
				t.Fatal(err)
			}
			path := writeTemp(t, "dump.yaml", first)
			second, err := run(t, append(c.reload, "--config", path)...)
			if err != nil {
				t.Fatalf("reading the dump: %v\n%s", err, first)
			}
			if first != second {
				t.Fatalf("dump does not round-trip:\n%s\n---\n%s", first, second)
			}
		})
	}
}

// TestConfigDumpShows: the dump carries what the command resolved: the
// irregular network's empty k, a forced routing mode, a row's memory.
func TestConfigDumpShows(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"config", "dump", "--preset", "paper004-irregular16"}, []string{"  k: []\n", "switches: 16"}},
		{[]string{"config", "dump", "--preset", "paper004-irregular16", "--delivery", "adaptive-ooo"}, []string{"routing:\n  mode: adaptive\n", "mode: adaptive-ooo"}},
		{[]string{"config", "dump", "replay", "--preset", "paper000-min64", "--compression", "40"}, []string{"compression: 40", "kind: min"}},
		{[]string{"config", "dump", "run", "--demo", "2", "--set", "nic.mtu=1024"}, []string{"mtu: 1KiB"}},
		{[]string{"config", "dump", "experiment", "paper004-table2", "--row", "Adap-LW/static-2KB"}, []string{"reorder: static:2KiB", "policy: lw", "mode: adaptive-inorder"}},
	} {
		out, err := run(t, c.args...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: dump lacks %q:\n%s", c.args, w, out)
			}
		}
	}
	if _, err := run(t, "config", "dump", "experiment", "paper004-table2", "--row", "nope"); err == nil || !strings.Contains(err.Error(), "Adap-OOO") {
		t.Errorf("unknown row: %v, want the list of rows", err)
	}
}

// TestForcedRoutingMessage: a delivery mode that changes the routing mode
// says so in the table, never in the JSON summary; an explicit routing
// mode that contradicts it is refused.
func TestForcedRoutingMessage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		line string
	}{
		{[]string{"sim", "--preset", "paper004-irregular16", "--delivery", "adaptive-ooo", "--duration", "5us", "--warmup", "1us"},
			"adaptive, escape up*/down* (root switch 0), 2 lanes (forced by --delivery adaptive-ooo)"},
		{[]string{"sim", "--preset", "paper001-8ary3cube-vct", "--set", "nic.delivery.mode=deterministic", "--duration", "2us", "--warmup", "1us"},
			"(forced by --set nic.delivery.mode=deterministic)"},
		{[]string{"replay", "--limit", "100", "--compression", "20", "--delivery", "adaptive-inorder"},
			"2 lanes (forced by --delivery adaptive-inorder)"},
		{[]string{"experiment", filepath.Join("testdata", "golden", "experiment-row.yaml")},
			"routing: adaptive (forced by delivery adaptive-inorder): rows Adap-LI/static-2KB"},
	} {
		js := filepath.Join(dir, "out.json")
		out, err := run(t, append(c.args, "--json", js)...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if !strings.Contains(out, c.line) {
			t.Errorf("%v: table lacks %q:\n%s", c.args, c.line, out)
		}
		raw, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "forced by") {
			t.Errorf("%v: the note reached the JSON summary", c.args)
		}
	}
	for _, args := range [][]string{
		{"sim", "--preset", "paper004-irregular16", "--routing", "deterministic", "--delivery", "adaptive-inorder"},
		{"replay", "--routing", "adaptive", "--delivery", "deterministic"},
		{"config", "dump", "--delivery", "adaptive-ooo", "--set", "routing.mode=deterministic"},
	} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "contradicts") {
			t.Errorf("%v: error %v, want a refusal", args, err)
		}
	}
	// A run without a contradiction prints no note.
	out, err := run(t, "sim", "--routing", "adaptive", "--duration", "2us", "--warmup", "1us")
	if err != nil || strings.Contains(out, "forced by") {
		t.Errorf("no delivery mode: err %v, output mentions forcing:\n%s", err, out)
	}
}
