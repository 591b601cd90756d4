// Package sweep owns sweeps that run beyond one machine: a sweep spec (an
// experiment, or a grid over --set keys, loads and seeds on a preset)
// expands into a deterministic plan of independent points; a shard (one
// task of a Kubernetes Indexed Job or a Slurm job array) runs its share of
// the points and writes them as self-describing JSON lines; merge checks
// that every point is present exactly once and rebuilds the experiment's
// result, so the table and plots are the experiment package's own.
//
// It is a layer beside experiment: it plans with experiment.Points, runs
// with experiment.RunPoint and assembles with experiment.Assemble. A
// point's result depends on its configuration only, so every sharding of
// a sweep merges to the same bytes as a local run. The file formats and
// the recipes are in docs/sweeps.md.
package sweep

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/internal/inputfile"
	"github.com/fabemu/fabemu/internal/params"
)

// SpecSchema names the sweep spec format.
const SpecSchema = "fabemu.sweep/v1"

// Spec is a sweep spec file.
type Spec struct {
	// Schema is fabemu.sweep/v1 (optional).
	Schema string `yaml:"schema" json:"schema,omitempty"`
	// Name names the sweep (default: the experiment's name).
	Name string `yaml:"name" json:"name"`
	// Experiment is an embedded experiment's name or a definition file
	// (relative to the spec's directory). Give it or Grid.
	Experiment string `yaml:"experiment" json:"experiment,omitempty"`
	// Grid is a grid of synthetic-traffic runs on one preset.
	Grid *Grid `yaml:"grid" json:"grid,omitempty"`
	// Quick runs the experiment's shrunk workload (as --quick).
	Quick bool `yaml:"quick" json:"quick,omitempty"`
	// Shards is the shard count the deploy recipes use by default; left
	// out, none (the commands choose), and an explicit 0 is refused.
	Shards int `yaml:"shards" json:"shards,omitempty" nonzero:"a positive shard count (leave the key out to let the command choose)"`
}

// Grid is the cartesian product of Axes values and Seeds, each run at
// every load of Loads (or once, at the preset's load, without Loads).
type Grid struct {
	Preset string   `yaml:"preset" json:"preset"`
	Set    []string `yaml:"set" json:"set,omitempty"`
	// Axes are --set keys and the values each takes, outermost first.
	Axes  []Axis    `yaml:"axes" json:"axes,omitempty"`
	Loads []float64 `yaml:"loads" json:"loads,omitempty"`
	Seeds []uint64  `yaml:"seeds" json:"seeds,omitempty"`
	// Columns and Plot are the experiment's (default: accepted and
	// latency; a line plot of accepted traffic against offered load).
	Columns []string             `yaml:"columns" json:"columns,omitempty"`
	Plot    *experiment.PlotSpec `yaml:"plot" json:"plot,omitempty"`
}

// Axis is one --set key and its values.
type Axis struct {
	Key    string   `yaml:"key" json:"key"`
	Values []string `yaml:"values" json:"values"`
}

// maxGridRows bounds a grid's rows (a typo in a spec should not plan a
// million runs).
const maxGridRows = 100_000

