package sweep

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// grid6 is a 6-point sweep: 2 patterns x 3 loads, 10 us per point.
const grid6 = `name: grid6
grid:
  preset: paper004-torus4x4
  set: ["topology.k=[2, 2]", topology.hosts_per_switch=1, run.duration=10us, run.warmup=2us]
  axes: [{key: traffic.pattern, values: [uniform, bitrev]}]
  loads: [0.2, 0.5, 0.8]
`

// TestConcurrentRunsOfOneShard: while a run writes a shard, a second run
// of the same shard on the same directory refuses, naming the holder;
// the first run's file stays intact and merges. (Two runs in one process
// contend as two processes do: flock belongs to the open file.)
func TestConcurrentRunsOfOneShard(t *testing.T) {
	p := plan(t, grid6)
	dir := t.TempDir()
	first := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	var errA error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, errA = Run(p, dir, RunOptions{Jobs: 1, Progress: func(done, total int) {
			once.Do(func() { close(first); <-release })
		}})
	}()
	select {
	case <-first:
	case <-time.After(2 * time.Minute): // a hang, not a timing check
		t.Fatal("the first run recorded no point")
	}
	_, errB := Run(p, dir, RunOptions{Jobs: 1})
	close(release)
	wg.Wait()
	if errA != nil {
		t.Fatalf("first run: %v", errA)
	}
	host, _ := os.Hostname()
	if errB == nil || !strings.Contains(errB.Error(), "is being written by pid") || !strings.Contains(errB.Error(), "on host "+host) {
		t.Fatalf("second run of the same shard: %v, want a refusal naming the holder", errB)
	}
	if _, err := Merge(dir); err != nil {
		t.Fatalf("merge after the refused second run: %v", err)
	}
	// the lock was released: a third run finds everything done
	rep, err := Run(p, dir, RunOptions{Jobs: 1})
	if err != nil || rep.Skipped != 6 || rep.Ran != 0 || rep.StaleLock != "" {
		t.Fatalf("third run: %+v, %v", rep, err)
	}
}

// TestStaleLockTakenOver: a lock file left by a dead run (its text, no
// flock held) is taken over and reported.
func TestStaleLockTakenOver(t *testing.T) {
	p := plan(t, grid6)
	dir := t.TempDir()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(lockPath(ShardFile(dir, 1, 2)), []byte("pid 99999 on host gone since 2026-01-01T00:00:00Z\n"), 0o644)
	rep, err := Run(p, dir, RunOptions{Shard: 1, Shards: 2, Jobs: 1})
	if err != nil || rep.StaleLock != "pid 99999 on host gone since 2026-01-01T00:00:00Z" {
		t.Fatalf("%+v, %v", rep, err)
	}
	if held, _ := lockHolder(ShardFile(dir, 1, 2)); held {
		t.Fatal("lock still held after the run returned")
	}
}

