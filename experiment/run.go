package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/blockgen"
	"github.com/fabemu/fabemu/workload/replay"
	"github.com/fabemu/fabemu/workload/synth"
)

// Schema versions the experiment JSON.
const Schema = "fabemu.experiment/v1"

// Options control a run.
type Options struct {
	// Jobs is how many simulations run at once (0: GOMAXPROCS). Each one
	// is single-goroutine and deterministic, so the results do not depend
	// on it.
	Jobs int
	// Quick shrinks the workload as the definition's quick section says.
	Quick bool
	// Progress, if set, is called after each finished simulation.
	Progress func(done, total int)
}

// Result is the outcome of an experiment: the JSON document.
type Result struct {
	Schema      string `json:"schema"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      string `json:"source"`
	Kind        string `json:"kind"`
	Quick       bool   `json:"quick"`
	// Trace says what was replayed (replay experiments).
	Trace *TraceInfo `json:"trace,omitempty"`
	// Calibration holds the compression-factor search, if any.
	Calibration *CalibrationResult `json:"calibration,omitempty"`
	// Compression is the factor every row ran with (replay experiments).
	Compression float64     `json:"compression,omitempty"`
	Baseline    string      `json:"baseline,omitempty"`
	Rows        []RowResult `json:"rows"`
	// WallSeconds is the experiment's wall time (machine-dependent).
	WallSeconds float64 `json:"wall_seconds"`

	exp *Experiment
}

// TraceInfo describes the trace of a replay experiment.
type TraceInfo struct {
	Name     string        `json:"name"`
	Generate *GenerateSpec `json:"generate,omitempty"`
	File     string        `json:"file,omitempty"`
	Records  int64         `json:"records"` // replayed (after the quick limit)
}

// RowResult is one row: the full summary of its run, or the points of a
// load sweep.
type RowResult struct {
	Name    string       `json:"name"`
	Summary any          `json:"summary,omitempty"` // *replay.ReplaySummary or *synth.Summary
	Points  []SweepPoint `json:"points,omitempty"`
	Group   string       `json:"group,omitempty"`
	Series  string       `json:"series,omitempty"`
	// Throughput is the network throughput per time bin of a sim row
	// that is not a sweep (paper 000 Figs. 2, 3, 6).
	Throughput *Series `json:"throughput,omitempty"`
	// Efficiency is the switch efficiency per time bin of a sim row that
	// is not a sweep (paper 003 Figs. 2.20-2.21).
	Efficiency *Series `json:"efficiency,omitempty"`
	// Seeds are the row's runs, one per topology seed, when the
	// experiment has topology_seeds (Summary is then left out), and
	// Spread the mean and range over them of each table metric.
	Seeds  []SeedRun             `json:"seeds,omitempty"`
	Spread map[string]Spread     `json:"spread,omitempty"`
	replay *replay.ReplaySummary // typed views of Summary (the first seed's run with seeds)
	sim    *synth.Summary
}

// SeedRun is a row's run on one topology seed.
type SeedRun struct {
	Seed    uint64                `json:"seed"`
	Summary *replay.ReplaySummary `json:"summary"`
}

// Spread is a metric over a row's seeds: mean, minimum, maximum and
// (population) standard deviation of the N per-seed values.
type Spread struct {
	Unit   string  `json:"unit"`
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Stddev float64 `json:"stddev"`
}

// spreadOf summarises values (at least one).
func spreadOf(unit string, vs []float64) Spread {
	sp := Spread{Unit: unit, N: len(vs), Min: vs[0], Max: vs[0]}
	for _, v := range vs {
		sp.Mean += v
		sp.Min, sp.Max = min(sp.Min, v), max(sp.Max, v)
	}
	sp.Mean /= float64(len(vs))
	for _, v := range vs {
		sp.Stddev += (v - sp.Mean) * (v - sp.Mean)
	}
	sp.Stddev = math.Sqrt(sp.Stddev / float64(len(vs)))
	return sp
}

// SweepPoint is one offered load of a sweep row.
type SweepPoint struct {
	Load    float64        `json:"load"`
	Summary *synth.Summary `json:"summary"`
}

// CalibrationResult records the compression-factor search.
type CalibrationResult struct {
	Row            string             `json:"row"`
	MinUtilisation float64            `json:"min_utilisation"`
	MinBacklog     float64            `json:"min_backlog"`
	Points         []CalibrationPoint `json:"points"`
	// SaturationBytesPerNsPerSwitch is the largest accepted traffic of
	// the calibration row over the factors tried.
	SaturationBytesPerNsPerSwitch float64 `json:"saturation_bytes_per_ns_per_switch"`
	SaturationFactor              float64 `json:"saturation_factor"`
	// Chosen is the factor the rows ran with; Utilisation its accepted
	// traffic over the saturation throughput.
	Chosen      float64 `json:"chosen"`
	Utilisation float64 `json:"utilisation"`
	Backlog     float64 `json:"backlog"`
}

// CalibrationPoint is the calibration row at one factor.
type CalibrationPoint struct {
	Factor                      float64 `json:"factor"`
	AcceptedBytesPerNsPerSwitch float64 `json:"accepted_bytes_per_ns_per_switch"`
	TraceExecutionTimeNs        float64 `json:"trace_execution_time_ns"`
	LastIssueNs                 float64 `json:"last_issue_ns"`
	// Backlog is execution time over compressed span: above 1 the
	// fabric could not keep up with the trace.
	Backlog      float64 `json:"backlog"`
	InvariantsOK bool    `json:"invariants_ok"`
}

// Parallel runs jobs on n workers; the first job error (in job order)
// is returned after every job ran. The sweep package runs its points on
// it too.
func Parallel(n int, jobs []func() error) error {
	return (&pool{n: n}).run(jobs)
}

// pool runs jobs on n workers and reports progress.
type pool struct {
	n     int
	mu    sync.Mutex
	done  int
	total int
	prog  func(done, total int)
}

func (p *pool) run(jobs []func() error) error {
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(p.n, len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = jobs[i]()
				p.mu.Lock()
				p.done++
				if p.prog != nil {
					p.prog(p.done, p.total)
				}
				p.mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Run runs the experiment. A run whose invariants fail is not an error
// here: its summary says so and the caller decides (the CLI fails).
func Run(e *Experiment, opt Options) (*Result, error) {
	start := time.Now()
	jobs := opt.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	res := &Result{Schema: Schema, Name: e.Name, Description: e.Description, Source: e.Source, Kind: e.Kind,
		Quick: opt.Quick, Baseline: e.Baseline, exp: e}
	p := &pool{n: jobs, prog: opt.Progress, total: e.countRuns(opt.Quick)}
	var err error
	if e.Kind == KindReplay {
		err = e.runReplay(res, p, opt.Quick)
	} else {
		err = e.runSim(res, p, opt.Quick)
	}
	res.WallSeconds = time.Since(start).Seconds()
	return res, err
}

func (e *Experiment) countRuns(quick bool) int {
	if e.Kind == KindReplay {
		n := len(e.Rows) * max(1, len(e.seeds(quick)))
		if c := e.Calibration; c != nil {
			n += len(e.factors(quick))
		}
		return n
	}
	if !e.sweep() {
		return len(e.Rows)
	}
	n := 0
	for _, r := range e.Rows {
		n += len(e.loads(r, quick))
	}
	return n
}

func (e *Experiment) factors(quick bool) []float64 {
	if quick && len(e.Quick.Factors) > 0 {
		return e.Quick.Factors
	}
	return e.Calibration.Factors
}

// traceName names a generated trace in reports.
func (g *GenerateSpec) traceName() string {
	s := fmt.Sprintf("blockgen %s, seed %d, %d records", g.Like, g.Seed, g.Records)
	if g.Initiators > 0 {
		s += fmt.Sprintf(", %d initiators", g.Initiators)
	}
	if g.DiskSkew != nil {
		s += fmt.Sprintf(", disk skew %g", *g.DiskSkew)
	}
	if g.Rate != nil {
		s += fmt.Sprintf(", %g requests/s", *g.Rate)
	}
	return s
}

// generate writes the generated trace to a temporary file and returns its
// path and a function removing it. The trace is a pure function of the
// spec; only this run reads the file.
func (g *GenerateSpec) generate(records int64) (string, func(), error) {
	p, err := blockgen.Like(g.Like)
	if err != nil {
		return "", nil, fmt.Errorf("trace.generate.like: %w", err)
	}
	if g.Initiators > 0 {
		p.Initiators = g.Initiators
	}
	if g.DiskSkew != nil {
		p.DiskSkew = *g.DiskSkew
	}
	if g.Rate != nil {
		p.Rate = *g.Rate
	}
	gen, err := blockgen.New(p, g.Seed)
	if err != nil {
		return "", nil, fmt.Errorf("trace.generate: %w", err)
	}
	dir, err := os.MkdirTemp("", "fabemu-experiment-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, "trace.csv")
	w, err := tracefmt.Create(path, tracefmt.CSV)
	if err == nil {
		err = gen.Write(w, records)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("trace.generate: %w", err)
	}
	return path, cleanup, nil
}

func (e *Experiment) runReplay(res *Result, p *pool, quick bool) error {
	cfgs := make([]replay.ReplaySimConfig, len(e.Rows))
	for i, r := range e.Rows {
		c, err := e.replayConfig(r, quick)
		if err != nil {
			return fmt.Errorf("row %q: %w", r.Name, err)
		}
		cfgs[i] = c
	}
	info := &TraceInfo{File: e.Trace.File, Generate: e.Trace.Generate}
	res.Trace = info
	if g := e.Trace.Generate; g != nil {
		n := g.Records
		if quick && e.Quick.Limit > 0 {
			n = min(n, e.Quick.Limit)
		}
		path, cleanup, err := g.generate(n)
		if err != nil {
			return err
		}
		defer cleanup()
		info.Name = g.traceName()
		for i := range cfgs {
			cfgs[i].Replay.Trace, cfgs[i].Replay.Format = path, string(tracefmt.CSV)
		}
	}
	// fix reports only the names: the temporary path must not show.
	fix := func(s *replay.ReplaySummary) {
		if s != nil && e.Trace.Generate != nil {
			s.Trace.Name = info.Name
			s.Config.Replay.Trace = info.Name
		}
	}
	seeds := e.seeds(quick)
	if seeds != nil {
		for i := range cfgs { // the calibration runs on the first seed
			cfgs[i].Topology.Seed, cfgs[i].Run.Seed = seeds[0], seeds[0]
		}
	}
	if c := e.Calibration; c != nil {
		idx := e.rowIndex(c.Row)
		cal, err := e.calibrate(cfgs[idx], p, quick, fix)
		if err != nil {
			return err
		}
		res.Calibration = cal
		for i := range cfgs {
			cfgs[i].Replay.Compression = cal.Chosen
		}
	}
	res.Compression = cfgs[0].Replay.Compression
	runs := max(1, len(seeds))
	res.Rows = make([]RowResult, len(e.Rows))
	var jobs []func() error
	for i, r := range e.Rows {
		res.Rows[i] = RowResult{Name: r.Name, Group: r.Group, Series: r.Series}
		if seeds != nil {
			res.Rows[i].Seeds = make([]SeedRun, runs)
		}
		for j := 0; j < runs; j++ {
			jobs = append(jobs, func() error {
				cfg := cfgs[i]
				if seeds != nil {
					cfg.Topology.Seed, cfg.Run.Seed = seeds[j], seeds[j]
				}
				s, err := replay.RunReplay(cfg, nil)
				fix(s)
				if seeds != nil {
					res.Rows[i].Seeds[j] = SeedRun{Seed: seeds[j], Summary: s}
				} else {
					res.Rows[i].Summary = s
				}
				if j == 0 {
					res.Rows[i].replay = s
				}
				if err != nil {
					if seeds != nil {
						return fmt.Errorf("row %q, topology seed %d: %w", r.Name, seeds[j], err)
					}
					return fmt.Errorf("row %q: %w", r.Name, err)
				}
				return nil
			})
		}
	}
	if err := p.run(jobs); err != nil {
		return err
	}
	for _, r := range res.Rows {
		info.Records = max(info.Records, r.replay.Trace.Records)
		if info.Name == "" {
			info.Name = r.replay.Trace.Name
		}
	}
	if seeds != nil {
		res.computeSpreads()
	}
	return nil
}

// spreadMetrics are the metrics a seeded replay row summarises (Spread);
// "impr" is added, per seed against the baseline row's run on the same
// seed.
var spreadMetrics = []string{"time", "waste", "mbs", "mms", "accepted", "latency"}

// computeSpreads fills every row's Spread from its seeds' runs.
func (r *Result) computeSpreads() {
	var base *RowResult
	for i := range r.Rows {
		if r.Rows[i].Name == r.Baseline {
			base = &r.Rows[i]
		}
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		row.Spread = map[string]Spread{}
		for _, m := range spreadMetrics {
			vs := make([]float64, len(row.Seeds))
			for j, sr := range row.Seeds {
				vs[j] = metrics[m].get(view{rep: sr.Summary})
			}
			row.Spread[m] = spreadOf(metrics[m].unit, vs)
		}
		if base == nil || base == row {
			continue
		}
		vs := make([]float64, len(row.Seeds))
		for j, sr := range row.Seeds {
			if bt := base.Seeds[j].Summary.TraceExecutionTimeNs; bt > 0 {
				vs[j] = 100 * (1 - sr.Summary.TraceExecutionTimeNs/bt)
			}
		}
		row.Spread["impr"] = spreadOf("%", vs)
	}
}

func (e *Experiment) rowIndex(name string) int {
	for i, r := range e.Rows {
		if r.Name == name {
			return i
		}
	}
	return -1
}

// calibrate runs cfg at each factor and picks one (see the package
// comment).
func (e *Experiment) calibrate(cfg replay.ReplaySimConfig, p *pool, quick bool, fix func(*replay.ReplaySummary)) (*CalibrationResult, error) {
	fs := e.factors(quick)
	points := make([]CalibrationPoint, len(fs))
	jobs := make([]func() error, len(fs))
	for i, f := range fs {
		jobs[i] = func() error {
			cc := cfg
			cc.Replay.Compression = f
			s, err := replay.RunReplay(cc, nil)
			if err != nil {
				return fmt.Errorf("calibration at compression %g: %w", f, err)
			}
			fix(s)
			points[i] = calibrationPoint(f, s)
			return nil
		}
	}
	if err := p.run(jobs); err != nil {
		return nil, err
	}
	return e.Calibrate(points, quick)
}

func (e *Experiment) runSim(res *Result, p *pool, quick bool) error {
	res.Rows = make([]RowResult, len(e.Rows))
	var jobs []func() error
	for i, r := range e.Rows {
		cfg, err := e.simConfig(r, quick)
		if err != nil {
			return fmt.Errorf("row %q: %w", r.Name, err)
		}
		res.Rows[i] = RowResult{Name: r.Name, Group: r.Group, Series: r.Series}
		if !e.sweep() {
			jobs = append(jobs, func() error {
				s, err := synth.RunSim(cfg, nil)
				res.Rows[i].Summary, res.Rows[i].sim = s, s
				res.Rows[i].Throughput = throughputSeries(s)
				res.Rows[i].Efficiency = efficiencySeries(s)
				if err != nil {
					return fmt.Errorf("row %q: %w", r.Name, err)
				}
				return nil
			})
			continue
		}
		ls := e.loads(r, quick)
		res.Rows[i].Points = make([]SweepPoint, len(ls))
		for j, l := range ls {
			jobs = append(jobs, func() error {
				c := cfg
				c.Traffic.Load = l
				s, err := synth.RunSim(c, nil)
				res.Rows[i].Points[j] = SweepPoint{Load: l, Summary: s}
				if err != nil {
					return fmt.Errorf("row %q at load %g: %w", r.Name, l, err)
				}
				return nil
			})
		}
	}
	return p.run(jobs)
}

// InvariantsOK reports whether every run of the result kept its
// invariants, with the failures named.
func (r *Result) InvariantsOK() (bool, []string) {
	var bad []string
	for _, row := range r.Rows {
		switch {
		case row.replay != nil && !row.replay.Invariants.OK:
			bad = append(bad, fmt.Sprintf("%s: %v", row.Name, row.replay.Invariants.Violations))
		case row.sim != nil && !row.sim.Invariants.OK:
			bad = append(bad, fmt.Sprintf("%s: %v", row.Name, row.sim.Invariants.Violations))
		}
		for _, sr := range row.Seeds {
			if sr.Summary != nil && !sr.Summary.Invariants.OK && sr.Summary != row.replay {
				bad = append(bad, fmt.Sprintf("%s on topology seed %d: %v", row.Name, sr.Seed, sr.Summary.Invariants.Violations))
			}
		}
		for _, pt := range row.Points {
			if pt.Summary != nil && !pt.Summary.Invariants.OK {
				bad = append(bad, fmt.Sprintf("%s at load %g: %v", row.Name, pt.Load, pt.Summary.Invariants.Violations))
			}
		}
	}
	if c := r.Calibration; c != nil {
		for _, pt := range c.Points {
			if !pt.InvariantsOK {
				bad = append(bad, fmt.Sprintf("calibration at compression %g", pt.Factor))
			}
		}
	}
	return len(bad) == 0, bad
}
