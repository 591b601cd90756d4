package sweep

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fabemu/fabemu/internal/report"
)

// Shard states in a status.
const (
	StateComplete = "complete" // a valid trailer closes the file
	StateRunning  = "running"  // a run holds the shard's lock
	StateDead     = "dead"     // partial, and no run holds the lock: resubmit it
	StateMissing  = "missing"  // no file yet, and no run holds the lock
	StateCorrupt  = "corrupt"  // a bad line before the end (see Detail)
	StateForeign  = "foreign"  // another plan or another shard count
)

// Status is the progress of a sweep's results directory.
type Status struct {
	Dir string `json:"dir"`
	// Sweep, Plan and Shards identify the sweep the directory holds
	// (from its sweep.json, else from its first record and file name);
	// Total is its point count, Done the points recorded in its own
	// shard files.
	Sweep  string `json:"sweep,omitempty"`
	Plan   string `json:"plan,omitempty"`
	Shards int    `json:"shards,omitempty"`
	Total  int    `json:"points"`
	Done   int    `json:"done"`
	// Running counts the shards a run holds now.
	Running int `json:"running"`
	// Files are the shards in order, then the foreign files.
	Files []FileStatus `json:"files"`
	// Builds are the fabemu builds that ran the recorded points.
	Builds []string `json:"builds,omitempty"`
	// MergeReady says whether merge would succeed now; MergeProblem is
	// merge's error otherwise.
	MergeReady   bool   `json:"merge_ready"`
	MergeProblem string `json:"merge_problem,omitempty"`
	// WallSeconds sums the recorded points' wall times; ETASeconds, set
	// only while a shard runs, is the remaining points at the mean wall
	// time per point, divided over the running shards.
	WallSeconds float64 `json:"wall_seconds"`
	ETASeconds  float64 `json:"eta_seconds,omitempty"`
}

// FileStatus is one shard's state.
type FileStatus struct {
	Path    string `json:"file"`
	Shard   int    `json:"shard"`
	State   string `json:"state"`
	Records int    `json:"records"`
	// Detail says why (the problem line of a corrupt file, the lock
	// holder of a running shard, what a foreign file belongs to).
	Detail string `json:"detail,omitempty"`
}

// ReadStatus reads the progress of a results directory.
func ReadStatus(dir string) (*Status, error) {
	files, err := ResultFiles(dir)
	if err != nil {
		return nil, err
	}
	st := &Status{Dir: dir}
	info, err := ReadDirInfo(dir)
	if err != nil {
		return nil, err
	}
	read := map[string]*shardFile{}
	for _, path := range files {
		f, err := readShardFile(path)
		if err != nil {
			return nil, err
		}
		read[path] = f
	}
	if info != nil {
		st.Sweep, st.Plan, st.Shards, st.Total = info.Sweep, info.Plan, info.Shards, info.Points
	} else {
		// an older directory: the first file with a record decides
		for _, path := range files {
			if f := read[path]; len(f.records) > 0 {
				r := f.records[0]
				st.Sweep, st.Plan, st.Total = r.Sweep, r.Plan, r.Total
				_, st.Shards, _ = parseShardName(path)
				break
			}
		}
	}
	seen := map[int]bool{}
	builds := map[string]bool{}
	own := map[string]bool{}
	for i := range st.Shards {
		path := ShardFile(dir, i, st.Shards)
		own[path] = true
		fs := FileStatus{Path: path, Shard: i}
		held, holder := lockHolder(path)
		f := read[path]
		switch {
		case f != nil && f.complete:
			fs.State = StateComplete
		case held:
			fs.State, fs.Detail = StateRunning, holder
			st.Running++
		case f == nil:
			fs.State = StateMissing
		case f.corrupt:
			fs.State, fs.Detail = StateCorrupt, f.problem
		default:
			fs.State, fs.Detail = StateDead, f.problem+"; no run holds its lock: run the shard again (it resumes)"
		}
		if f != nil {
			fs.Records = len(f.records)
			if ok, why := foreign(f, st.Plan); ok {
				fs.State, fs.Detail = StateForeign, why
			} else {
				for _, r := range f.records {
					if !seen[r.Index] {
						seen[r.Index] = true
						st.Done++
						st.WallSeconds += r.WallSeconds
					}
					if !builds[r.Build] {
						builds[r.Build] = true
						st.Builds = append(st.Builds, buildName(r.Build))
					}
				}
			}
		}
		st.Files = append(st.Files, fs)
	}
	for _, path := range files {
		if own[path] {
			continue
		}
		f := read[path]
		_, why := foreign(f, st.Plan)
		if why == "" {
			_, n, _ := parseShardName(path)
			why = fmt.Sprintf("a file of %d shards; this directory holds %d", n, st.Shards)
		}
		sh, _, _ := parseShardName(path)
		st.Files = append(st.Files, FileStatus{Path: path, Shard: sh, State: StateForeign, Records: len(f.records), Detail: why})
	}
	if st.Plan != "" {
		if _, err := Merge(dir); err != nil {
			st.MergeProblem = err.Error()
		} else {
			st.MergeReady = true
		}
	} else {
		st.MergeProblem = "no points recorded yet"
	}
	if st.Running > 0 && st.Done > 0 && st.Total > st.Done {
		per := st.WallSeconds / float64(st.Done)
		st.ETASeconds = per * float64(st.Total-st.Done) / float64(st.Running)
	}
	return st, nil
}

