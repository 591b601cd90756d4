package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/workload/replay"
	"github.com/fabemu/fabemu/workload/synth"
)

// Point kinds: the independent simulations an experiment is made of.
const (
	PointCalibration = "calibration" // the calibration row at one compression factor
	PointRow         = "row"         // one row (a replay, or a sim without a load sweep)
	PointLoad        = "load"        // one row of a sim sweep at one offered load
)

// Point is one independent simulation of an experiment. Run does them all
// on a worker pool; a sweep (package sweep) runs them on several machines
// and puts the results back together with Assemble.
type Point struct {
	// ID names the point uniquely and stably: "calibration@2000",
	// "row:DET", "load:irr16/uniform/DET@0.05".
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Row  string `json:"row,omitempty"`
	// Load is the offered load (PointLoad), Factor the compression
	// factor (PointCalibration).
	Load   float64 `json:"load,omitempty"`
	Factor float64 `json:"factor,omitempty"`
	// Seed is the run's seed (run.seed, or the replay's).
	Seed uint64 `json:"seed"`
	// ConfigHash is the SHA-256 of the resolved configuration as the point
	// runs it (JSON), load or factor included; a calibrated replay row's
	// factor is chosen later and is not part of it.
	ConfigHash string `json:"config_hash"`
	// NeedsCalibration says the point needs the calibration's chosen factor.
	NeedsCalibration bool `json:"needs_calibration,omitempty"`

	row int
}

// PointResult is the outcome of one point: a calibration point, a replay
// summary or a sim summary. Wall-clock figures (the summaries' run
// section) are removed so that a point's result depends on its
// configuration only.
type PointResult struct {
	Calibration *CalibrationPoint     `json:"calibration,omitempty"`
	Replay      *replay.ReplaySummary `json:"replay,omitempty"`
	Sim         *synth.Summary        `json:"sim,omitempty"`
}

// Points lists the experiment's points in a fixed order: the calibration
// factors (ascending), then the rows in table order, each at its loads in
// the listed order.
func (e *Experiment) Points(quick bool) ([]Point, error) {
	var ps []Point
	if e.Kind == KindReplay {
		if c := e.Calibration; c != nil {
			idx := e.rowIndex(c.Row)
			cfg, err := e.replayConfig(e.Rows[idx], quick)
			if err != nil {
				return nil, fmt.Errorf("row %q: %w", c.Row, err)
			}
			for _, f := range e.factors(quick) {
				cc := cfg
				cc.Replay.Compression = f
				h, err := hashConfig(cc)
				if err != nil {
					return nil, err
				}
				ps = append(ps, Point{ID: "calibration@" + fmtNum(f), Kind: PointCalibration, Row: c.Row, Factor: f,
					Seed: e.replaySeed(), ConfigHash: h, row: idx})
			}
		}
		for i, r := range e.Rows {
			cfg, err := e.replayConfig(r, quick)
			if err != nil {
				return nil, fmt.Errorf("row %q: %w", r.Name, err)
			}
			h, err := hashConfig(cfg)
			if err != nil {
				return nil, err
			}
			ps = append(ps, Point{ID: "row:" + r.Name, Kind: PointRow, Row: r.Name, Seed: e.replaySeed(), ConfigHash: h,
				NeedsCalibration: e.Calibration != nil, row: i})
		}
		return ps, nil
	}
	for i, r := range e.Rows {
		cfg, err := e.simConfig(r, quick)
		if err != nil {
			return nil, fmt.Errorf("row %q: %w", r.Name, err)
		}
		if !e.sweep() {
			h, err := hashConfig(cfg)
			if err != nil {
				return nil, err
			}
			ps = append(ps, Point{ID: "row:" + r.Name, Kind: PointRow, Row: r.Name, Seed: cfg.Run.Seed, ConfigHash: h, row: i})
			continue
		}
		for _, l := range e.loads(r, quick) {
			c := cfg
			c.Traffic.Load = l
			h, err := hashConfig(c)
			if err != nil {
				return nil, err
			}
			ps = append(ps, Point{ID: "load:" + r.Name + "@" + fmtNum(l), Kind: PointLoad, Row: r.Name, Load: l,
				Seed: cfg.Run.Seed, ConfigHash: h, row: i})
		}
	}
	return ps, nil
}