// TestDirectoryKeepsItsPlanAndShards: the first run records the plan and
// the shard count; another shard count (the whole sweep as shard 0/1, a
// resubmitted Slurm task without FABEMU_SHARDS) and another plan are
// refused, naming both.
func TestDirectoryKeepsItsPlanAndShards(t *testing.T) {
	p := plan(t, grid6)
	dir := t.TempDir()
	if _, err := Run(p, dir, RunOptions{Shard: 0, Shards: 2, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	info, err := ReadDirInfo(dir)
	if err != nil || info == nil || info.Plan != p.Hash || info.Shards != 2 || info.Points != 6 {
		t.Fatalf("sweep.json: %+v, %v", info, err)
	}
	// Slurm task 1 resubmitted alone without FABEMU_SHARDS: 0 of 1
	env := map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "1", "SLURM_ARRAY_TASK_MIN": "1"}
	sh, ok, err := ShardFromEnv(func(k string) string { return env[k] }, 0)
	if err != nil || !ok || sh.Shard != 0 || sh.Shards != 1 {
		t.Fatalf("shard from env: %+v %v %v", sh, ok, err)
	}
	_, err = Run(p, dir, RunOptions{Shard: sh.Shard, Shards: sh.Shards, Jobs: 1, From: sh.From})
	if err == nil || !strings.Contains(err.Error(), "in 2 shards") || !strings.Contains(err.Error(), "in 1 shards (SLURM_ARRAY_TASK_ID") ||
		!strings.Contains(err.Error(), "FABEMU_SHARDS=2") {
		t.Fatalf("shard 0/1 into a 2-shard directory: %v", err)
	}
	if _, err := os.Stat(ShardFile(dir, 0, 1)); err == nil {
		t.Fatal("the refused run wrote a file")
	}
	// with FABEMU_SHARDS the resubmitted task is shard 1 of 2
	env["FABEMU_SHARDS"] = "2"
	sh, _, err = ShardFromEnv(func(k string) string { return env[k] }, 0)
	if err != nil || sh.Shard != 1 || sh.Shards != 2 {
		t.Fatalf("with FABEMU_SHARDS: %+v, %v", sh, err)
	}
	q := plan(t, strings.Replace(grid6, "10us", "11us", 1))
	_, err = Run(q, dir, RunOptions{Shard: 1, Shards: 2, Jobs: 1})
	if err == nil || !strings.Contains(err.Error(), "plan "+p.Hash) || !strings.Contains(err.Error(), "plan "+q.Hash) {
		t.Fatalf("another plan: %v", err)
	}
	if _, err := Run(p, dir, RunOptions{Shard: 1, Shards: 2, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(dir); err != nil {
		t.Fatal(err)
	}
	// a directory from before sweep.json: the file names decide
	old := t.TempDir()
	runAll(t, p, old, 3, 1)
	os.Remove(filepath.Join(old, DirFile))
	if _, err := Run(p, old, RunOptions{Shard: 0, Shards: 1, Jobs: 1}); err == nil || !strings.Contains(err.Error(), "in 3 shards (result file shard-0000-of-0003.jsonl)") {
		t.Fatalf("shard count against an older directory: %v", err)
	}
}

// TestStatusStates: complete, running, dead, missing, corrupt and foreign
// shards are told apart; 100% and "merge: ready" only when merge would
// succeed; an ETA only while a shard runs.
func TestStatusStates(t *testing.T) {
	p := plan(t, grid6)
	dir := t.TempDir()
	// shards 0 and 1 of 4 complete, 2 dead (cut), 3 missing
	for i := range 3 {
		if _, err := Run(p, dir, RunOptions{Shard: i, Shards: 4, Jobs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	f2 := ShardFile(dir, 2, 4)
	data, _ := os.ReadFile(f2)
	os.WriteFile(f2, data[:bytes.IndexByte(data, '\n')+20], 0o644)
	st, err := ReadStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	states := func(st *Status) string {
		var s []string
		for _, f := range st.Files {
			s = append(s, f.State)
		}
		return strings.Join(s, " ")
	}
	if got := states(st); got != "complete complete dead missing" {
		t.Fatalf("states %q", got)
	}
	if st.MergeReady || st.ETASeconds != 0 || st.Running != 0 || st.Done != 5 || st.Total != 6 {
		t.Fatalf("status %+v", st)
	}
	var out bytes.Buffer
	st.Write(&out)
	for _, want := range []string{"5/6 points done", "merge: not ready", "shard-0003-of-0004.jsonl", "missing", "dead: line 2 is cut short"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "ETA") {
		t.Errorf("an ETA while nothing runs:\n%s", out.String())
	}
	// shard 3 running: its lock held
	l, err := lockShard(ShardFile(dir, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	st, _ = ReadStatus(dir)
	l.release()
	if got := states(st); got != "complete complete dead running" || st.Running != 1 || st.ETASeconds <= 0 ||
		!strings.Contains(st.Files[3].Detail, "pid ") {
		t.Fatalf("with shard 3 locked: %q %+v", got, st)
	}
	// a flipped line in shard 1 is corruption, named with its line
	f1 := ShardFile(dir, 1, 4)
	data, _ = os.ReadFile(f1)
	os.WriteFile(f1, bytes.Replace(data, []byte(`"index":1`), []byte(`"index":1,`), 1), 0o644)
	// a file of another sharding is foreign
	os.WriteFile(ShardFile(dir, 0, 2), data, 0o644)
	st, _ = ReadStatus(dir)
	if got := states(st); got != "complete corrupt dead missing foreign" || !strings.Contains(st.Files[1].Detail, "line 1") ||
		!strings.Contains(st.Files[4].Detail, "a file of 2 shards; this directory holds 4") {
		t.Fatalf("corrupt and foreign: %q %+v", got, st.Files)
	}
	// all points recorded, but two shardings in one directory: not 100%
	all := t.TempDir()
	runAll(t, p, all, 2, 1)
	data, _ = os.ReadFile(ShardFile(all, 0, 2))
	os.WriteFile(ShardFile(all, 0, 3), data, 0o644)
	st, _ = ReadStatus(all)
	out.Reset()
	st.Write(&out)
	if st.Done != 6 || st.MergeReady || !strings.Contains(out.String(), "(99.9%)") || !strings.Contains(out.String(), "point #0") {
		t.Fatalf("mixed shardings:\n%s", out.String())
	}
	os.Remove(ShardFile(all, 0, 3))
	st, _ = ReadStatus(all)
	out.Reset()
	st.Write(&out)
	if !st.MergeReady || !strings.Contains(out.String(), "(100.0%)") || !strings.Contains(out.String(), "merge: ready") {
		t.Fatalf("complete sweep:\n%s", out.String())
	}
	if b, err := json.Marshal(st); err != nil || !bytes.Contains(b, []byte(`"merge_ready":true`)) {
		t.Fatalf("json: %s %v", b, err)
	}
}

// TestMixedBuildsRefused: points run by two builds of fabemu do not
// merge (nor resume each other's file) unless allowed.
func TestMixedBuildsRefused(t *testing.T) {
	p := plan(t, grid6)
	dir := t.TempDir()
	real := buildID
	t.Cleanup(func() { buildID = real })
	buildID = func() string { return "github.com/fabemu/fabemu@v0.1.0 rev aaaa" }
	if _, err := Run(p, dir, RunOptions{Shard: 0, Shards: 2, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(p, dir, RunOptions{Shard: 1, Shards: 2, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	// cut shard 1 to its first point and resume it with another build:
	// refused
	f1 := ShardFile(dir, 1, 2)
	data, _ := os.ReadFile(f1)
	os.WriteFile(f1, data[:bytes.IndexByte(data, '\n')+1], 0o644)
	buildID = func() string { return "github.com/fabemu/fabemu@v0.1.0 rev bbbb" }
	if _, err := Run(p, dir, RunOptions{Shard: 1, Shards: 2, Jobs: 1}); err == nil || !strings.Contains(err.Error(), "rev aaaa") || !strings.Contains(err.Error(), "--allow-mixed-versions") {
		t.Fatalf("resume with another build: %v", err)
	}
	if _, err := Run(p, dir, RunOptions{Shard: 1, Shards: 2, Jobs: 1, AllowMixedVersions: true}); err != nil {
		t.Fatal(err)
	}
	_, err := Merge(dir)
	if err == nil || !strings.Contains(err.Error(), "rev aaaa") || !strings.Contains(err.Error(), "rev bbbb") {
		t.Fatalf("merge of two builds: %v", err)
	}
	m, err := MergeWith(MergeOptions{AllowMixedVersions: true}, dir)
	if err != nil || !strings.Contains(m.Build, "rev aaaa") || !strings.Contains(m.Build, "rev bbbb") {
		t.Fatalf("allowed: %+v, %v", m, err)
	}
	st, _ := ReadStatus(dir)
	if len(st.Builds) != 2 {
		t.Fatalf("status builds %v", st.Builds)
	}
}

// TestCalibrationRunsOnce: a calibration task records the calibration
// points of every shard in their files; the shards then run their rows
// without repeating a calibration, and the merge equals the merge of
// shards that each repeated the calibration in memory.
func TestCalibrationRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs quick paper004-table1 twice")
	}
	p := plan(t, "experiment: paper004-table1\nquick: true\n")
	if !p.HasCalibration() {
		t.Fatal("paper004-table1 has no calibration points")
	}
	root := t.TempDir()
	with, without := filepath.Join(root, "with"), filepath.Join(root, "without")
	rep, err := Run(p, with, RunOptions{Shards: 4, Jobs: 2, CalibrationOnly: true})
	if err != nil || rep.Ran != 4 || rep.Calibration != 0 {
		t.Fatalf("calibration task: %+v, %v", rep, err)
	}
	if !CalibrationRecorded(p, with, 4) || CalibrationRecorded(p, without, 4) {
		t.Fatal("CalibrationRecorded")
	}
	// run again: nothing to do
	if rep, err := Run(p, with, RunOptions{Shards: 4, Jobs: 2, CalibrationOnly: true}); err != nil || rep.Ran != 0 {
		t.Fatalf("calibration task again: %+v, %v", rep, err)
	}
	repeated := 0
	for i := range 4 {
		rep, err := Run(p, with, RunOptions{Shard: i, Shards: 4, Jobs: 1})
		if err != nil || rep.Calibration != 0 || rep.Skipped != 1 || rep.Ran != 2 {
			t.Fatalf("shard %d after the calibration task: %+v, %v", i, rep, err)
		}
		rep, err = Run(p, without, RunOptions{Shard: 3 - i, Shards: 4, Jobs: 1})
		if err != nil {
			t.Fatal(err)
		}
		repeated += rep.Calibration
	}
	if repeated == 0 {
		t.Fatal("shards without a calibration task repeated no calibration: the test shows nothing")
	}
	if !bytes.Equal(merged(t, with), merged(t, without)) {
		t.Fatal("the merge with a calibration task differs from the merge without")
	}
}

// TestStatusProbeDoesNotRefuseARun: a status probe's shared lock, held
// for an instant when a run starts, does not make the run refuse.
func TestStatusProbeDoesNotRefuseARun(t *testing.T) {
	p := plan(t, grid6)
	dir := t.TempDir()
	os.MkdirAll(dir, 0o755)
	file := ShardFile(dir, 0, 3)
	f, err := os.OpenFile(lockPath(file), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond) // the probe's instant, shorter than the run's patience
		f.Close()
	}()
	if _, err := Run(p, dir, RunOptions{Shard: 0, Shards: 3, Jobs: 1}); err != nil {
		t.Fatalf("run during a status probe: %v", err)
	}
}