// foreign says whether a shard file's records or trailer belong to
// another plan than plan.
func foreign(f *shardFile, plan string) (bool, string) {
	for _, r := range f.records {
		if r.Plan != plan {
			return true, fmt.Sprintf("point %s is of sweep %q plan %s; this directory holds plan %s", r.ID, r.Sweep, r.Plan, plan)
		}
	}
	if f.complete && f.trailer.Plan != plan {
		return true, fmt.Sprintf("its trailer is of plan %s; this directory holds plan %s", f.trailer.Plan, plan)
	}
	return false, ""
}

// Write prints the status: a summary line, the merge's readiness, the
// ETA while a shard runs, and each shard's state.
func (st *Status) Write(w io.Writer) error {
	if st.Plan == "" {
		fmt.Fprintf(w, "%s: no points recorded yet (%d shard files)\n", st.Dir, len(st.Files))
		return nil
	}
	pct := 100 * float64(st.Done) / float64(max(1, st.Total))
	if !st.MergeReady && pct > 99.9 {
		pct = 99.9 // 100% only when merge would succeed
	}
	fmt.Fprintf(w, "sweep %s (plan %s, %d shards): %d/%d points done (%.1f%%), %d shards running\n",
		st.Sweep, st.Plan, st.Shards, st.Done, st.Total, pct, st.Running)
	if st.MergeReady {
		fmt.Fprintf(w, "merge: ready (fabemu sweep merge %s)\n", st.Dir)
	} else {
		fmt.Fprintf(w, "merge: not ready: %s\n", st.MergeProblem)
	}
	if st.ETASeconds > 0 {
		fmt.Fprintf(w, "ETA %s (mean point wall time over the %d running shards)\n",
			(time.Duration(st.ETASeconds * float64(time.Second))).Round(time.Second), st.Running)
	}
	if len(st.Builds) > 1 {
		fmt.Fprintf(w, "builds: %s (mixed: merge refuses them without --allow-mixed-versions)\n", strings.Join(st.Builds, "; "))
	}
	t := report.Table{Columns: []report.Column{{Name: "shard", Align: report.AlignRight}, {Name: "file", Align: report.AlignLeft},
		{Name: "points", Align: report.AlignRight}, {Name: "state", Align: report.AlignLeft}}}
	for _, f := range st.Files {
		state := f.State
		if f.Detail != "" {
			state += ": " + f.Detail
		}
		t.AddRow(strconv.Itoa(f.Shard), filepath.Base(f.Path), strconv.Itoa(f.Records), state)
	}
	fmt.Fprintln(w)
	return t.Write(w)
}

// ShardEnv is where a shard's index and count came from.
type ShardEnv struct {
	Shard, Shards int
	// From names the variables (or flag) used, for the log.
	From string
}

