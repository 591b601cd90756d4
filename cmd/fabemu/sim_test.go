package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/synth"
)

// run runs "fabemu ARGS..." and returns stdout.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runTrace(t, args...)
}

func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSimBadInput: bad configuration reaches the user as one clear error
// naming the file and line, or the flag, and what was wrong; nothing runs.
func TestSimBadInput(t *testing.T) {
	short := []string{"--duration", "5us", "--warmup", "1us"}
	unknownKey := writeTemp(t, "bad.yaml", "fabric:\n  routing_delay: 100ns\n  bufer: 8KiB\n")
	wrongKind := writeTemp(t, "kind.yaml", "nic:\n  mtu: big\n")
	negative := writeTemp(t, "neg.yaml", "topology:\n  kind: irregular\n  switches: -4\n")
	topoDir := filepath.Join("..", "..", "fabric", "topo", "testdata")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown key in a config file", []string{"--config", unknownKey}, []string{unknownKey + ":3", `unknown key "bufer"`, "fabric"}},
		{"wrong kind in a config file", []string{"--config", wrongKind}, []string{wrongKind + ":2", "nic.mtu", "big"}},
		{"missing config file", []string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, []string{"none.yaml"}},
		{"negative switch count", []string{"--config", negative}, []string{"switches", "-4"}},
		{"zero input buffer", []string{"--set", "fabric.input_buffer=0"}, []string{"fabric.input_buffer", "positive"}},
		{"negative link rate", []string{"--set", "fabric.link_rate=-1Gbps"}, []string{"fabric.link_rate"}},
		{"zero duration", []string{"--set", "run.duration=0s"}, []string{"run.duration", "positive"}},
		{"negative load", []string{"--load", "-0.5"}, []string{"traffic.load", "negative"}},
		{"bad MTU", []string{"--set", "nic.mtu=300"}, []string{"nic.mtu", "300"}},
		{"unknown --set key", []string{"--set", "fabric.lnk_rate=10Gbps"}, []string{`unknown key "lnk_rate"`, "did you mean"}},
		{"too few ports on a torus", []string{"--set", "topology.ports=3"}, []string{"ports", "3 is fewer than", "neighbour ports"}},
		{"zero switches per dimension", []string{"--set", "topology.k=[4,0]"}, []string{"k[1]", "at least 1"}},
		{"too few ports on an irregular network", []string{"--preset", "paper004-irregular16", "--set", "topology.ports=5"}, []string{"ports", "5 is fewer than"}},
		{"bad preset", []string{"--preset", "torus9x9"}, []string{`unknown preset "torus9x9"`, "torus8x8-dor"}},
		{"bad routing flag", []string{"--routing", "fast"}, []string{"--routing", "fast"}},
		{"bad pattern", []string{"--pattern", "everywhere"}, []string{"traffic.pattern"}},
		{"bad duration", []string{"--duration", "ten"}, []string{"--duration"}},
		{"cyclic escape", []string{"--set", "routing.dateline=false"}, []string{"not deadlock-free", "cycle: s"}},
		{"disconnected topology file", []string{"--set", "topology.kind=file", "--set", "topology.path=" + filepath.Join(topoDir, "bad-disconnected.yaml")},
			[]string{"bad-disconnected.yaml", "disconnected"}},
		{"malformed ibnetdiscover", []string{"--set", "topology.kind=file", "--set", "topology.path=" + filepath.Join(topoDir, "ib-malformed.txt")},
			[]string{"ib-malformed.txt:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"sim"}, short...), tc.args...)
			_, err := run(t, args...)
			if err == nil {
				t.Fatalf("fabemu %s: no error", strings.Join(args, " "))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestSimJSONDeterministic: two CLI runs with the same flags write the
// same JSON summary apart from "run" (wall time, events per second).
func TestSimJSONDeterministic(t *testing.T) {
	dir := t.TempDir()
	var docs []map[string]any
	for i := 0; i < 2; i++ {
		path := filepath.Join(dir, "s.json")
		if _, err := run(t, "sim", "--preset", "paper004-irregular16", "--routing", "adaptive", "--load", "0.3",
			"--duration", "30us", "--warmup", "5us", "--json", path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if doc["schema"] != synth.SummarySchema || doc["run"] == nil {
			t.Fatalf("summary schema %v, run %v", doc["schema"], doc["run"])
		}
		delete(doc, "run")
		docs = append(docs, doc)
	}
	a, _ := json.Marshal(docs[0])
	b, _ := json.Marshal(docs[1])
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same configuration wrote different summaries")
	}
}

// TestConfigExplainListsEverything: the plain listing has a row per
// parameter of model.SimConfig.
func TestConfigExplainListsEverything(t *testing.T) {
	out, err := run(t, "config", "explain", "--preset", "paper004-irregular16")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := model.LookupPreset("paper004-irregular16")
	ps := params.Explain(&cfg)
	if len(ps) < 40 {
		t.Fatalf("only %d parameters explained", len(ps))
	}
	for _, p := range ps {
		if !strings.Contains(out, "\n"+p.Path+" ") {
			t.Errorf("explain does not list %s", p.Path)
		}
	}
	if !strings.Contains(out, "topology.switches") || !strings.Contains(out, "irregular") {
		t.Errorf("explain does not show the preset's values:\n%s", out)
	}
	if _, err := run(t, "config", "explain", "--preset", "nope"); err == nil || !strings.Contains(err.Error(), "unknown preset") {
		t.Errorf("bad preset: %v", err)
	}
}

// TestParametersDocUpToDate: docs/parameters.md is exactly what
// `fabemu config explain --markdown` prints, so the docs cannot drift from
// the code. Regenerate with
//
//	go run ./cmd/fabemu config explain --markdown > docs/parameters.md
func TestParametersDocUpToDate(t *testing.T) {
	out, err := run(t, "config", "explain", "--markdown")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "parameters.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != out {
		t.Fatal("docs/parameters.md is out of date: run `go run ./cmd/fabemu config explain --markdown > docs/parameters.md`")
	}
}

// TestConfigDumpRoundTrip: the dumped configuration is a config file that
// resolves to itself over any preset, and it carries the overrides.
func TestConfigDumpRoundTrip(t *testing.T) {
	first, err := run(t, "config", "dump", "--preset", "paper004-irregular64", "--routing", "adaptive", "--set", "fabric.routing_delay=150ns")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mode: adaptive", "routing_delay: 150ns", "switches: 64"} {
		if !strings.Contains(first, want) {
			t.Errorf("dump lacks %q:\n%s", want, first)
		}
	}
	path := writeTemp(t, "dump.yaml", first)
	// Over the default preset (a torus): every key is in the dump,
	// topology.k of the irregular network as an empty list included.
	second, err := run(t, "config", "dump", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Fatalf("dump does not round-trip:\n%s\n---\n%s", first, second)
	}
}

// FuzzSimConfigYAML decodes arbitrary YAML over a preset as `fabemu sim
// --config` does and validates the result: it must never panic, and an
// error must name the file.
func FuzzSimConfigYAML(f *testing.F) {
	for _, s := range []string{
		"", "fabric:\n  link_rate: 10Gbps\n", "topology:\n  kind: irregular\n  switches: 16\n",
		"routing: {mode: adaptive, adaptive_vls: 2}\n", "topology:\n  k: [4, 4, 4]\n", "nic:\n  mtu: 512\n",
		"fabric:\n  bufer: 1\n", "run:\n  duration: -5us\n", "traffic: [1, 2]\n", "a: &a [*a, *a]\n", "topology:\n  k: {x: 1}\n",
		"fabric:\n  input_buffer: 99999999999999999999999KiB\n", "---\n---\n", "topology:\n  kind: file\n  path: x.txt\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := model.LookupPreset("paper004-irregular16")
		if err != nil {
			t.Fatal(err)
		}
		if err := params.DecodeYAML(strings.NewReader(text), "fuzz.yaml", &cfg); err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		_ = cfg.Validate()
		_ = cfg.Topology.Validate()
		if _, err := params.Dump(&cfg); err != nil {
			t.Fatalf("a decoded config does not dump: %v", err)
		}
	})
}