// ParseSpec decodes and checks a sweep spec; name (the file) is used in
// error messages and to find a relative experiment file.
func ParseSpec(data []byte, name string) (*Spec, error) {
	var s Spec
	if err := params.DecodeYAML(bytes.NewReader(data), name, &s); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// LoadSpec reads a sweep spec file. As a shorthand, the name of an
// embedded experiment is a spec sweeping that experiment.
func LoadSpec(path string) (*Spec, string, error) {
	data, err := inputfile.ReadFile(path, inputfile.ConfigLimit)
	if err != nil {
		if os.IsNotExist(err) && !strings.ContainsAny(path, "/.") {
			for _, n := range experiment.Embedded() {
				if n == path {
					return &Spec{Experiment: n}, "", nil
				}
			}
		}
		return nil, "", err
	}
	s, err := ParseSpec(data, path)
	return s, filepath.Dir(path), err
}

func (s *Spec) check() error {
	if s.Schema != "" && s.Schema != SpecSchema {
		return fmt.Errorf("schema %q: want %s", s.Schema, SpecSchema)
	}
	if (s.Experiment == "") == (s.Grid == nil) {
		return fmt.Errorf("give experiment or grid, exactly one")
	}
	if s.Shards < 0 {
		return fmt.Errorf("shards %d: must not be negative", s.Shards)
	}
	if s.Grid == nil {
		return nil
	}
	g := s.Grid
	if s.Name == "" {
		return fmt.Errorf("name: a grid needs a name")
	}
	if g.Preset == "" {
		return fmt.Errorf("grid.preset: missing")
	}
	rows := max(1, len(g.Seeds))
	seen := map[string]bool{}
	for i, a := range g.Axes {
		if a.Key == "" {
			return fmt.Errorf("grid.axes[%d]: key missing", i)
		}
		if strings.ContainsAny(a.Key, "=, ") {
			return fmt.Errorf("grid.axes[%d]: key %q: want a configuration key such as traffic.pattern", i, a.Key)
		}
		if seen[a.Key] {
			return fmt.Errorf("grid.axes[%d]: key %q twice", i, a.Key)
		}
		seen[a.Key] = true
		if len(a.Values) == 0 {
			return fmt.Errorf("grid.axes[%d] (%s): no values", i, a.Key)
		}
		vs := map[string]bool{}
		for _, v := range a.Values {
			if vs[v] {
				return fmt.Errorf("grid.axes[%d] (%s): value %q twice", i, a.Key, v)
			}
			vs[v] = true
		}
		rows *= len(a.Values)
		if rows > maxGridRows {
			return fmt.Errorf("grid: more than %d rows", maxGridRows)
		}
	}
	if seen["run.seed"] && len(g.Seeds) > 0 {
		return fmt.Errorf("grid: give run.seed as an axis or seeds, not both")
	}
	ss := map[uint64]bool{}
	for _, sd := range g.Seeds {
		if ss[sd] {
			return fmt.Errorf("grid.seeds: seed %d twice", sd)
		}
		ss[sd] = true
	}
	ls := map[float64]bool{}
	for _, l := range g.Loads {
		if !(l > 0 && l <= 1) {
			return fmt.Errorf("grid.loads: %g: want 0 < load <= 1", l)
		}
		if ls[l] {
			return fmt.Errorf("grid.loads: load %g twice", l)
		}
		ls[l] = true
	}
	if rows*max(1, len(g.Loads)) > maxGridRows {
		return fmt.Errorf("grid: more than %d points", maxGridRows)
	}
	return nil
}

// experimentOf returns the experiment the spec sweeps: the named one, or
// the grid written as a sim experiment (one row per combination of axis
// values and seeds, every row at every load).
func (s *Spec) experimentOf(dir string) (*experiment.Experiment, error) {
	if s.Grid == nil {
		name := s.Experiment
		if _, err := os.Stat(filepath.Join(dir, name)); dir != "" && err == nil && !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		e, err := experiment.Load(name)
		if err != nil {
			return nil, fmt.Errorf("experiment: %w", err)
		}
		return e, nil
	}
	g := s.Grid
	e := &experiment.Experiment{Name: s.Name, Kind: experiment.KindSim,
		Description: fmt.Sprintf("sweep %s: a grid on preset %s", s.Name, g.Preset),
		Source:      "sweep " + s.Name,
		Base:        experiment.Base{Preset: g.Preset, Set: g.Set}, Loads: g.Loads,
		Columns: g.Columns}
	if len(e.Columns) == 0 {
		e.Columns = []string{"accepted", "latency"}
	}
	if g.Plot != nil {
		e.Plot = *g.Plot
	} else if len(g.Loads) > 0 {
		e.Plot = experiment.PlotSpec{Kind: "line", Title: s.Name, X: "load", Y: "accepted"}
	} else {
		e.Plot = experiment.PlotSpec{Kind: "bar", Title: s.Name, Y: "accepted"}
	}
	// combinations, the first axis outermost, seeds innermost
	combos := [][]string{nil}
	for _, a := range g.Axes {
		var next [][]string
		for _, c := range combos {
			for _, v := range a.Values {
				next = append(next, append(append([]string(nil), c...), a.Key+"="+v))
			}
		}
		combos = next
	}
	for _, c := range combos {
		seeds := []string{""}
		if len(g.Seeds) > 0 {
			seeds = seeds[:0]
			for _, sd := range g.Seeds {
				seeds = append(seeds, fmt.Sprintf("run.seed=%d", sd))
			}
		}
		for _, sd := range seeds {
			set := append([]string(nil), c...)
			if sd != "" {
				set = append(set, sd)
			}
			name := strings.Join(set, ",")
			if name == "" {
				name = g.Preset
			}
			e.Rows = append(e.Rows, experiment.Row{Name: name, Set: set})
		}
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	return e, nil
}
