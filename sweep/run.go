package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/fabemu/fabemu/experiment"
)

// RunOptions control a shard's run.
type RunOptions struct {
	// Shard and Shards: this is shard Shard of Shards (0 <= Shard <
	// Shards); 0 of 1 is the whole sweep.
	Shard, Shards int
	// Jobs is how many points run at once (0: GOMAXPROCS).
	Jobs int
	// Progress, if set, is called after each point this run finishes.
	Progress func(done, total int)
	// From says where the shard came from (for the refusal of a
	// directory of another shard count).
	From string
	// AllowMixedVersions lets this binary resume a shard file that
	// another build of fabemu began.
	AllowMixedVersions bool
	// CalibrationOnly runs the calibration points of every shard (Shard
	// is ignored) into their shards' files, without closing them: a
	// calibration task that runs once before the shards, so that no
	// shard repeats the calibration in memory. The shards then resume
	// their files and run their rows.
	CalibrationOnly bool
}

// RunReport says what a shard's run did.
type RunReport struct {
	File string
	// Points is the shard's share; Skipped were already complete in its
	// file; Ran ran now; Redone names a point whose record was cut short
	// by a killed run and is run again.
	Points, Skipped, Ran int
	Redone               string
	// Calibration counts calibration runs made in memory because no
	// shard had recorded them yet.
	Calibration int
	// StaleLock is the holder text of the shard's lock left by a run that
	// died (empty when the last run released it).
	StaleLock string
}

