package slurmtest

import (
	"strings"
	"testing"
	"time"
)

// TestClusterRunsAnArray: the cluster starts and runs a two-task array
// submitted with sbatch; squeue reports both tasks COMPLETED.
func TestClusterRunsAnArray(t *testing.T) {
	c := Start(t, 2, 2048)
	out, err := c.Command("sbatch", "--parsable", "--array=0-1", "--mem=64M", "--output="+c.Dir+"/t-%a.log",
		"--wrap", "echo task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT").CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch: %v\n%s\n%s", err, out, c.Log("slurmctld.log"))
	}
	job := strings.TrimSpace(string(out))
	deadline := time.Now().Add(2 * time.Minute) // a hang, not a timing check
	for {
		out, err := c.Command("squeue", "-h", "-t", "all", "-j", job, "-o", "%K %T").Output()
		if err != nil {
			t.Fatalf("squeue: %v", err)
		}
		s := strings.Fields(string(out))
		if strings.Count(string(out), "COMPLETED") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("array %s: %v\n%s", job, s, c.Log("slurmctld.log", "slurmd.log"))
		}
		time.Sleep(300 * time.Millisecond)
	}
}
