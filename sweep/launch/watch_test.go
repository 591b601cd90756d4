package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabemu/fabemu/sweep"
)

// fakeSbatch records its arguments and prints the next job ID; fakeSqueue
// prints every task of every submitted array as OUT_OF_MEMORY (a task
// that never completes its shard).
const fakeSbatch = `#!/bin/bash
n=$(($(cat "$FAKE/next" 2>/dev/null || echo 0) + 1))
echo $n > "$FAKE/next"
echo "$*" >> "$FAKE/sbatch.log"
for a in "$@"; do
	case $a in --array=*) echo "$n ${a#--array=}" >> "$FAKE/arrays";; esac
done
echo $n
`

const fakeSqueue = `#!/bin/bash
while read -r id tasks; do
	for i in ${tasks//,/ }; do echo "${id}_$i OUT_OF_MEMORY"; done
done < "$FAKE/arrays"
`

// TestWatchRetriesBounded drives Submit and Watch against fake sbatch and
// squeue: a shard whose task keeps ending OUT_OF_MEMORY is resubmitted
// with twice the memory each time, at most MaxRetries times, and then
// the watch gives up naming the shard, the state and its log.
func TestWatchRetriesBounded(t *testing.T) {
	fake := t.TempDir()
	for name, text := range map[string]string{"sbatch": fakeSbatch, "squeue": fakeSqueue} {
		if err := os.WriteFile(filepath.Join(fake, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := sweep.ParseSpec([]byte(gridSpec), "tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sweep.NewPlan(s, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "tiny.yaml")
	os.WriteFile(spec, []byte(gridSpec), 0o644)
	// shard 0 of 2 is complete already: only shard 1 is submitted
	if _, err := sweep.Run(p, filepath.Join(dir, "res"), sweep.RunOptions{Shard: 0, Shards: 2, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+":"+os.Getenv("PATH")) // exec looks commands up in this process's PATH
	t.Setenv("FAKE", fake)
	var log bytes.Buffer
	l := &Slurm{Plan: p, Spec: spec, Dir: filepath.Join(dir, "res"), Bin: "/bin/false", Shards: 2, Jobs: 1, MaxRetries: 2,
		Poll: time.Millisecond, Log: &log}
	if err := l.Submit(); err != nil {
		t.Fatal(err)
	}
	err = l.Watch()
	if err == nil || !strings.Contains(err.Error(), "shard 1 (job 3_1) ended OUT_OF_MEMORY and was retried 2 times: giving up") ||
		!strings.Contains(err.Error(), filepath.Join("logs", "shard-1-job-3.log")) {
		t.Fatalf("watch: %v\n%s", err, log.String())
	}
	calls, _ := os.ReadFile(filepath.Join(fake, "sbatch.log"))
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d sbatch calls, want the submission and 2 retries:\n%s", len(lines), calls)
	}
	mem := l.shardMemory(1)
	for k, want := range []int{mem, 2 * mem, 4 * mem} {
		if !strings.Contains(lines[k], "--array=1 ") || !strings.Contains(lines[k], "--mem="+itoa(want)+"M") {
			t.Errorf("sbatch call %d: %s, want --array=1 and --mem=%dM", k, lines[k], want)
		}
		if !strings.Contains(lines[k], "--chdir="+l.Dir) || !strings.Contains(lines[k], "--output="+filepath.Join(l.Dir, "logs")) {
			t.Errorf("sbatch call %d writes outside the results directory: %s", k, lines[k])
		}
	}
	script, _ := os.ReadFile(filepath.Join(l.Dir, "slurm", "shard.sbatch"))
	if !bytes.Contains(script, []byte("export FABEMU_SHARDS=2")) {
		t.Errorf("the task script does not fix the shard count:\n%s", script)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSubmitSkipsRunningShards: a shard whose lock a run holds (an
// earlier submission still running) is not submitted again.
func TestSubmitSkipsRunningShards(t *testing.T) {
	fake := t.TempDir()
	os.WriteFile(filepath.Join(fake, "sbatch"), []byte(fakeSbatch), 0o755)
	t.Setenv("PATH", fake+":"+os.Getenv("PATH"))
	t.Setenv("FAKE", fake)
	s, _ := sweep.ParseSpec([]byte(gridSpec), "tiny.yaml")
	p, err := sweep.NewPlan(s, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res := filepath.Join(dir, "res")
	os.MkdirAll(res, 0o755)
	lf, err := os.OpenFile(sweep.ShardFile(res, 1, 3)+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	l := &Slurm{Plan: p, Spec: filepath.Join(dir, "tiny.yaml"), Dir: res, Bin: "/bin/false", Shards: 3, Jobs: 1, Log: &log}
	if err := l.Submit(); err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(fake, "sbatch.log"))
	if !strings.Contains(string(calls), "--array=0,2 ") || !strings.Contains(log.String(), "shard 1 is running now") {
		t.Fatalf("sbatch calls:\n%s\nlog:\n%s", calls, log.String())
	}
}
