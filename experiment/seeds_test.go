package experiment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/topo"
)

const seededYAML = `name: seeded
description: two rows on three random irregular networks
source: test
kind: replay
base: {preset: paper004-irregular16, set: [replay.compression=4000]}
trace:
  generate: {like: cello99, records: 400, seed: 1, initiators: 16, disk_skew: 0}
baseline: DET
topology_seeds: [1, 2, 3]
rows:
  - {name: DET, delivery: deterministic}
  - {name: Adap-OOO, delivery: adaptive-ooo}
columns: [time, waste, mbs, impr]
plot: {kind: bar, y: time}
`

// TestTopologySeeds: with topology_seeds every row runs once per seed on
// a different network, and the table, the JSON and the plot carry the
// mean and the range over the seeds, computed from the per-seed runs.
func TestTopologySeeds(t *testing.T) {
	e, err := Parse([]byte(seededYAML), "seeded.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.countRuns(false); got != 6 {
		t.Errorf("countRuns = %d, want 2 rows x 3 seeds", got)
	}
	res, err := Run(e, Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ok, bad := res.InvariantsOK(); !ok {
		t.Fatalf("invariants: %v", bad)
	}
	describe := map[string]bool{}
	for _, row := range res.Rows {
		if len(row.Seeds) != 3 {
			t.Fatalf("row %s: %d seed runs, want 3", row.Name, len(row.Seeds))
		}
		if row.Summary != nil {
			t.Errorf("row %s: summary set beside the seeds' runs", row.Name)
		}
		var times []float64
		for i, sr := range row.Seeds {
			if sr.Seed != uint64(i+1) || sr.Summary.Config.Topology.Seed != sr.Seed || sr.Summary.Config.Run.Seed != sr.Seed {
				t.Errorf("row %s run %d: seed %d, topology seed %d, run seed %d", row.Name, i, sr.Seed, sr.Summary.Config.Topology.Seed, sr.Summary.Config.Run.Seed)
			}
			times = append(times, sr.Summary.TraceExecutionTimeNs)
			tp, err := topo.Build(sr.Summary.Config.Topology)
			if err != nil {
				t.Fatal(err)
			}
			describe[fmt.Sprint(tp.Links)] = true
		}
		sp := row.Spread["time"]
		lo, hi, sum := times[0], times[0], 0.0
		for _, v := range times {
			lo, hi, sum = min(lo, v), max(hi, v), sum+v
		}
		if sp.N != 3 || sp.Min != lo || sp.Max != hi || math.Abs(sp.Mean-sum/3) > 1e-6 || sp.Unit != "ns" {
			t.Errorf("row %s: time spread %+v, want n 3, min %g, max %g, mean %g", row.Name, sp, lo, hi, sum/3)
		}
		if lo == hi {
			t.Errorf("row %s: the three networks give the same time %g: seeds not applied?", row.Name, lo)
		}
	}
	if len(describe) < 2 {
		t.Errorf("the seeds built the same network: %v", describe)
	}
	// impr per seed against the baseline on the same seed.
	det, ooo := res.Rows[0], res.Rows[1]
	want := 0.0
	for j := range ooo.Seeds {
		want += 100 * (1 - ooo.Seeds[j].Summary.TraceExecutionTimeNs/det.Seeds[j].Summary.TraceExecutionTimeNs)
	}
	if got := ooo.Spread["impr"].Mean; math.Abs(got-want/3) > 1e-9 {
		t.Errorf("impr mean %g, want %g", got, want/3)
	}
	if _, ok := det.Spread["impr"]; ok {
		t.Errorf("the baseline row has an improvement over itself")
	}

	var tab bytes.Buffer
	if err := res.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"topology seeds", "1, 2, 3", spreadFormats["time"](ooo.Spread["time"].Mean) + " [" + spreadFormats["time"](ooo.Spread["time"].Min) + ".."} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			Seeds  []SeedRun         `json:"seeds"`
			Spread map[string]Spread `json:"spread"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 2 || len(doc.Rows[1].Seeds) != 3 || doc.Rows[1].Spread["waste"].N != 3 {
		t.Errorf("JSON rows lack seeds or spreads: %s", js[:min(len(js), 300)])
	}
	plot := filepath.Join(t.TempDir(), "p.svg")
	if _, err := res.WritePlot(plot); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(plot); err != nil || !strings.Contains(string(b), "over 3 topologies") {
		t.Errorf("plot title does not say it averages 3 topologies (%v)", err)
	}
}

func TestTopologySeedsValidation(t *testing.T) {
	for _, c := range []struct{ edit, want string }{
		{"topology_seeds: []", "want 1 to 100 seeds"},
		{"topology_seeds: [1, 1]", "seed 1 twice"},
		{"quick: {topology_seeds: [2, 2]}", "quick.topology_seeds: seed 2 twice"},
	} {
		y := strings.Replace(seededYAML, "topology_seeds: [1, 2, 3]", c.edit, 1)
		if _, err := Parse([]byte(y), "x.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.edit, err, c.want)
		}
	}
	y := strings.Replace(goodYAML, "kind: replay", "kind: sim", 1) + "topology_seeds: [1]\n"
	y = strings.Replace(y, "paper004-torus4x4", "paper004-irregular16", 1)
	if _, err := Parse([]byte(y), "x.yaml"); err == nil || !strings.Contains(err.Error(), "replay experiments only") {
		t.Errorf("sim with topology_seeds: %v", err)
	}
}
