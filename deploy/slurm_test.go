package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/slurmtest"
)

// waitJob polls squeue until every task of job has ended, and returns
// their states.
func waitJob(t *testing.T, c *slurmtest.Cluster, job string) []string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute) // a hang, not a timing check
	for {
		out, err := c.Command("squeue", "-h", "-r", "-t", "all", "-j", job, "-o", "%T").Output()
		if err != nil {
			t.Fatalf("squeue: %v", err)
		}
		states := strings.Fields(string(out))
		done := len(states) > 0
		for _, s := range states {
			if s == "PENDING" || s == "RUNNING" || s == "CONFIGURING" || s == "COMPLETING" {
				done = false
			}
		}
		if done {
			return states
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %v\n%s", job, states, c.Log("slurmctld.log"))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestSlurmRecipeByHand runs docs/sweeps.md's hand recipe on a real
// single-node cluster: a 4-task array with one task failing, the merge
// after afterany (which runs and names the incomplete shard instead of
// waiting forever), the failed task resubmitted alone without
// FABEMU_SHARDS (refused by the directory) and with it (resumes), the
// merge again. Logs and results land under the results directory only.
func TestSlurmRecipeByHand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and builds fabemu")
	}
	c := slurmtest.Start(t, 2, 4096)
	bin := buildFabemu(t)
	work := t.TempDir()
	spec := filepath.Join(work, "tiny.yaml")
	os.WriteFile(spec, []byte(tinySpec), 0o644)
	failing := filepath.Join(work, "fabemu-fails-task-2")
	os.WriteFile(failing, []byte(fmt.Sprintf("#!/bin/bash\n[[ $SLURM_ARRAY_TASK_ID == 2 ]] && { echo task 2 fails >&2; exit 1; }\nexec %q \"$@\"\n", bin)), 0o755)
	out := filepath.Join(work, "results")
	os.MkdirAll(filepath.Join(out, "logs"), 0o755)
	cwd := filepath.Join(work, "checkout")
	os.Mkdir(cwd, 0o755)
	script, _ := filepath.Abs(filepath.Join("slurm", "fabemu-sweep.sbatch"))
	sbatch := func(args ...string) string {
		t.Helper()
		cmd := c.Command("sbatch", append([]string{"--parsable"}, args...)...)
		cmd.Dir = cwd
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch %v: %v\n%s", args, err, b)
		}
		id, _, _ := strings.Cut(strings.TrimSpace(string(b)), ";")
		return id
	}
	task := func(array, export string) string {
		return sbatch("--array="+array, "--export=ALL,"+export, "--chdir="+out, "--output="+out+"/logs/shard-%a-job-%A.log", script, spec, out)
	}
	merge := func(after string) string {
		return sbatch("--dependency=afterany:"+after, "--chdir="+out, "--output="+out+"/logs/merge-%j.log", "--wrap",
			bin+" sweep merge "+out+" --out "+out+"/merged.json && "+bin+" plot "+out+"/merged.json --plot "+out+"/figure.svg")
	}
	arr := task("0-3", "FABEMU_SHARDS=4,FABEMU_BIN="+failing)
	m1 := merge(arr)
	if states := waitJob(t, c, arr); strings.Count(strings.Join(states, " "), "FAILED") != 1 {
		t.Fatalf("array states %v: want task 2 failed", states)
	}
	if states := waitJob(t, c, m1); states[0] != "FAILED" {
		t.Fatalf("the merge after a failed task: %v, want it run and failed", states)
	}
	log, _ := os.ReadFile(filepath.Join(out, "logs", "merge-"+m1+".log"))
	if !strings.Contains(string(log), "shard-0002-of-0004.jsonl") && !strings.Contains(string(log), "points missing") {
		t.Errorf("the merge does not name what is missing:\n%s", log)
	}
	// resubmitted alone without FABEMU_SHARDS: shard 0 of 1, refused
	bad := task("2", "FABEMU_BIN="+bin)
	if states := waitJob(t, c, bad); states[0] != "FAILED" {
		t.Fatalf("task 2 without FABEMU_SHARDS: %v, want refused", states)
	}
	log, _ = os.ReadFile(filepath.Join(out, "logs", "shard-2-job-"+bad+".log"))
	if !strings.Contains(string(log), "in 4 shards") || !strings.Contains(string(log), "FABEMU_SHARDS=4") {
		t.Errorf("the refusal does not name the shard counts:\n%s", log)
	}
	// with it: the task runs shard 2 of 4, and the merge succeeds
	good := task("2", "FABEMU_SHARDS=4,FABEMU_BIN="+bin)
	m2 := merge(good)
	if states := waitJob(t, c, m2); states[0] != "COMPLETED" {
		log, _ := os.ReadFile(filepath.Join(out, "logs", "merge-"+m2+".log"))
		t.Fatalf("merge after the resubmission: %v\n%s", states, log)
	}
	for _, f := range []string{"merged.json", "figure.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("the recipe wrote into the directory sbatch ran from: %v", ents)
	}
}
