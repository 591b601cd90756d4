// Package experiment owns experiment definitions and running them, the
// layer above the workloads (workload/synth, workload/replay): a
// declared set of configurations (rows) over a base preset, run on a worker
// pool and reported as one table, one JSON document and a plot. Definitions
// are YAML files; the ones that ship with fabemu (paper 004's Tables 1 and
// 2 and Figure 5) are embedded from defs/*.yaml with go:embed, and users
// can write their own. The format and the shipped experiments are
// documented in docs/validation.md.
//
// A replay experiment may calibrate its compression factor: it replays the
// trace with the calibration row (DET) at a declared list of factors,
// takes the largest accepted traffic as the saturation throughput, and
// picks the smallest factor at which the run is past saturation (the
// execution time exceeds the compressed trace span by MinBacklog) while
// accepted traffic stays at least MinUtilisation of saturation. The paper's
// traces drove the network near saturation (paper 004 §4.3: "we have
// applied several time compression factors to the traces in order to
// generate higher injection rates"); calibration reproduces that regime on
// our trace. Everything is deterministic: the same file gives the same
// JSON (apart from wall times).
package experiment

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/fabemu/fabemu/internal/inputfile"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/replay"
)

//go:embed defs/*.yaml
var defs embed.FS

// Kinds of experiment.
const (
	KindReplay = "replay" // trace replay rows (replay.RunReplay)
	KindSim    = "sim"    // synthetic traffic rows (synth.RunSim), optionally a load sweep
)

// Experiment is one experiment definition.
type Experiment struct {
	// Name identifies the experiment (fabemu experiment NAME).
	Name string `yaml:"name" json:"name"`
	// Description and Source (paper and section) say what it reproduces.
	Description string `yaml:"description" json:"description"`
	Source      string `yaml:"source" json:"source"`
	// Kind is replay or sim.
	Kind string `yaml:"kind" json:"kind"`
	// Base is the configuration every row starts from.
	Base Base `yaml:"base" json:"base"`
	// Trace is the trace a replay experiment replays.
	Trace TraceSpec `yaml:"trace" json:"trace"`
	// Calibration, if set, chooses the compression factor of a replay.
	Calibration *Calibration `yaml:"calibration" json:"calibration"`
	// Baseline names the row the "impr" column compares with.
	Baseline string `yaml:"baseline" json:"baseline"`
	// TopologySeeds, if set (replay experiments), runs every row once per
	// seed, with topology.seed and run.seed set to it: a different random
	// irregular network (paper 004 §4.1 averages 10 per size) and a
	// different disk placement. The table, the JSON and the plot give the
	// mean and the range (min..max) over the seeds; a calibration runs on
	// the first seed.
	TopologySeeds []uint64 `yaml:"topology_seeds" json:"topology_seeds"`
	// Loads makes a sim experiment a sweep: every row runs at each
	// offered load (a row may give its own list).
	Loads []float64 `yaml:"loads" json:"loads"`
	// Rows are the configurations, in table order.
	Rows []Row `yaml:"rows" json:"rows"`
	// Columns are the table's columns (see ColumnNames).
	Columns []string `yaml:"columns" json:"columns"`
	// Plot describes the plot.
	Plot PlotSpec `yaml:"plot" json:"plot"`
	// Quick shrinks the workload for tests and smoke runs.
	Quick Quick `yaml:"quick" json:"quick"`

	file string // where it was read from, for messages
}

// Base is a preset and --set style overrides.
type Base struct {
	Preset string   `yaml:"preset" json:"preset"`
	Set    []string `yaml:"set" json:"set"`
}

// TraceSpec is the trace of a replay experiment: a file, a trace generated
// on the fly with blockgen (never written anywhere but a temporary file
// removed after the run), or, when both are empty, the embedded sample.
type TraceSpec struct {
	File     string        `yaml:"file" json:"file"`
	Generate *GenerateSpec `yaml:"generate" json:"generate"`
}

// GenerateSpec is a blockgen trace: a profile and the knobs the experiment
// changes. Unset knobs keep the profile's values.
type GenerateSpec struct {
	Like       string   `yaml:"like" json:"like"`
	Records    int64    `yaml:"records" json:"records"`
	Seed       uint64   `yaml:"seed" json:"seed"`
	Initiators int      `yaml:"initiators" json:"initiators"`
	DiskSkew   *float64 `yaml:"disk_skew" json:"disk_skew"`
	Rate       *float64 `yaml:"rate" json:"rate"`
}

