package sweep

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// grid40 is a 40-point sweep: 2 patterns x 2 seeds x 10 loads on a
// 2x2 torus with one host per switch, 10 us per point.
const grid40 = `schema: fabemu.sweep/v1
name: grid40
grid:
  preset: paper004-torus4x4
  set: ["topology.k=[2, 2]", topology.hosts_per_switch=1, run.duration=10us, run.warmup=2us]
  axes:
    - {key: traffic.pattern, values: [uniform, bitrev]}
  seeds: [1, 2]
  loads: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
`

func plan(t *testing.T, spec string) *Plan {
	t.Helper()
	s, err := ParseSpec([]byte(spec), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runAll(t *testing.T, p *Plan, dir string, n, jobs int) {
	t.Helper()
	for i := range n {
		if _, err := Run(p, dir, RunOptions{Shard: i, Shards: n, Jobs: jobs}); err != nil {
			t.Fatalf("shard %d/%d: %v", i, n, err)
		}
	}
}

func merged(t *testing.T, dirs ...string) []byte {
	t.Helper()
	m, err := Merge(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPlanDeterministic(t *testing.T) {
	a, b := plan(t, grid40), plan(t, grid40)
	if len(a.Points) != 40 {
		t.Fatalf("%d points, want 40", len(a.Points))
	}
	var wa, wb bytes.Buffer
	if err := a.Write(&wa, 7); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(&wb, 7); err != nil {
		t.Fatal(err)
	}
	if wa.String() != wb.String() || a.Hash != b.Hash {
		t.Fatalf("two plans of one spec differ:\n%s\n%s", wa.String(), wb.String())
	}
	// every point in exactly one shard, for every sharding
	for _, n := range []int{1, 3, 7, 40, 41} {
		seen := map[int]int{}
		for i := range n {
			for _, k := range a.Shard(i, n) {
				seen[k]++
			}
		}
		for k := range a.Points {
			if seen[k] != 1 {
				t.Fatalf("%d shards: point %d in %d shards", n, k, seen[k])
			}
		}
	}
	// a changed spec is another plan
	c := plan(t, strings.Replace(grid40, "10us", "11us", 1))
	if c.Hash == a.Hash {
		t.Fatal("changing run.duration kept the plan hash")
	}
	if !strings.Contains(wa.String(), "MiB") {
		t.Fatalf("plan prints no memory estimate:\n%s", wa.String())
	}
}

func TestShardingsMergeIdentically(t *testing.T) {
	p := plan(t, grid40)
	root := t.TempDir()
	local := filepath.Join(root, "local")
	runAll(t, p, local, 1, 4) // the local run: one shard on a worker pool
	want := merged(t, local)
	for _, n := range []int{1, 3, 7, 40} {
		dir := filepath.Join(root, "n"+string(rune('a'+n%26)))
		runAll(t, p, dir, n, 1)
		if got := merged(t, dir); !bytes.Equal(got, want) {
			t.Fatalf("%d shards merge to other bytes than the local run", n)
		}
	}
	// the merged result gives the experiment's table and plot
	m, err := Merge(local)
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Result("merged.json")
	if err != nil {
		t.Fatal(err)
	}
	var tab bytes.Buffer
	if err := res.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "traffic.pattern=bitrev,run.seed=2") {
		t.Fatalf("table lacks a grid row:\n%s", tab.String())
	}
	// the setup names both seeds the rows ran with, not the first row's
	if !strings.Contains(tab.String(), "seeds 1, 2") {
		t.Fatalf("setup does not name the grid's seeds:\n%s", tab.String())
	}
	files, err := res.WritePlot(filepath.Join(root, "plot.svg"))
	if err != nil || len(files) != 1 {
		t.Fatalf("plot: %v %v", files, err)
	}
}

func TestKilledShardResumes(t *testing.T) {
	p := plan(t, grid40)
	root := t.TempDir()
	ref := filepath.Join(root, "ref")
	runAll(t, p, ref, 1, 2)
	want := merged(t, ref)

	dir := filepath.Join(root, "killed")
	runAll(t, p, dir, 3, 1)
	path := ShardFile(dir, 1, 3)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// cut the file in the middle of its last record: the trailer and half a record go
	lines := bytes.SplitAfter(data, []byte("\n"))
	last := lines[len(lines)-3] // lines: records..., trailer, ""
	cut := len(data) - len(lines[len(lines)-2]) - len(last)/2
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(dir); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("merge of a killed shard: %v, want it refused as cut short", err)
	}
	st, err := ReadStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != 39 || st.Total != 40 {
		t.Fatalf("status %d/%d, want 39/40", st.Done, st.Total)
	}
	rep, err := Run(p, dir, RunOptions{Shard: 1, Shards: 3, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 1 || rep.Skipped != rep.Points-1 || rep.Redone == "" {
		t.Fatalf("resume ran %d, skipped %d of %d (redone %q); want only the cut point run", rep.Ran, rep.Skipped, rep.Points, rep.Redone)
	}
	if got := merged(t, dir); !bytes.Equal(got, want) {
		t.Fatal("resumed shards merge to other bytes than the local run")
	}
	// a finished shard run again does nothing
	rep, err = Run(p, dir, RunOptions{Shard: 1, Shards: 3, Jobs: 1})
	if err != nil || rep.Ran != 0 {
		t.Fatalf("rerun of a finished shard: ran %d, %v", rep.Ran, err)
	}
}

func TestMergeRefusesDuplicatesNamesMissing(t *testing.T) {
	p := plan(t, grid40)
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	runAll(t, p, a, 3, 1)
	if _, err := Run(p, b, RunOptions{Shard: 0, Shards: 7, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := Merge(a, b)
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("merge with a duplicate: %v", err)
	}
	if err := os.Remove(ShardFile(a, 2, 3)); err != nil {
		t.Fatal(err)
	}
	_, err = Merge(a)
	if err == nil || !strings.Contains(err.Error(), "13 of 40 points missing") ||
		!strings.Contains(err.Error(), "#2 load:traffic.pattern=uniform,run.seed=1@0.3") {
		t.Fatalf("merge with a shard missing: %v", err)
	}
	// another plan's results in the same directory are refused
	q := plan(t, strings.Replace(grid40, "10us", "11us", 1))
	if _, err := Run(q, a, RunOptions{Shard: 0, Shards: 3, Jobs: 1}); err == nil || !strings.Contains(err.Error(), "plan") {
		t.Fatalf("run of another plan into a used directory: %v", err)
	}
}

func TestShardFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		env     func(string) string
		def     int
		i, n    int
		from    string
		wantErr string
	}{
		{env: env("JOB_COMPLETION_INDEX", "3", "FABEMU_SHARDS", "8"), i: 3, n: 8, from: "JOB_COMPLETION_INDEX and FABEMU_SHARDS"},
		{env: env("JOB_COMPLETION_INDEX", "3"), def: 4, i: 3, n: 4, from: "spec's shards"},
		{env: env("JOB_COMPLETION_INDEX", "3"), wantErr: "FABEMU_SHARDS"},
		{env: env("JOB_COMPLETION_INDEX", "9", "FABEMU_SHARDS", "8"), wantErr: "want 0 <= index < count"},
		{env: env("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "8"), i: 5, n: 8, from: "SLURM_ARRAY_TASK_COUNT"},
		{env: env("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "8", "SLURM_ARRAY_TASK_MIN", "1"), i: 4, n: 8, from: "SLURM_ARRAY_TASK_COUNT"},
		{env: env("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_MIN", "2", "SLURM_ARRAY_TASK_MAX", "9"), i: 3, n: 8, from: "SLURM_ARRAY_TASK_MAX"},
		// sbatch --array=0-6:2 (tasks 0, 2, 4, 6): shards 0..3 of 4, not
		// 0 and 2 run, 4 and 6 refused and 1 and 3 never run
		{env: env("SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_MAX", "6", "SLURM_ARRAY_TASK_STEP", "2"), i: 2, n: 4, from: "in steps of SLURM_ARRAY_TASK_STEP=2"},
		{env: env("SLURM_ARRAY_TASK_ID", "6", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_STEP", "2"), i: 3, n: 4, from: "SLURM_ARRAY_TASK_COUNT"},
		{env: env("SLURM_ARRAY_TASK_ID", "7", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "13", "SLURM_ARRAY_TASK_STEP", "3"), i: 2, n: 5, from: "SLURM_ARRAY_TASK_MAX"},
		{env: env("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_STEP", "2"), wantErr: "not SLURM_ARRAY_TASK_MIN=0 plus a multiple of SLURM_ARRAY_TASK_STEP=2"},
		{env: env("SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_STEP", "0"), wantErr: "SLURM_ARRAY_TASK_STEP=0: want a positive step"},
		// FABEMU_SHARDS: the task ID is the shard (a resubmission of the
		// odd shards, --array=1-7:2, reruns exactly those)
		{env: env("SLURM_ARRAY_TASK_ID", "3", "FABEMU_SHARDS", "8", "SLURM_ARRAY_TASK_STEP", "2", "SLURM_ARRAY_TASK_MIN", "1"), i: 3, n: 8, from: "FABEMU_SHARDS"},
		{env: env("SLURM_ARRAY_TASK_ID", "5"), wantErr: "cannot tell the shard count"},
		{env: env("SLURM_ARRAY_TASK_ID", "x", "SLURM_ARRAY_TASK_COUNT", "8"), wantErr: `SLURM_ARRAY_TASK_ID="x"`},
	} {
		s, ok, err := ShardFromEnv(c.env, c.def)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%+v: err %v, want %q", c, err, c.wantErr)
			}
			continue
		}
		if err != nil || !ok || s.Shard != c.i || s.Shards != c.n || !strings.Contains(s.From, c.from) {
			t.Errorf("got %+v %v %v, want %d/%d from %s", s, ok, err, c.i, c.n, c.from)
		}
	}
	if _, ok, err := ShardFromEnv(env(), 0); ok || err != nil {
		t.Errorf("empty environment: %v %v", ok, err)
	}
	if _, err := ParseShard("3/3"); err == nil {
		t.Error("--shard 3/3 accepted")
	}
}

func TestSpecErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"name: x\n", "give experiment or grid"},
		{"experiment: paper004-table1\ngrid: {preset: paper004-torus4x4}\n", "exactly one"},
		{"experiment: nowhere-at-all\n", "no experiment"},
		{"name: g\ngrid: {preset: nowhere}\n", `unknown preset "nowhere"`},
		{"name: g\ngrid: {preset: paper004-torus4x4, loads: [2]}\n", "grid.loads: 2"},
		{"name: g\ngrid: {preset: paper004-torus4x4, axes: [{key: no.such.key, values: [1]}]}\n", "no.such.key"},
		{"name: g\ngrid: {preset: paper004-torus4x4, sedes: [1]}\n", `test.yaml:2: unknown key "sedes"`},
		{"schema: other/v9\nexperiment: paper004-table1\n", "schema"},
	} {
		s, err := ParseSpec([]byte(c.spec), "test.yaml")
		if err == nil {
			_, err = NewPlan(s, "")
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.spec, err, c.want)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	f.Add([]byte(grid40))
	f.Add([]byte("experiment: paper004-fig5\nquick: true\nshards: 8\n"))
	f.Add([]byte("name: g\ngrid: {preset: paper004-torus4x4, axes: [{key: a, values: [1, 1]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec(data, "fuzz.yaml")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if (s.Experiment == "") == (s.Grid == nil) {
			t.Fatal("accepted a spec without exactly one of experiment and grid")
		}
	})
}
