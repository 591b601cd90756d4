// Package launch submits a sweep to a cluster's scheduler and watches it
// to the end, in the manner of CAMINOS' launcher and the Snakemake and
// Nextflow executors: submit only what lacks results, poll the scheduler,
// resubmit failed shards (a bounded number of times, with more memory
// after an out-of-memory kill), and report when the results directory
// would merge. Slurm is driven through its command-line tools (sbatch,
// squeue, scancel); Kubernetes through manifests rendered from one
// template (kubernetes.go).
package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/sweep"
)

// Slurm submits a sweep as Slurm job arrays and watches them.
type Slurm struct {
	Plan *sweep.Plan
	// Spec is the spec file the tasks read; Dir the results directory
	// (both on a file system every node sees); Bin the fabemu binary
	// the tasks run. All are made absolute.
	Spec, Dir, Bin string
	// Shards is the shard count; Jobs the points each task runs at
	// once (its --cpus-per-task).
	Shards, Jobs int
	// MaxRetries bounds the resubmissions of one shard.
	MaxRetries int
	// Poll is the time between two looks at the scheduler.
	Poll time.Duration
	// Sbatch are extra sbatch arguments (--partition, --time, ...).
	Sbatch []string
	// Env is the environment of the Slurm commands (nil: this
	// process's).
	Env []string
	// Log receives one line per submission, retry and state change.
	Log io.Writer

	cal    *job
	shards map[int]*job
}

// job is one submitted shard (an array task) or the calibration job.
type job struct {
	id     string // "ARRAYID_TASK", or the calibration job's ID
	shard  int    // -1: calibration
	memMiB int
	tries  int
}

// Terminal Slurm job states other than COMPLETED: the task will not
// finish its shard.
var failedStates = []string{"FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"}

func (s *Slurm) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