// Calibration chooses a replay's compression factor (see the package
// comment).
type Calibration struct {
	// Row is the row whose configuration is calibrated (DET).
	Row string `yaml:"row" json:"row"`
	// Factors are the compression factors tried, ascending.
	Factors []float64 `yaml:"factors" json:"factors"`
	// MinUtilisation is the least accepted traffic, as a fraction of the
	// saturation throughput, the chosen factor must give (0.8).
	MinUtilisation float64 `yaml:"min_utilisation" json:"min_utilisation"`
	// MinBacklog is the least ratio of execution time to compressed trace
	// span at the chosen factor: the run is past saturation (1 = any).
	MinBacklog float64 `yaml:"min_backlog" json:"min_backlog"`
}

// maxTopologySeeds bounds topology_seeds: each seed is a run of every row.
const maxTopologySeeds = 100

// seeds returns the topology seeds the rows run with, or nil for one run
// with the configuration's own seeds.
func (e *Experiment) seeds(quick bool) []uint64 {
	if quick && e.Quick.TopologySeeds != nil {
		return e.Quick.TopologySeeds
	}
	return e.TopologySeeds
}

// Row is one configuration of the experiment.
type Row struct {
	Name string `yaml:"name" json:"name"`
	// Preset, if set, replaces the base preset for this row.
	Preset string `yaml:"preset" json:"preset"`
	// Delivery, Reorder and Injection set nic.delivery (as the
	// --delivery, --reorder and --injection flags).
	Delivery  string `yaml:"delivery" json:"delivery"`
	Reorder   string `yaml:"reorder" json:"reorder"`
	Injection string `yaml:"injection" json:"injection"`
	// Set are --set style overrides applied after the base's.
	Set []string `yaml:"set" json:"set"`
	// Group puts the row in one plot of several (sweeps); Series names
	// its curve there (default: the row name).
	Group  string `yaml:"group" json:"group"`
	Series string `yaml:"series" json:"series"`
	// Loads overrides the experiment's load list for this row.
	Loads []float64 `yaml:"loads" json:"loads"`
}

// PlotSpec describes the plot: a bar plot of one metric per row (tables),
// line plots of Y against X with one series per row and one plot per
// group (sweeps), or a time series of Y per row over the run (sim
// experiments without a sweep; Y is a series: throughput).
type PlotSpec struct {
	Kind  string `yaml:"kind" json:"kind"` // bar, line or timeseries
	Title string `yaml:"title" json:"title"`
	X     string `yaml:"x" json:"x"` // metric name (line plots)
	Y     string `yaml:"y" json:"y"` // metric name
}

// Quick is how --quick shrinks the workload.
type Quick struct {
	Limit    int64     `yaml:"limit" json:"limit"`       // replay at most this many records
	Duration string    `yaml:"duration" json:"duration"` // sim: measured time
	Warmup   string    `yaml:"warmup" json:"warmup"`     // sim: warm-up
	Loads    []float64 `yaml:"loads" json:"loads"`       // sim sweeps: these loads instead
	Factors  []float64 `yaml:"factors" json:"factors"`   // calibration: these factors instead
	// TopologySeeds replaces the experiment's seed list (fewer seeds for
	// a smoke run).
	TopologySeeds []uint64 `yaml:"topology_seeds" json:"topology_seeds"`
	// Set are --set style overrides applied last (sim), e.g. a corner
	// case's time scale and a finer bin for a short run.
	Set []string `yaml:"set" json:"set"`
}

