package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/internal/slurmtest"
)

// buildFabemu builds the binary the Slurm tasks run.
func buildFabemu(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fabemu")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/fabemu").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// killer is the binary a task runs: fabemu, except that the first
// attempt of shard 1 is killed with SIGKILL after it has recorded a
// point (or, if the shard was too quick for that, has its file cut in
// the middle of its second line, as a kill mid-write leaves it) and the
// task fails.
const killer = `#!/bin/bash
real=%[1]q
mark=%[2]q
file=%[3]q
if [[ ${SLURM_ARRAY_TASK_ID:-} == 1 && ! -e $mark ]]; then
	touch "$mark"
	"$real" "$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		if [[ -s $file ]]; then kill -9 "$pid"; break; fi
		sleep 0.01
	done
	wait "$pid"
	if tail -n 1 "$file" | grep -q fabemu.sweep.trailer; then
		first=$(head -n 1 "$file" | wc -c)
		truncate -s $((first + 40)) "$file"
	fi
	exit 137
fi
exec "$real" "$@"
`

// strip drops the machine-dependent parts of an experiment's JSON
// result: the run objects (wall time, events per second, peak RSS) and
// the wall time.
func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "run")
		delete(x, "wall_seconds")
		for k, e := range x {
			x[k] = strip(e)
		}
	case []any:
		for i, e := range x {
			x[i] = strip(e)
		}
	}
	return v
}

func readStripped(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, _ := json.MarshalIndent(strip(v), "", " ")
	return b
}

// TestSlurmSubmitWatch submits fig5-quick to a real single-node Slurm
// cluster as a 4-task array with --watch; the first attempt of shard 1 is
// killed mid-run, the launcher resubmits it, the shard resumes, and the
// merged result's table equals "fabemu experiment"'s (the run objects
// aside). Nothing is written outside the results directory.
func TestSlurmSubmitWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and builds fabemu")
	}
	c := slurmtest.Start(t, 2, 4096)
	bin := buildFabemu(t)
	work := t.TempDir()
	res := filepath.Join(work, "results")
	wrapper := filepath.Join(work, "fabemu-killer")
	script := fmt.Sprintf(killer, bin, filepath.Join(work, "killed-once"), filepath.Join(res, "shard-0001-of-0004.jsonl"))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(work, "cwd")
	os.Mkdir(cwd, 0o755)
	spec, _ := filepath.Abs("../../deploy/examples/fig5-quick.yaml")
	cmd := c.Command(bin, "sweep", "submit", spec, "--slurm", "--out", res, "--bin", wrapper, "--watch", "--poll", "500ms", "--retries", "2")
	cmd.Dir = cwd
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("submit --watch: %v\n%s\n%s\n%s", err, stderr.String(), stdout.String(), c.Log("slurmctld.log"))
	}
	log := stderr.String()
	for _, want := range []string{"as array job", "shard 1 (job ", "ended FAILED: resubmitting it (retry 1 of 2", "all 4 shards complete", "merged 28 points"} {
		if !strings.Contains(log, want) {
			t.Errorf("the launcher's log lacks %q:\n%s", want, log)
		}
	}
	if strings.Count(log, "resubmitting") != 1 {
		t.Errorf("want exactly one resubmission:\n%s", log)
	}
	if !strings.Contains(stdout.String(), "invariants: OK") {
		t.Errorf("plot output:\n%s", stdout.String())
	}
	// the retried shard's log says it resumed
	logs, _ := filepath.Glob(filepath.Join(res, "logs", "shard-1-job-*.log"))
	if len(logs) != 2 {
		t.Errorf("shard 1 logs %v: want the killed attempt's and the retry's", logs)
	}
	resumed := false
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		m := regexp.MustCompile(`7 points: (\d) ran, (\d) already done`).FindSubmatch(b)
		resumed = resumed || (m != nil && m[2][0] != '0')
	}
	if !resumed {
		t.Errorf("the retry of shard 1 did not resume its file (kept no point)")
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("the launcher wrote into the directory it ran from: %v", ents)
	}
	// the same table as fabemu experiment
	exp := filepath.Join(work, "exp.json")
	if out, err := exec.Command(bin, "experiment", "paper004-fig5", "--quick", "--json", exp, "--jobs", "2").CombinedOutput(); err != nil {
		t.Fatalf("experiment: %v\n%s", err, out)
	}
	if a, b := readStripped(t, filepath.Join(res, "table.json")), readStripped(t, exp); !bytes.Equal(a, b) {
		t.Fatalf("the Slurm sweep's table differs from fabemu experiment's (run objects aside)")
	}
	if _, err := os.Stat(filepath.Join(res, "merged.json")); err != nil {
		t.Error(err)
	}
	if svgs, _ := filepath.Glob(filepath.Join(res, "figure-*.svg")); len(svgs) != 2 {
		t.Errorf("plots %v: want one per network of Figure 5", svgs)
	}
	t.Logf("the launcher's log:\n%s", log)
}

// TestSlurmCalibrationJob submits quick paper004-table1 (4 calibration
// points, 8 rows) in 4 shards to a real single-node cluster: a
// calibration job runs the 4 calibration points once, the array runs
// after it, and no shard repeats a calibration in memory.
func TestSlurmCalibrationJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and builds fabemu")
	}
	c := slurmtest.Start(t, 2, 4096)
	bin := buildFabemu(t)
	work := t.TempDir()
	spec := filepath.Join(work, "t1q.yaml")
	os.WriteFile(spec, []byte("experiment: paper004-table1\nquick: true\nshards: 4\n"), 0o644)
	res := filepath.Join(work, "results")
	out, err := c.Command(bin, "sweep", "submit", spec, "--slurm", "--out", res, "--watch", "--poll", "500ms").CombinedOutput()
	if err != nil {
		t.Fatalf("submit --watch: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("submitted the calibration points of every shard as job 1")) ||
		!bytes.Contains(out, []byte("as array job 2 (--mem=192M, after calibration job 1)")) || !bytes.Contains(out, []byte("merged 12 points")) {
		t.Errorf("launcher log:\n%s", out)
	}
	cal, _ := os.ReadFile(filepath.Join(res, "logs", "calibration-job-1.log"))
	if !bytes.Contains(cal, []byte("4 points: 4 ran")) {
		t.Errorf("calibration job log:\n%s", cal)
	}
	for i := range 4 {
		b, _ := os.ReadFile(filepath.Join(res, "logs", fmt.Sprintf("shard-%d-job-2.log", i)))
		if !bytes.Contains(b, []byte("3 points: 2 ran, 1 already done")) || bytes.Contains(b, []byte("calibration runs repeated")) ||
			bytes.Contains(b, []byte("resumed")) {
			t.Errorf("shard %d log:\n%s", i, b)
		}
	}
}