// ShardFromEnv reads the shard from the environment of a Kubernetes
// Indexed Job (JOB_COMPLETION_INDEX, with the count from
// FABEMU_SHARDS, which the manifest sets to the Job's completions) or a
// Slurm job array (SLURM_ARRAY_TASK_ID with FABEMU_SHARDS, else with
// SLURM_ARRAY_TASK_COUNT, or with SLURM_ARRAY_TASK_MIN and
// SLURM_ARRAY_TASK_MAX; SLURM_ARRAY_TASK_STEP, when set, divides the
// task's offset from the minimum, so --array=0-14:2 is shards 0..7 of 8);
// defaultShards is
// the count when FABEMU_SHARDS is unset (the spec's shards). It returns
// false when none of them is set.
func ShardFromEnv(getenv func(string) string, defaultShards int) (ShardEnv, bool, error) {
	num := func(name string) (int, error) {
		v := strings.TrimSpace(getenv(name))
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: want a non-negative integer", name, v)
		}
		return n, nil
	}
	if getenv("JOB_COMPLETION_INDEX") != "" {
		i, err := num("JOB_COMPLETION_INDEX")
		if err != nil {
			return ShardEnv{}, false, err
		}
		from := "JOB_COMPLETION_INDEX and FABEMU_SHARDS"
		n := defaultShards
		if getenv("FABEMU_SHARDS") != "" {
			if n, err = num("FABEMU_SHARDS"); err != nil {
				return ShardEnv{}, false, err
			}
		} else {
			from = "JOB_COMPLETION_INDEX and the spec's shards"
		}
		if n <= 0 {
			return ShardEnv{}, false, fmt.Errorf("JOB_COMPLETION_INDEX=%d is set but not the shard count: set FABEMU_SHARDS to the Job's completions (or shards in the spec, or --shard I/N)", i)
		}
		return checkShard(ShardEnv{i, n, from})
	}
	if getenv("SLURM_ARRAY_TASK_ID") != "" {
		id, err := num("SLURM_ARRAY_TASK_ID")
		if err != nil {
			return ShardEnv{}, false, err
		}
		// a resubmitted task (sbatch --array=3) no longer sees the
		// array's count: FABEMU_SHARDS keeps it, the task ID is the shard
		if getenv("FABEMU_SHARDS") != "" {
			n, err := num("FABEMU_SHARDS")
			if err != nil {
				return ShardEnv{}, false, err
			}
			return checkShard(ShardEnv{id, n, "SLURM_ARRAY_TASK_ID and FABEMU_SHARDS"})
		}
		// An array with a step (sbatch --array=0-14:2) numbers its tasks
		// lo, lo+step, ...: task (id-lo)/step is the shard, else the
		// shards between the IDs would never run.
		step, stepFrom := 1, ""
		if getenv("SLURM_ARRAY_TASK_STEP") != "" {
			if step, err = num("SLURM_ARRAY_TASK_STEP"); err != nil {
				return ShardEnv{}, false, err
			}
			if step < 1 {
				return ShardEnv{}, false, fmt.Errorf("SLURM_ARRAY_TASK_STEP=%d: want a positive step", step)
			}
			if step > 1 {
				stepFrom = fmt.Sprintf(", in steps of SLURM_ARRAY_TASK_STEP=%d", step)
			}
		}
		lo, loFrom := 0, ""
		if getenv("SLURM_ARRAY_TASK_MIN") != "" {
			if lo, err = num("SLURM_ARRAY_TASK_MIN"); err != nil {
				return ShardEnv{}, false, err
			}
			loFrom = " - SLURM_ARRAY_TASK_MIN"
		}
		index := func() (int, error) {
			if id < lo || (id-lo)%step != 0 {
				return 0, fmt.Errorf("SLURM_ARRAY_TASK_ID=%d is not SLURM_ARRAY_TASK_MIN=%d plus a multiple of SLURM_ARRAY_TASK_STEP=%d: an array with a list of IDs cannot be told apart from a stepped one; submit --array=0-N without gaps, or set FABEMU_SHARDS (the task ID is then the shard)", id, lo, step)
			}
			return (id - lo) / step, nil
		}
		if getenv("SLURM_ARRAY_TASK_COUNT") != "" {
			n, err := num("SLURM_ARRAY_TASK_COUNT")
			if err != nil {
				return ShardEnv{}, false, err
			}
			i, err := index()
			if err != nil {
				return ShardEnv{}, false, err
			}
			from := "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT"
			if loFrom != "" {
				from = "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, and SLURM_ARRAY_TASK_COUNT"
			}
			return checkShard(ShardEnv{i, n, from + stepFrom})
		}
		if loFrom != "" && getenv("SLURM_ARRAY_TASK_MAX") != "" {
			hi, err := num("SLURM_ARRAY_TASK_MAX")
			if err != nil {
				return ShardEnv{}, false, err
			}
			i, err := index()
			if err != nil {
				return ShardEnv{}, false, err
			}
			if hi < lo {
				return ShardEnv{}, false, fmt.Errorf("SLURM_ARRAY_TASK_MAX=%d is below SLURM_ARRAY_TASK_MIN=%d", hi, lo)
			}
			return checkShard(ShardEnv{i, (hi-lo)/step + 1, "SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX" + stepFrom})
		}
		return ShardEnv{}, false, fmt.Errorf("SLURM_ARRAY_TASK_ID=%d is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MIN/MAX: cannot tell the shard count", id)
	}
	return ShardEnv{}, false, nil
}

func checkShard(s ShardEnv) (ShardEnv, bool, error) {
	if s.Shards <= 0 || s.Shard < 0 || s.Shard >= s.Shards {
		return s, false, fmt.Errorf("shard %d of %d (from %s): want 0 <= index < count", s.Shard, s.Shards, s.From)
	}
	return s, true, nil
}

// ParseShard parses --shard I/N.
func ParseShard(v string) (ShardEnv, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return ShardEnv{}, fmt.Errorf("--shard %q: want I/N, e.g. 3/8", v)
	}
	s, _, err := checkShard(ShardEnv{i, n, "--shard"})
	return s, err
}
