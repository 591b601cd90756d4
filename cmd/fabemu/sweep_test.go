package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSweepCmd(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "tiny.yaml")
	os.WriteFile(spec, []byte(`name: tiny
grid:
  preset: paper004-torus4x4
  set: ["topology.k=[2, 2]", topology.hosts_per_switch=1, run.duration=10us, run.warmup=2us]
  axes: [{key: traffic.pattern, values: [uniform, bitrev]}]
  loads: [0.2, 0.5]
shards: 2
`), 0o644)
	out, err := runTrace(t, "sweep", "plan", spec)
	if err != nil || !strings.Contains(out, "4 points") || !strings.Contains(out, "2 shards") || !strings.Contains(out, "load:traffic.pattern=bitrev@0.5") {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	res := filepath.Join(dir, "res")
	if _, err := runTrace(t, "sweep", "run", spec, "--out", res, "--shard", "0/2"); err != nil {
		t.Fatal(err)
	}
	out, err = runTrace(t, "sweep", "status", res)
	if err != nil || !strings.Contains(out, "2/4 points done") || !strings.Contains(out, "merge: not ready") ||
		!strings.Contains(out, "missing") || strings.Contains(out, "ETA") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, err = runTrace(t, "sweep", "status", res, "--json")
	if err != nil || !strings.Contains(out, `"merge_ready": false`) || !strings.Contains(out, `"state": "missing"`) {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	// the whole sweep into this 2-shard directory is refused
	if _, err := runTrace(t, "sweep", "run", spec, "--out", res); err == nil || !strings.Contains(err.Error(), "in 2 shards") {
		t.Fatalf("shard 0/1 into a 2-shard directory: %v", err)
	}
	merged := filepath.Join(dir, "merged.json")
	if _, err := runTrace(t, "sweep", "merge", res, "--out", merged); err == nil || !strings.Contains(err.Error(), "2 of 4 points missing") {
		t.Fatalf("merge of half a sweep: %v", err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	t.Setenv("FABEMU_SHARDS", "2")
	if _, err := runTrace(t, "sweep", "run", spec, "--out", res); err != nil {
		t.Fatal(err)
	}
	if _, err := runTrace(t, "sweep", "merge", res, "--out", merged); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "tiny.svg")
	out, err = runTrace(t, "plot", merged, "--plot", svg)
	if err != nil || !strings.Contains(out, "traffic.pattern=bitrev") || !strings.Contains(out, "invariants: OK") {
		t.Fatalf("plot: %v\n%s", err, out)
	}
	if _, err := os.Stat(svg); err != nil {
		t.Fatal(err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: b\ngrid:\n  preset: paper004-torus4x4\n  lods: [0.1]\n"), 0o644)
	if _, err := runTrace(t, "sweep", "plan", bad); err == nil || !strings.Contains(err.Error(), bad+":4") {
		t.Errorf("bad spec: %v, want file:line", err)
	}
	if _, err := runTrace(t, "sweep", "run", spec, "--shard", "2/2"); err == nil || !strings.Contains(err.Error(), "--shard") {
		t.Errorf("--shard 2/2: %v", err)
	}
	if _, err := runTrace(t, "plot", spec); err == nil || !strings.Contains(err.Error(), spec) {
		t.Errorf("plot of a spec: %v, want the file named", err)
	}
}

func TestSweepSubmitCmd(t *testing.T) {
	dir := t.TempDir()
	if _, err := runTrace(t, "sweep", "submit", "paper004-fig5", "--out", dir); err == nil || !strings.Contains(err.Error(), "--slurm or --k8s") {
		t.Errorf("no scheduler: %v", err)
	}
	if _, err := runTrace(t, "sweep", "submit", "paper004-fig5", "--k8s", "--dry-run", "--out", dir); err == nil || !strings.Contains(err.Error(), "no image") {
		t.Errorf("--k8s without an image: %v", err)
	}
	if _, err := runTrace(t, "sweep", "submit", "../../deploy/examples/fig5-quick.yaml", "--k8s", "--dry-run", "--out", dir, "--image", "r/fabemu:1", "--shards", "5"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fabemu-sweep.yaml"))
	if err != nil || !strings.Contains(string(b), "completions: 5") || !strings.Contains(string(b), `value: "5"`) || !strings.Contains(string(b), "podReplacementPolicy: Failed") {
		t.Fatalf("rendered manifest: %v\n%s", err, b)
	}
	if _, err := runTrace(t, "sweep", "submit", "paper004-fig5", "--k8s", "--watch", "--dry-run", "--image", "x", "--out", dir); err == nil || !strings.Contains(err.Error(), "nothing is applied") {
		t.Errorf("--k8s --watch --dry-run: %v", err)
	}
}

// fakeKubectl answers apply, get job (the sweep's Job running for two
// polls, then Complete or, with FAKE_FAIL, Failed with index 3) and logs.
const fakeKubectl = `#!/bin/bash
echo "$*" >> "$FAKE/calls"
case $1 in
apply) echo "applied $3";;
get)
	n=$(($(cat "$FAKE/n-$3" 2>/dev/null || echo 0) + 1)); echo $n > "$FAKE/n-$3"
	if (( n < 3 )); then echo -n "|$n|"; elif [[ -n $FAKE_FAIL && $3 != *-merge ]]; then echo -n "FailureTarget Failed |4|3"; else echo -n "SuccessCriteriaMet Complete |5|"; fi;;
logs) echo "the table";;
esac
`

func TestSweepSubmitKubernetesWatch(t *testing.T) {
	fake := t.TempDir()
	os.WriteFile(filepath.Join(fake, "kubectl"), []byte(fakeKubectl), 0o755)
	t.Setenv("PATH", fake+":"+os.Getenv("PATH"))
	t.Setenv("FAKE", fake)
	dir := t.TempDir()
	out, err := runTrace(t, "sweep", "submit", "../../deploy/examples/fig5-quick.yaml", "--k8s", "--watch", "--poll", "1ms", "--image", "r/fabemu:1", "--out", dir)
	if err != nil || !strings.Contains(out, "the table") {
		t.Fatalf("%v\n%s", err, out)
	}
	calls, _ := os.ReadFile(filepath.Join(fake, "calls"))
	want := "apply -f " + filepath.Join(dir, "fabemu-sweep.yaml")
	if !strings.HasPrefix(string(calls), want) || !strings.Contains(string(calls), "apply -f "+filepath.Join(dir, "fabemu-sweep-merge.yaml")) ||
		!strings.Contains(string(calls), "logs job/fabemu-sweep-merge -c plot") || strings.Count(string(calls), "get job fabemu-sweep ") != 3 {
		t.Fatalf("kubectl calls:\n%s", calls)
	}
	os.Remove(filepath.Join(fake, "n-fabemu-sweep"))
	t.Setenv("FAKE_FAIL", "1")
	_, err = runTrace(t, "sweep", "submit", "../../deploy/examples/fig5-quick.yaml", "--k8s", "--watch", "--poll", "1ms", "--image", "r/fabemu:1", "--out", dir)
	if err == nil || !strings.Contains(err.Error(), "job fabemu-sweep failed (failed indexes: 3)") {
		t.Fatalf("failed Job: %v", err)
	}
}