// ColumnNames lists the table columns an experiment may ask for.
func ColumnNames() []string {
	names := make([]string, 0, len(columns))
	for n := range columns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Parse decodes and validates an experiment definition; name is used in
// error messages (file:line).
func Parse(data []byte, name string) (*Experiment, error) {
	var e Experiment
	if err := params.DecodeYAML(bytes.NewReader(data), name, &e); err != nil {
		return nil, err
	}
	e.file = name
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &e, nil
}

// Load reads an experiment: the embedded one of that name, else the file
// at that path.
func Load(nameOrFile string) (*Experiment, error) {
	if data, err := defs.ReadFile("defs/" + nameOrFile + ".yaml"); err == nil {
		return Parse(data, nameOrFile+".yaml")
	}
	data, err := inputfile.ReadFile(nameOrFile, inputfile.ConfigLimit)
	if err != nil {
		if os.IsNotExist(err) && !strings.ContainsAny(nameOrFile, "/.") {
			return nil, fmt.Errorf("no experiment %q: not an embedded one (%s) nor a file", nameOrFile, strings.Join(Embedded(), ", "))
		}
		return nil, err
	}
	return Parse(data, nameOrFile)
}

// Embedded lists the names of the embedded experiments, sorted.
func Embedded() []string {
	ents, _ := fs.Glob(defs, "defs/*.yaml")
	var names []string
	for _, p := range ents {
		names = append(names, strings.TrimSuffix(path.Base(p), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Validate checks the definition on its own; configuration errors of a
// row (a bad key, a bad value) are found when the rows are resolved, which
// Validate also does.
func (e *Experiment) Validate() error {
	if e.Name == "" {
		return fmt.Errorf("name: missing")
	}
	switch e.Kind {
	case KindReplay, KindSim:
	default:
		return fmt.Errorf("kind %q: want replay or sim", e.Kind)
	}
	if e.Base.Preset == "" {
		return fmt.Errorf("base.preset: missing")
	}
	if len(e.Rows) == 0 {
		return fmt.Errorf("rows: at least one row is needed")
	}
	seen := map[string]bool{}
	for i, r := range e.Rows {
		if r.Name == "" {
			return fmt.Errorf("rows[%d]: name missing", i)
		}
		if seen[r.Name] {
			return fmt.Errorf("rows[%d]: row %q twice", i, r.Name)
		}
		seen[r.Name] = true
		if r.Loads != nil && len(r.Loads) == 0 {
			return fmt.Errorf("row %q: loads: an empty list: give at least one load, or leave the key out for the experiment's", r.Name)
		}
		if e.Kind == KindReplay && len(r.Loads) > 0 {
			return fmt.Errorf("row %q: loads apply to sim experiments only", r.Name)
		}
		for _, l := range r.Loads {
			if !(l > 0 && l <= 1) {
				return fmt.Errorf("row %q: load %g: want 0 < load <= 1", r.Name, l)
			}
		}
	}
	for _, f := range []struct {
		key   string
		seeds []uint64
	}{{"topology_seeds", e.TopologySeeds}, {"quick.topology_seeds", e.Quick.TopologySeeds}} {
		if f.seeds == nil {
			continue
		}
		if e.Kind != KindReplay {
			return fmt.Errorf("%s: supported by replay experiments only", f.key)
		}
		if len(f.seeds) == 0 || len(f.seeds) > maxTopologySeeds {
			return fmt.Errorf("%s: want 1 to %d seeds, got %d", f.key, maxTopologySeeds, len(f.seeds))
		}
		dup := map[uint64]bool{}
		for _, sd := range f.seeds {
			if dup[sd] {
				return fmt.Errorf("%s: seed %d twice", f.key, sd)
			}
			dup[sd] = true
		}
	}
	// An empty list is not "no sweep": the file asked for loads and gave
	// none, which would otherwise run one point per row at the base load.
	if e.Loads != nil && len(e.Loads) == 0 {
		return fmt.Errorf("loads: an empty list: give at least one load, or leave the key out for one run per row at the base load")
	}
	if e.Quick.Loads != nil && len(e.Quick.Loads) == 0 {
		return fmt.Errorf("quick.loads: an empty list: give at least one load, or leave the key out")
	}
	for _, l := range append(slices.Clone(e.Loads), e.Quick.Loads...) {
		if !(l > 0 && l <= 1) {
			return fmt.Errorf("loads: %g: want 0 < load <= 1", l)
		}
	}
	if e.Kind == KindReplay && len(e.Loads) > 0 {
		return fmt.Errorf("loads: apply to sim experiments only")
	}
	if e.Baseline != "" && !seen[e.Baseline] {
		return fmt.Errorf("baseline %q: no such row", e.Baseline)
	}
	for _, c := range e.Columns {
		if _, ok := columns[c]; !ok {
			return fmt.Errorf("columns: unknown column %q; columns: %s", c, strings.Join(ColumnNames(), ", "))
		}
		if c == "impr" && e.Baseline == "" {
			return fmt.Errorf("columns: impr needs a baseline row")
		}
	}
	if err := e.Plot.validate(e.sweep()); err != nil {
		return err
	}
	if e.Plot.Kind == "timeseries" && e.Kind != KindSim {
		return fmt.Errorf("plot.kind timeseries: only sim experiments have time series")
	}
	if len(e.Quick.Set) > 0 && e.Kind != KindSim {
		return fmt.Errorf("quick.set: applies to sim experiments only")
	}
	if g := e.Trace.Generate; g != nil {
		if e.Trace.File != "" {
			return fmt.Errorf("trace: give file or generate, not both")
		}
		if g.Records <= 0 || g.Records > 10_000_000 {
			return fmt.Errorf("trace.generate.records %d: want 1 to 10,000,000", g.Records)
		}
	}
	if (e.Trace.File != "" || e.Trace.Generate != nil) && e.Kind != KindReplay {
		return fmt.Errorf("trace: only replay experiments replay a trace")
	}
	if c := e.Calibration; c != nil {
		if e.Kind != KindReplay {
			return fmt.Errorf("calibration: only replay experiments have a compression factor")
		}
		if !seen[c.Row] {
			return fmt.Errorf("calibration.row %q: no such row", c.Row)
		}
		for _, fs := range [][]float64{c.Factors, e.Quick.Factors} {
			for i, f := range fs {
				if !(f > 0) || (i > 0 && f <= fs[i-1]) {
					return fmt.Errorf("calibration.factors: want positive factors in ascending order, got %v", fs)
				}
			}
		}
		if len(c.Factors) < 2 || len(c.Factors) > 16 {
			return fmt.Errorf("calibration.factors: want 2 to 16 factors, got %d", len(c.Factors))
		}
		if !(c.MinUtilisation > 0 && c.MinUtilisation <= 1) {
			return fmt.Errorf("calibration.min_utilisation %g: want 0 < u <= 1", c.MinUtilisation)
		}
		if c.MinBacklog < 0 {
			return fmt.Errorf("calibration.min_backlog %g: must not be negative", c.MinBacklog)
		}
	}
	if e.Quick.Limit < 0 {
		return fmt.Errorf("quick.limit %d: must not be negative", e.Quick.Limit)
	}
	// Resolve every row once, so a bad preset, key or value is reported
	// before anything runs.
	for _, r := range e.Rows {
		var err error
		if e.Kind == KindReplay {
			_, err = e.replayConfig(r, false)
		} else {
			_, err = e.simConfig(r, false)
			if err == nil && len(e.Quick.Set) > 0 {
				_, err = e.simConfig(r, true)
			}
		}
		if err != nil {
			return fmt.Errorf("row %q: %w", r.Name, err)
		}
	}
	return nil
}

func (e *Experiment) sweep() bool { return e.Kind == KindSim && len(e.Loads) > 0 }

func (p PlotSpec) validate(sweep bool) error {
	switch p.Kind {
	case "":
		return nil
	case "bar":
		if _, ok := metrics[p.Y]; !ok {
			return fmt.Errorf("plot.y: unknown metric %q; metrics: %s", p.Y, strings.Join(metricNames(), ", "))
		}
	case "timeseries":
		if sweep {
			return fmt.Errorf("plot.kind timeseries: not for a load sweep (one run per row)")
		}
		if _, ok := seriesMetrics[p.Y]; !ok {
			return fmt.Errorf("plot.y: unknown time series %q; series: %s", p.Y, strings.Join(seriesMetricNames(), ", "))
		}
	case "line":
		if !sweep {
			return fmt.Errorf("plot.kind line: needs a load sweep (loads)")
		}
		for _, m := range []string{p.X, p.Y} {
			if _, ok := metrics[m]; !ok {
				return fmt.Errorf("plot: unknown metric %q; metrics: %s", m, strings.Join(metricNames(), ", "))
			}
		}
	default:
		return fmt.Errorf("plot.kind %q: want bar, line or timeseries", p.Kind)
	}
	return nil
}

func (e *Experiment) preset(r Row) string {
	if r.Preset != "" {
		return r.Preset
	}
	return e.Base.Preset
}

// layers are the configuration layers of a row for the resolver: the
// row's preset (else the base's), the trace file, the base's overrides,
// the row's delivery shorthands, then the row's own overrides.
func (e *Experiment) layers(r Row) model.Layers {
	l := model.Layers{Preset: e.preset(r),
		Flags:      model.Sets("base.set", e.Base.Set),
		Shorthands: model.Shorthands("", r.Delivery, r.Reorder, r.Injection),
		Sets:       model.Sets("set", r.Set)}
	if e.Kind == KindReplay && e.Trace.File != "" {
		l.Flags = append([]model.Assignment{{Source: "trace.file", Flag: true, Key: "replay.trace", Value: e.Trace.File}}, l.Flags...)
	}
	return l
}

// replayConfig resolves a replay row.
func (e *Experiment) replayConfig(r Row, quick bool) (replay.ReplaySimConfig, error) {
	cfg, _, err := e.resolveReplay(r, quick)
	return cfg, err
}

func (e *Experiment) resolveReplay(r Row, quick bool) (replay.ReplaySimConfig, model.Resolution, error) {
	cfg, res, err := model.Resolve(e.layers(r), replay.ReplayPreset)
	if err != nil {
		return cfg, res, err
	}
	if quick && e.Quick.Limit > 0 {
		cfg.Replay.Limit = e.Quick.Limit
	}
	return cfg, res, cfg.Validate()
}

// simConfig resolves a sim row.
func (e *Experiment) simConfig(r Row, quick bool) (model.SimConfig, error) {
	cfg, _, err := e.resolveSim(r, quick)
	return cfg, err
}

func (e *Experiment) resolveSim(r Row, quick bool) (model.SimConfig, model.Resolution, error) {
	cfg, res, err := model.Resolve(e.layers(r), model.LookupPreset)
	if err != nil {
		return cfg, res, err
	}
	if quick {
		if e.Quick.Duration != "" {
			if err := params.Set(&cfg, "run.duration="+e.Quick.Duration); err != nil {
				return cfg, res, fmt.Errorf("quick.duration: %w", err)
			}
		}
		if e.Quick.Warmup != "" {
			if err := params.Set(&cfg, "run.warmup="+e.Quick.Warmup); err != nil {
				return cfg, res, fmt.Errorf("quick.warmup: %w", err)
			}
		}
		for _, kv := range e.Quick.Set {
			if err := params.Set(&cfg, kv); err != nil {
				return cfg, res, fmt.Errorf("quick.set %q: %w", kv, err)
			}
		}
	}
	return cfg, res, cfg.Validate()
}

// RowConfig returns the resolved configuration of the named row, as it
// runs (with quick, as --quick runs it): a *model.SimConfig or a
// *replay.ReplaySimConfig, with the resolver's notes. A generated trace is
// made when the experiment runs, so the configuration of a replay row
// names none.
func (e *Experiment) RowConfig(name string, quick bool) (any, []model.Note, error) {
	for _, r := range e.Rows {
		if r.Name != name {
			continue
		}
		if e.Kind == KindReplay {
			c, res, err := e.resolveReplay(r, quick)
			return &c, res.Notes, err
		}
		c, res, err := e.resolveSim(r, quick)
		return &c, res.Notes, err
	}
	var names []string
	for _, r := range e.Rows {
		names = append(names, r.Name)
	}
	return nil, nil, fmt.Errorf("experiment %s: no row %q; rows: %s", e.Name, name, strings.Join(names, ", "))
}

// Notes lists what the resolver set beyond the rows' own layers (a
// routing mode forced by a row's delivery mode), one line per note with
// the rows it applies to, in row order.
func (e *Experiment) Notes() []string {
	var order []string
	rows := map[string][]string{}
	for _, r := range e.Rows {
		var res model.Resolution
		var err error
		if e.Kind == KindReplay {
			_, res, err = e.resolveReplay(r, false)
		} else {
			_, res, err = e.resolveSim(r, false)
		}
		if err != nil {
			continue // Validate reported it
		}
		for _, n := range res.Notes {
			k := n.String()
			if _, ok := rows[k]; !ok {
				order = append(order, k)
			}
			rows[k] = append(rows[k], r.Name)
		}
	}
	out := make([]string, len(order))
	for i, k := range order {
		out[i] = fmt.Sprintf("%s: rows %s", k, strings.Join(rows[k], ", "))
	}
	return out
}

// loads returns the offered loads a sweep row runs at.
func (e *Experiment) loads(r Row, quick bool) []float64 {
	switch {
	case quick && len(e.Quick.Loads) > 0:
		if len(r.Loads) == 0 {
			return e.Quick.Loads
		}
		// keep the row's own loads that the quick list has, else its first and last
		var ls []float64
		for _, l := range r.Loads {
			if slices.Contains(e.Quick.Loads, l) {
				ls = append(ls, l)
			}
		}
		if len(ls) == 0 {
			ls = []float64{r.Loads[0], r.Loads[len(r.Loads)-1]}
		}
		return ls
	case len(r.Loads) > 0:
		return r.Loads
	}
	return e.Loads
}