func (s *Slurm) command(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = s.Env
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// shardMemory is the memory a task of shard i asks for: the largest
// request of its points (sweep.RequestMiB of the plan's estimate), times
// the points it runs at once.
func (s *Slurm) shardMemory(i int) int {
	m, n := 0, 0
	for _, k := range s.Plan.Shard(i, s.Shards) {
		m = max(m, sweep.RequestMiB(s.Plan.MemoryMiB[k]))
		n++
	}
	return m * max(1, min(s.Jobs, n))
}

func (s *Slurm) init() error {
	if s.Shards < 1 || s.Shards > len(s.Plan.Points) {
		return fmt.Errorf("%d shards: want 1 to %d (the plan's points)", s.Shards, len(s.Plan.Points))
	}
	if s.Jobs < 1 {
		s.Jobs = 1
	}
	if s.MaxRetries < 0 {
		s.MaxRetries = 0
	}
	if s.Poll <= 0 {
		s.Poll = 10 * time.Second
	}
	for _, p := range []*string{&s.Spec, &s.Dir, &s.Bin} {
		a, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = a
	}
	if s.Env == nil {
		s.Env = os.Environ()
	}
	for _, d := range []string{s.Dir, filepath.Join(s.Dir, "slurm"), filepath.Join(s.Dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	s.shards = map[int]*job{}
	return sweep.ClaimDir(s.Plan, s.Dir, s.Shards, "fabemu sweep submit")
}

// script writes the batch script every shard task (and, with
// calibration, the calibration job) runs; logs go under DIR/logs and the
// working directory is DIR, so nothing is written where sbatch was run.
func (s *Slurm) script(name string, args ...string) (string, error) {
	path := filepath.Join(s.Dir, "slurm", name)
	q := func(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }
	cmd := []string{q(s.Bin), "sweep", "run", q(s.Spec), "--out", q(s.Dir), "--jobs", strconv.Itoa(s.Jobs)}
	cmd = append(cmd, args...)
	text := fmt.Sprintf(`#!/bin/bash
# Written by "fabemu sweep submit --slurm" for sweep %s (plan %s, %d shards).
# The shard is SLURM_ARRAY_TASK_ID of FABEMU_SHARDS; a resubmitted task
# keeps its place.
#SBATCH --cpus-per-task=%d
set -euo pipefail
export FABEMU_SHARDS=%d
exec %s
`, s.Plan.Name, s.Plan.Hash, s.Shards, s.Jobs, s.Shards, strings.Join(cmd, " "))
	return path, os.WriteFile(path, []byte(text), 0o755)
}

func parseJobID(out []byte) (string, error) {
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.Atoi(id); err != nil {
		return "", fmt.Errorf("sbatch --parsable printed %q: want a job ID", out)
	}
	return id, nil
}

// submitShards submits shards (grouped by their memory) as arrays, after
// the calibration job when it has not completed.
func (s *Slurm) submitShards(shards []int, dep string) error {
	script := filepath.Join(s.Dir, "slurm", "shard.sbatch")
	groups := map[int][]int{}
	for _, i := range shards {
		m := s.shardMemory(i)
		if j := s.shards[i]; j != nil {
			m = max(m, j.memMiB)
		}
		groups[m] = append(groups[m], i)
	}
	mems := make([]int, 0, len(groups))
	for m := range groups {
		mems = append(mems, m)
	}
	slices.Sort(mems)
	for _, m := range mems {
		list := make([]string, len(groups[m]))
		for k, i := range groups[m] {
			list[k] = strconv.Itoa(i)
		}
		args := []string{"--parsable", "--job-name=fabemu-" + s.Plan.Name, "--array=" + strings.Join(list, ","),
			fmt.Sprintf("--mem=%dM", m), "--chdir=" + s.Dir, "--output=" + filepath.Join(s.Dir, "logs", "shard-%a-job-%A.log")}
		if dep != "" {
			args = append(args, "--dependency=afterok:"+dep, "--kill-on-invalid-dep=yes")
		}
		args = append(args, s.Sbatch...)
		args = append(args, script)
		out, err := s.command("sbatch", args...)
		if err != nil {
			return err
		}
		id, err := parseJobID(out)
		if err != nil {
			return err
		}
		for _, i := range groups[m] {
			j := s.shards[i]
			if j == nil {
				j = &job{shard: i}
				s.shards[i] = j
			}
			j.id, j.memMiB = id+"_"+strconv.Itoa(i), m
		}
		s.logf("submitted shards %s of %d as array job %s (--mem=%dM%s)", strings.Join(list, ","), s.Shards, id, m, map[bool]string{true: ", after calibration job " + dep}[dep != ""])
	}
	return nil
}

func (s *Slurm) submitCalibration() error {
	script := filepath.Join(s.Dir, "slurm", "calibration.sbatch")
	m := 0
	for k, pt := range s.Plan.Points {
		if pt.Kind == experiment.PointCalibration {
			m = max(m, sweep.RequestMiB(s.Plan.MemoryMiB[k]))
		}
	}
	m *= s.Jobs
	if s.cal != nil {
		m = max(m, s.cal.memMiB)
	}
	args := []string{"--parsable", "--job-name=fabemu-" + s.Plan.Name + "-calibration", fmt.Sprintf("--mem=%dM", m),
		"--chdir=" + s.Dir, "--output=" + filepath.Join(s.Dir, "logs", "calibration-job-%j.log")}
	args = append(args, s.Sbatch...)
	args = append(args, script)
	out, err := s.command("sbatch", args...)
	if err != nil {
		return err
	}
	id, err := parseJobID(out)
	if err != nil {
		return err
	}
	if s.cal == nil {
		s.cal = &job{shard: -1}
	}
	s.cal.id, s.cal.memMiB = id, m
	s.logf("submitted the calibration points of every shard as job %s (--mem=%dM); the shards run after it", id, m)
	return nil
}

// Submit writes the batch scripts and submits the shards whose files are
// not complete (all of them in a fresh directory), after a calibration
// job when the plan has calibration points not yet recorded.
func (s *Slurm) Submit() error {
	if err := s.init(); err != nil {
		return err
	}
	if _, err := s.script("shard.sbatch"); err != nil {
		return err
	}
	all, calDone, running, err := s.pendingRunning()
	if err != nil {
		return err
	}
	var todo []int
	for _, i := range all {
		if running[i] {
			s.logf("shard %d is running now (its lock is held): not submitted again", i)
		} else {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		s.logf("no shard of %s to submit: %d complete, %d running", s.Dir, s.Shards-len(all), len(running))
		return nil
	}
	dep := ""
	if s.Plan.HasCalibration() && !calDone {
		if _, err := s.script("calibration.sbatch", "--shard", "0/"+strconv.Itoa(s.Shards), "--calibration"); err != nil {
			return err
		}
		if err := s.submitCalibration(); err != nil {
			return err
		}
		dep = s.cal.id
	}
	return s.submitShards(todo, dep)
}

// pendingRunning lists the shards whose files are not complete, and
// whether every calibration point is recorded; running are the shards a
// run holds now (their lock), which may not be this launcher's.
func (s *Slurm) pendingRunning() ([]int, bool, map[int]bool, error) {
	st, err := sweep.ReadStatus(s.Dir)
	if err != nil {
		return nil, false, nil, err
	}
	if st.Plan != "" && (st.Plan != s.Plan.Hash || st.Shards != s.Shards) {
		return nil, false, nil, fmt.Errorf("%s holds plan %s in %d shards; this submission is plan %s in %d shards: use another directory",
			s.Dir, st.Plan, st.Shards, s.Plan.Hash, s.Shards)
	}
	complete, running := map[int]bool{}, map[int]bool{}
	for _, f := range st.Files {
		if f.State == sweep.StateComplete && f.Shard < s.Shards {
			complete[f.Shard] = true
		}
		if f.State == sweep.StateRunning {
			running[f.Shard] = true
		}
	}
	var todo []int
	for i := range s.Shards {
		if !complete[i] {
			todo = append(todo, i)
		}
	}
	return todo, sweep.CalibrationRecorded(s.Plan, s.Dir, s.Shards), running, nil
}

// states asks squeue for the state of every submitted job and task
// (finished ones too, for as long as Slurm keeps them: MinJobAge).
func (s *Slurm) states() (map[string]string, error) {
	ids := map[string]bool{}
	for _, j := range s.shards {
		a, _, _ := strings.Cut(j.id, "_")
		ids[a] = true
	}
	if s.cal != nil {
		ids[s.cal.id] = true
	}
	list := make([]string, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	if len(list) == 0 {
		return map[string]string{}, nil
	}
	slices.Sort(list)
	out, err := s.command("squeue", "-h", "-r", "-t", "all", "-j", strings.Join(list, ","), "-o", "%i %T")
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		// "ARRAYID_TASK STATE" (-r: one line per task), or "ID STATE"
		if f := strings.Fields(line); len(f) == 2 {
			st[f[0]] = f[1]
		}
	}
	return st, nil
}

// Watch polls the scheduler and the results directory until every shard
// is complete and the directory merges; a shard whose task ended without
// completing its file is resubmitted (it resumes), with twice the memory
// after OUT_OF_MEMORY, at most MaxRetries times. Call it after Submit.
func (s *Slurm) Watch() error {
	last := ""
	gone := map[string]int{}
	for {
		// the scheduler first, the files second: a task the scheduler
		// calls COMPLETED has written its file by then
		states, err := s.states()
		if err != nil {
			return err
		}
		todo, calDone, running, err := s.pendingRunning()
		if err != nil {
			return err
		}
		if len(todo) == 0 {
			st, err := sweep.ReadStatus(s.Dir)
			if err != nil {
				return err
			}
			if !st.MergeReady {
				return fmt.Errorf("every shard of %s is complete but merge refuses: %s", s.Dir, st.MergeProblem)
			}
			s.logf("all %d shards complete: %s merges", s.Shards, s.Dir)
			return nil
		}
		// the calibration job
		calFailed := false
		if s.cal != nil && !calDone {
			state := states[s.cal.id]
			if slices.Contains(failedStates, state) || state == "COMPLETED" || (state == "" && gone[s.cal.id] > 2) {
				calFailed = true
				if err := s.retry(s.cal, state); err != nil {
					return err
				}
				if err := s.submitCalibration(); err != nil {
					return err
				}
			} else if state == "" {
				gone[s.cal.id]++
			}
		}
		var again []int
		for _, i := range todo {
			j := s.shards[i]
			if j == nil {
				// not submitted by this launcher: submit it, unless a
				// run (an earlier submission's) holds it now
				if !running[i] {
					again = append(again, i)
				}
				continue
			}
			state := states[j.id]
			switch {
			case state == "":
				// not (or no longer) known to squeue: give it a few polls
				gone[j.id]++
				if gone[j.id] <= 2 {
					continue
				}
			case slices.Contains(failedStates, state), state == "COMPLETED":
			default:
				continue // pending or running
			}
			if !(state == "CANCELLED" && calFailed) { // cancelled with its dependency: not its fault
				if err := s.retry(j, state); err != nil {
					return err
				}
			}
			again = append(again, i)
		}
		if len(again) > 0 {
			dep := ""
			if s.cal != nil && !calDone {
				dep = s.cal.id
			}
			if err := s.submitShards(again, dep); err != nil {
				return err
			}
		}
		line := fmt.Sprintf("%d of %d shards complete", s.Shards-len(todo), s.Shards)
		if line != last {
			s.logf("%s", line)
			last = line
		}
		time.Sleep(s.Poll)
	}
}

// retry counts a resubmission of j, refusing past MaxRetries; an
// out-of-memory kill doubles its memory.
func (s *Slurm) retry(j *job, state string) error {
	what := fmt.Sprintf("shard %d", j.shard)
	log := filepath.Join(s.Dir, "logs", fmt.Sprintf("shard-%d-job-%s.log", j.shard, strings.SplitN(j.id, "_", 2)[0]))
	if j.shard < 0 {
		what, log = "the calibration job", filepath.Join(s.Dir, "logs", "calibration-job-"+j.id+".log")
	}
	if state == "" {
		state = "gone from squeue without completing"
	}
	if j.tries >= s.MaxRetries {
		return fmt.Errorf("%s (job %s) ended %s and was retried %d times: giving up; see %s", what, j.id, state, j.tries, log)
	}
	j.tries++
	if state == "OUT_OF_MEMORY" {
		j.memMiB *= 2
	}
	s.logf("%s (job %s) ended %s: resubmitting it (retry %d of %d; it resumes its file)", what, j.id, state, j.tries, s.MaxRetries)
	return nil
}