// Run runs shard opt.Shard of opt.Shards of the plan, writing its results
// to dir. Points already recorded in the shard's file are skipped; a
// record cut short by a killed run is dropped and its point run again.
func Run(p *Plan, dir string, opt RunOptions) (*RunReport, error) {
	if opt.Shards <= 0 {
		opt.Shards = 1
	}
	if opt.Shard < 0 || opt.Shard >= opt.Shards {
		return nil, fmt.Errorf("shard %d of %d: want 0 <= shard < %d", opt.Shard, opt.Shards, opt.Shards)
	}
	if opt.Jobs <= 0 {
		opt.Jobs = runtime.GOMAXPROCS(0)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if opt.From == "" {
		opt.From = fmt.Sprintf("shard %d/%d", opt.Shard, opt.Shards)
	}
	if err := claimDir(p, dir, opt.Shards, opt.From); err != nil {
		return nil, err
	}
	if !opt.CalibrationOnly {
		return runShard(p, dir, opt, false)
	}
	total := &RunReport{File: dir}
	for i := range opt.Shards {
		o := opt
		o.Shard = i
		if len(p.calibrationOf(i, opt.Shards)) == 0 {
			continue
		}
		rep, err := runShard(p, dir, o, true)
		if rep != nil {
			total.Points += rep.Points
			total.Ran += rep.Ran
			total.Skipped += rep.Skipped
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// calibrationOf lists the calibration points of shard i of n.
func (p *Plan) calibrationOf(i, n int) []int {
	var cal []int
	for _, k := range p.Shard(i, n) {
		if p.Points[k].Kind == experiment.PointCalibration {
			cal = append(cal, k)
		}
	}
	return cal
}

// CalibrationRecorded says whether every calibration point of the plan
// is recorded in dir's files of n shards (a calibration task has run).
func CalibrationRecorded(p *Plan, dir string, n int) bool {
	for i := range n {
		cal := p.calibrationOf(i, n)
		if len(cal) == 0 {
			continue
		}
		f, err := readShardFile(ShardFile(dir, i, n))
		if err != nil {
			return false
		}
		have := map[int]bool{}
		for _, r := range f.records {
			if r.Plan == p.Hash {
				have[r.Index] = true
			}
		}
		for _, k := range cal {
			if !have[k] {
				return false
			}
		}
	}
	return true
}

// HasCalibration says whether the plan has calibration points.
func (p *Plan) HasCalibration() bool { return len(p.calibrationOf(0, 1)) > 0 }

// runShard runs one shard's points (only its calibration points when
// calOnly, leaving the file open for the shard's own run) under the
// shard's lock.
func runShard(p *Plan, dir string, opt RunOptions, calOnly bool) (*RunReport, error) {
	path := ShardFile(dir, opt.Shard, opt.Shards)
	lock, err := lockShard(path)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	rep := &RunReport{File: path, StaleLock: lock.prev}
	mine := p.Shard(opt.Shard, opt.Shards)
	if calOnly {
		mine = p.calibrationOf(opt.Shard, opt.Shards)
	}
	rep.Points = len(mine)
	done := map[int]*Record{}
	var keep int64
	if f, err := readShardFile(path); err == nil {
		for i := range f.records {
			r := &f.records[i]
			if err := p.check(r, path); err != nil {
				return nil, fmt.Errorf("%w; use another directory for another plan", err)
			}
			if r.Build != buildID() && !opt.AllowMixedVersions {
				return nil, fmt.Errorf("%s: point %s was run by fabemu %s, this is %s: results of two builds would mix; "+
					"use another directory, or allow it with --allow-mixed-versions", path, r.ID, r.Build, buildID())
			}
			if done[r.Index] != nil {
				return nil, fmt.Errorf("%s: point #%d %s recorded twice", path, r.Index, r.ID)
			}
			done[r.Index] = r
		}
		keep = f.valid
		if f.complete && len(done) == len(p.Shard(opt.Shard, opt.Shards)) {
			rep.Skipped = len(mine)
			return rep, nil
		}
		if calOnly && !f.corrupt {
			have := 0
			for _, i := range mine {
				if done[i] != nil {
					have++
				}
			}
			if have == len(mine) {
				rep.Skipped = len(mine)
				return rep, nil
			}
		}
		// a cut or corrupt tail is dropped and its points run again; a
		// file that merely lacks its trailer (a killed run between two
		// points, or a calibration task's) loses nothing
		if fi, err := os.Stat(path); err == nil && f.problem != "" && !f.complete && fi.Size() > f.valid {
			rep.Redone = f.problem
		}
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	out, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	// drop a cut record (and a trailer) after the checked prefix
	if err := out.Truncate(keep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := out.Seek(keep, 0); err != nil {
		return nil, err
	}
	var todo []int
	for _, i := range mine {
		if done[i] == nil {
			todo = append(todo, i)
		} else {
			rep.Skipped++
		}
	}
	// calibration points first: this shard's rows may need them
	var cal, rest []int
	for _, i := range todo {
		if p.Points[i].Kind == experiment.PointCalibration {
			cal = append(cal, i)
		} else {
			rest = append(rest, i)
		}
	}
	w := &writer{f: out, p: p, path: path, records: len(done)}
	cc := &calCache{p: p, dir: dir, own: done, ownMu: &w.mu, rep: rep}
	finished := 0
	var progMu sync.Mutex
	runOne := func(i int) error {
		pt := p.Points[i]
		start := time.Now()
		pr, err := p.Exp.RunPoint(pt, p.Quick, cc.get)
		if err != nil {
			return fmt.Errorf("point #%d %s: %w", i, pt.ID, err)
		}
		if err := w.write(i, pr, time.Since(start).Seconds(), done); err != nil {
			return err
		}
		progMu.Lock()
		finished++
		if opt.Progress != nil {
			opt.Progress(finished, len(todo))
		}
		progMu.Unlock()
		return nil
	}
	for _, batch := range [][]int{cal, rest} {
		if err := pool(opt.Jobs, batch, runOne); err != nil {
			return rep, err
		}
	}
	rep.Ran = len(todo)
	if calOnly {
		return rep, w.f.Sync()
	}
	if err := w.close(opt.Shard, opt.Shards); err != nil {
		return rep, err
	}
	return rep, nil
}

// check refuses a record of another plan.
func (p *Plan) check(r *Record, file string) error {
	if r.Plan != p.Hash {
		return fmt.Errorf("%s: point %s belongs to plan %s of sweep %q, not %s of %q", file, r.ID, r.Plan, r.Sweep, p.Hash, p.Name)
	}
	if r.Index < 0 || r.Index >= len(p.Points) || p.Points[r.Index].ID != r.ID || p.Points[r.Index].ConfigHash != r.ConfigHash {
		return fmt.Errorf("%s: point #%d %s is not in the plan", file, r.Index, r.ID)
	}
	return nil
}

// pool runs f on the indices with n workers (experiment.Parallel); the
// first error wins.
func pool(n int, idx []int, f func(int) error) error {
	jobs := make([]func() error, len(idx))
	for k, i := range idx {
		jobs[k] = func() error { return f(i) }
	}
	return experiment.Parallel(n, jobs)
}

// writer appends records to a shard's file, one whole line per write.
type writer struct {
	mu      sync.Mutex
	f       *os.File
	p       *Plan
	path    string
	records int
}

func (w *writer) write(i int, pr *experiment.PointResult, wall float64, done map[int]*Record) error {
	res, err := json.Marshal(pr)
	if err != nil {
		return err
	}
	pt := w.p.Points[i]
	r := Record{Schema: PointSchema, Sweep: w.p.Name, Plan: w.p.Hash, Total: len(w.p.Points), Index: i, ID: pt.ID,
		ConfigHash: pt.ConfigHash, Seed: pt.Seed, Result: res, SHA256: sum(res), Build: buildID(), WallSeconds: wall}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	done[i] = &r
	w.records++
	return nil
}

// close appends the trailer over everything written.
func (w *writer) close(shard, shards int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	data, err := os.ReadFile(w.path)
	if err != nil {
		return err
	}
	t := Trailer{Schema: TrailerSchema, Plan: w.p.Hash, Shard: shard, Shards: shards, Records: w.records,
		Sweep: w.p.Name, Quick: w.p.Quick, Experiment: w.p.expJSON, Build: buildID(), SHA256: sum(data)}
	line, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if _, err := w.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	return w.f.Sync()
}

// calCache gives a calibrated replay's rows the chosen factor: from the
// calibration points this run recorded, else those other shards recorded
// in dir, else by running the missing ones in memory (the same numbers:
// every run is deterministic).
type calCache struct {
	p     *Plan
	dir   string
	own   map[int]*Record
	ownMu *sync.Mutex
	rep   *RunReport

	once sync.Once
	res  *experiment.CalibrationResult
	err  error
}

func (c *calCache) get() (*experiment.CalibrationResult, error) {
	c.once.Do(func() { c.res, c.err = c.compute() })
	return c.res, c.err
}

func (c *calCache) compute() (*experiment.CalibrationResult, error) {
	found := map[int]*experiment.CalibrationPoint{}
	take := func(r *Record, file string) {
		if r.Plan != c.p.Hash || r.Index < 0 || r.Index >= len(c.p.Points) || c.p.Points[r.Index].Kind != experiment.PointCalibration {
			return
		}
		if pr, err := decodeResult(r, file); err == nil && pr.Calibration != nil {
			found[r.Index] = pr.Calibration
		}
	}
	c.ownMu.Lock()
	for _, r := range c.own {
		take(r, "")
	}
	c.ownMu.Unlock()
	if files, err := ResultFiles(c.dir); err == nil {
		for _, path := range files {
			if f, err := readShardFile(path); err == nil {
				for i := range f.records {
					take(&f.records[i], path)
				}
			}
		}
	}
	var pts []experiment.CalibrationPoint
	for i, pt := range c.p.Points {
		if pt.Kind != experiment.PointCalibration {
			continue
		}
		cp := found[i]
		if cp == nil {
			pr, err := c.p.Exp.RunPoint(pt, c.p.Quick, nil)
			if err != nil {
				return nil, err
			}
			cp = pr.Calibration
			c.rep.Calibration++
		}
		pts = append(pts, *cp)
	}
	return c.p.Exp.Calibrate(pts, c.p.Quick)
}
