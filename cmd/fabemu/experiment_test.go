package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExperimentCmd(t *testing.T) {
	out, err := runTrace(t, "experiment", "--list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"paper004-table1", "paper004-table2", "paper004-fig5"} {
		if !strings.Contains(out, want) {
			t.Errorf("--list lacks %s:\n%s", want, out)
		}
	}
	if _, err := runTrace(t, "experiment", "no-such"); err == nil || !strings.Contains(err.Error(), "paper004-table1") {
		t.Errorf("unknown experiment: %v", err)
	}
	if _, err := runTrace(t, "experiment"); err == nil {
		t.Error("no experiment named: want an error")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nkind: replay\nbase: {preset: paper004-torus4x4}\nrows:\n  - {name: A, colour: red}\n"), 0o644)
	if _, err := runTrace(t, "experiment", bad); err == nil || !strings.Contains(err.Error(), bad+":5") {
		t.Errorf("bad file: %v, want file:line", err)
	}
	if testing.Short() {
		return
	}
	// A small user experiment end to end: table, JSON and plot.
	dir := t.TempDir()
	def := filepath.Join(dir, "mine.yaml")
	os.WriteFile(def, []byte(`name: mine
kind: replay
base: {preset: paper004-torus4x4, set: [replay.limit=300, replay.compression=40]}
baseline: DET
rows:
  - {name: DET, delivery: deterministic}
  - {name: Adap-LI, delivery: adaptive-inorder, reorder: "static:2KiB", injection: li}
columns: [time, waste, mbs, mms, impr]
plot: {kind: bar, y: time, title: mine}
`), 0o644)
	js, plot := filepath.Join(dir, "e.json"), filepath.Join(dir, "e.svg")
	out, err = runTrace(t, "experiment", def, "--json", js, "--plot", plot, "--jobs", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Adap-LI", "Waste", "compression factor", "invariants: OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		Schema string `json:"schema"`
		Rows   []struct {
			Name    string         `json:"name"`
			Summary map[string]any `json:"summary"`
		} `json:"rows"`
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "fabemu.experiment/v1" || len(doc.Rows) != 2 || doc.Rows[1].Name != "Adap-LI" || doc.Rows[1].Summary["schema"] != "fabemu.replay/v1" {
		t.Errorf("JSON %s", b[:min(len(b), 300)])
	}
	if st, err := os.Stat(plot); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
}