// replaySeed is the seed that shapes a replay: the generated trace's.
func (e *Experiment) replaySeed() uint64 {
	if g := e.Trace.Generate; g != nil {
		return g.Seed
	}
	return 0
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func hashConfig(cfg any) (string, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// RunPoint runs one point. A calibrated replay row needs the chosen
// compression factor: calibration is called to get it (see Calibrate).
func (e *Experiment) RunPoint(p Point, quick bool, calibration func() (*CalibrationResult, error)) (*PointResult, error) {
	if p.row < 0 || p.row >= len(e.Rows) || e.Rows[p.row].Name != p.Row {
		p.row = e.rowIndex(p.Row)
		if p.row < 0 {
			return nil, fmt.Errorf("point %s: no row %q", p.ID, p.Row)
		}
	}
	r := e.Rows[p.row]
	if e.Kind != KindReplay {
		cfg, err := e.simConfig(r, quick)
		if err != nil {
			return nil, fmt.Errorf("row %q: %w", r.Name, err)
		}
		if p.Kind == PointLoad {
			cfg.Traffic.Load = p.Load
		}
		s, err := synth.RunSim(cfg, nil)
		if s != nil {
			s.Run = nil
		}
		if err != nil {
			return nil, fmt.Errorf("point %s: %w", p.ID, err)
		}
		return &PointResult{Sim: s}, nil
	}
	cfg, err := e.replayConfig(r, quick)
	if err != nil {
		return nil, fmt.Errorf("row %q: %w", r.Name, err)
	}
	if p.Kind == PointRow && p.NeedsCalibration {
		cal, err := calibration()
		if err != nil {
			return nil, err
		}
		cfg.Replay.Compression = cal.Chosen
	}
	if p.Kind == PointCalibration {
		cfg.Replay.Compression = p.Factor
	}
	cleanup, fix, err := e.prepareTrace(&cfg, quick)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	s, err := replay.RunReplay(cfg, nil)
	fix(s)
	if s != nil {
		s.Run = nil
	}
	if p.Kind == PointCalibration {
		if err != nil {
			return nil, fmt.Errorf("calibration at compression %g: %w", p.Factor, err)
		}
		pt := calibrationPoint(p.Factor, s)
		return &PointResult{Calibration: &pt}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("row %q: %w", r.Name, err)
	}
	return &PointResult{Replay: s}, nil
}

// prepareTrace generates the experiment's trace, if it generates one, and
// points cfg at it; fix replaces the temporary path by the trace's name in
// a summary.
func (e *Experiment) prepareTrace(cfg *replay.ReplaySimConfig, quick bool) (cleanup func(), fix func(*replay.ReplaySummary), err error) {
	g := e.Trace.Generate
	if g == nil {
		return func() {}, func(*replay.ReplaySummary) {}, nil
	}
	n := g.Records
	if quick && e.Quick.Limit > 0 {
		n = min(n, e.Quick.Limit)
	}
	path, cleanup, err := g.generate(n)
	if err != nil {
		return nil, nil, err
	}
	cfg.Replay.Trace, cfg.Replay.Format = path, string(tracefmt.CSV)
	name := g.traceName()
	return cleanup, func(s *replay.ReplaySummary) {
		if s != nil {
			s.Trace.Name = name
			s.Config.Replay.Trace = name
		}
	}, nil
}

func calibrationPoint(f float64, s *replay.ReplaySummary) CalibrationPoint {
	pt := CalibrationPoint{Factor: f, AcceptedBytesPerNsPerSwitch: s.AcceptedBytesPerNsPerSwitch,
		TraceExecutionTimeNs: s.TraceExecutionTimeNs, LastIssueNs: s.LastIssueNs, InvariantsOK: s.Invariants.OK}
	if s.LastIssueNs > 0 {
		pt.Backlog = s.TraceExecutionTimeNs / s.LastIssueNs
	}
	return pt
}

// Calibrate chooses the compression factor from the calibration points
// (in factor order), as Run does (see the package comment).
func (e *Experiment) Calibrate(points []CalibrationPoint, quick bool) (*CalibrationResult, error) {
	c := e.Calibration
	if c == nil {
		return nil, fmt.Errorf("experiment %s has no calibration", e.Name)
	}
	cal := &CalibrationResult{Row: c.Row, MinUtilisation: c.MinUtilisation, MinBacklog: c.MinBacklog, Points: points}
	for _, pt := range cal.Points {
		if pt.AcceptedBytesPerNsPerSwitch > cal.SaturationBytesPerNsPerSwitch {
			cal.SaturationBytesPerNsPerSwitch, cal.SaturationFactor = pt.AcceptedBytesPerNsPerSwitch, pt.Factor
		}
	}
	pick := -1
	for i, pt := range cal.Points {
		if pt.AcceptedBytesPerNsPerSwitch >= c.MinUtilisation*cal.SaturationBytesPerNsPerSwitch && pt.Backlog >= c.MinBacklog {
			pick = i
			break
		}
	}
	if pick < 0 {
		return cal, fmt.Errorf("calibration: no factor of %v gives accepted traffic >= %g of saturation (%.4g bytes/ns/switch) with execution time >= %g x the compressed span; extend calibration.factors",
			e.factors(quick), c.MinUtilisation, cal.SaturationBytesPerNsPerSwitch, c.MinBacklog)
	}
	pt := cal.Points[pick]
	cal.Chosen, cal.Backlog = pt.Factor, pt.Backlog
	cal.Utilisation = pt.AcceptedBytesPerNsPerSwitch / cal.SaturationBytesPerNsPerSwitch
	return cal, nil
}

// Assemble builds the experiment's result from its points' results, given
// in the order of Points: the same table, JSON and plot as Run, without
// wall-clock figures.
func (e *Experiment) Assemble(quick bool, results []*PointResult) (*Result, error) {
	ps, err := e.Points(quick)
	if err != nil {
		return nil, err
	}
	if len(results) != len(ps) {
		return nil, fmt.Errorf("experiment %s: %d point results for %d points", e.Name, len(results), len(ps))
	}
	res := &Result{Schema: Schema, Name: e.Name, Description: e.Description, Source: e.Source, Kind: e.Kind,
		Quick: quick, Baseline: e.Baseline, exp: e, Rows: make([]RowResult, len(e.Rows))}
	for i, r := range e.Rows {
		res.Rows[i] = RowResult{Name: r.Name, Group: r.Group, Series: r.Series}
	}
	var cal []CalibrationPoint
	for i, p := range ps {
		pr := results[i]
		if pr == nil {
			return nil, fmt.Errorf("experiment %s: point %s has no result", e.Name, p.ID)
		}
		switch p.Kind {
		case PointCalibration:
			if pr.Calibration == nil {
				return nil, fmt.Errorf("point %s: no calibration result", p.ID)
			}
			cal = append(cal, *pr.Calibration)
		case PointRow:
			row := &res.Rows[p.row]
			switch {
			case e.Kind == KindReplay && pr.Replay != nil:
				row.Summary, row.replay = pr.Replay, pr.Replay
			case e.Kind == KindSim && pr.Sim != nil:
				row.Summary, row.sim = pr.Sim, pr.Sim
			default:
				return nil, fmt.Errorf("point %s: no %s summary", p.ID, e.Kind)
			}
		case PointLoad:
			if pr.Sim == nil {
				return nil, fmt.Errorf("point %s: no sim summary", p.ID)
			}
			row := &res.Rows[p.row]
			row.Points = append(row.Points, SweepPoint{Load: p.Load, Summary: pr.Sim})
		}
	}
	if e.Kind == KindReplay {
		info := &TraceInfo{File: e.Trace.File, Generate: e.Trace.Generate}
		if g := e.Trace.Generate; g != nil {
			info.Name = g.traceName()
		}
		res.Trace = info
		if e.Calibration != nil {
			c, err := e.Calibrate(cal, quick)
			if err != nil {
				return nil, err
			}
			res.Calibration = c
		}
		for _, r := range res.Rows {
			info.Records = max(info.Records, r.replay.Trace.Records)
			if info.Name == "" {
				info.Name = r.replay.Trace.Name
			}
		}
		if len(res.Rows) > 0 {
			res.Compression = res.Rows[0].replay.Config.Replay.Compression
		}
	}
	return res, nil
}

// FromJSON decodes a definition from its JSON form (a merged sweep
// carries its experiment this way) and validates it; name is used in
// error messages.
func FromJSON(data []byte, name string) (*Experiment, error) {
	var e Experiment
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("%s: experiment: %w", name, err)
	}
	e.file = name
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("%s: experiment: %w", name, err)
	}
	return &e, nil
}
