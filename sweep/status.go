package sweep

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fabemu/fabemu/internal/report"
)

// Status is the progress of a sweep's results directory.
type Status struct {
	Dir string
	// Plan and Sweep identify the plan (empty before any point is
	// recorded); Total is its point count.
	Plan, Sweep string
	Total, Done int
	// Files are the shard files, with their state.
	Files []FileStatus
	// WallSeconds sums the recorded points' wall times; ETA is the
	// remaining points at the mean wall time per point, divided over the
	// shards still running (at least one).
	WallSeconds float64
	ETA         time.Duration
}

// FileStatus is one shard file's state.
type FileStatus struct {
	Path     string
	Records  int
	Complete bool
	Problem  string
}

// ReadStatus reads the progress of a results directory.
func ReadStatus(dir string) (*Status, error) {
	files, err := resultFiles(dir)
	if err != nil {
		return nil, err
	}
	st := &Status{Dir: dir}
	seen := map[int]bool{}
	running := 0
	for _, path := range files {
		f, err := readShardFile(path)
		if err != nil {
			return nil, err
		}
		st.Files = append(st.Files, FileStatus{Path: path, Records: len(f.records), Complete: f.complete, Problem: f.problem})
		if !f.complete {
			running++
		}
		for _, r := range f.records {
			if st.Plan == "" {
				st.Plan, st.Sweep, st.Total = r.Plan, r.Sweep, r.Total
			}
			if r.Plan != st.Plan {
				return nil, fmt.Errorf("%s: point %s is of plan %s, other files of plan %s: results of different sweeps in one directory", path, r.ID, r.Plan, st.Plan)
			}
			if !seen[r.Index] {
				seen[r.Index] = true
				st.Done++
				st.WallSeconds += r.WallSeconds
			}
		}
	}
	if st.Done > 0 && st.Total > st.Done {
		per := st.WallSeconds / float64(st.Done)
		st.ETA = time.Duration(per * float64(st.Total-st.Done) / float64(max(1, running)) * float64(time.Second))
	}
	return st, nil
}

// Write prints the status.
func (st *Status) Write(w io.Writer) error {
	if st.Plan == "" {
		fmt.Fprintf(w, "%s: no points recorded yet (%d shard files)\n", st.Dir, len(st.Files))
	} else {
		pct := 100 * float64(st.Done) / float64(max(1, st.Total))
		eta := "done"
		if st.Done < st.Total {
			eta = "ETA unknown"
			if st.ETA > 0 {
				eta = "ETA " + st.ETA.Round(time.Second).String()
			}
		}
		fmt.Fprintf(w, "sweep %s (plan %s): %d/%d points done (%.1f%%), %s\n", st.Sweep, st.Plan, st.Done, st.Total, pct, eta)
	}
	t := report.Table{Columns: []report.Column{{Name: "file", Align: report.AlignLeft}, {Name: "points", Align: report.AlignRight},
		{Name: "state", Align: report.AlignLeft}}}
	for _, f := range st.Files {
		state := "finished"
		if !f.Complete {
			state = "running or killed: " + f.Problem
		}
		t.AddRow(f.Path, strconv.Itoa(f.Records), state)
	}
	if len(st.Files) == 0 {
		return nil
	}
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
// Slurm job array (SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT, or
// with SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX); defaultShards is
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
		if getenv("SLURM_ARRAY_TASK_COUNT") != "" {
			n, err := num("SLURM_ARRAY_TASK_COUNT")
			if err != nil {
				return ShardEnv{}, false, err
			}
			lo, from := 0, "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT"
			if getenv("SLURM_ARRAY_TASK_MIN") != "" {
				if lo, err = num("SLURM_ARRAY_TASK_MIN"); err != nil {
					return ShardEnv{}, false, err
				}
				from = "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, and SLURM_ARRAY_TASK_COUNT"
			}
			return checkShard(ShardEnv{id - lo, n, from})
		}
		if getenv("SLURM_ARRAY_TASK_MIN") != "" && getenv("SLURM_ARRAY_TASK_MAX") != "" {
			lo, err := num("SLURM_ARRAY_TASK_MIN")
			if err != nil {
				return ShardEnv{}, false, err
			}
			hi, err := num("SLURM_ARRAY_TASK_MAX")
			if err != nil {
				return ShardEnv{}, false, err
			}
			return checkShard(ShardEnv{id - lo, hi - lo + 1, "SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_MAX"})
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
