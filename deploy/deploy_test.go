// Package deploy holds what runs fabemu outside a shell: the daemon's
// systemd unit, and the container image, Kubernetes manifests and Slurm
// script that run sweeps on a cluster (docs/sweeps.md).
// Its tests check them without a cluster: the manifests decode strictly
// into the Kubernetes API types, the script passes bash -n and its dry run
// (the array's variables set by hand) merges to the local run's bytes, and
// the Dockerfile has the stages and settings the recipes rely on.
package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fabemu/fabemu/sweep"
	"github.com/fabemu/fabemu/sweep/launch"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// documents splits a multi-document YAML file.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// strict decodes a document into a Kubernetes API type, refusing unknown
// and duplicate fields.
func strict(t *testing.T, path string, doc []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestKubernetesSweepJob(t *testing.T) {
	path := filepath.Join("kubernetes", "fabemu-sweep.yaml")
	docs := documents(t, path)
	if len(docs) != 3 {
		t.Fatalf("%s: %d documents, want ConfigMap, PersistentVolumeClaim, Job", path, len(docs))
	}
	var cm corev1.ConfigMap
	var pvc corev1.PersistentVolumeClaim
	var job batchv1.Job
	strict(t, path, docs[0], &cm)
	strict(t, path, docs[1], &pvc)
	strict(t, path, docs[2], &job)
	for _, k := range []struct{ got, want string }{{cm.Kind, "ConfigMap"}, {pvc.Kind, "PersistentVolumeClaim"}, {job.Kind, "Job"}, {job.APIVersion, "batch/v1"}} {
		if k.got != k.want {
			t.Errorf("%s: kind/apiVersion %q, want %q", path, k.got, k.want)
		}
	}

	// the spec in the ConfigMap is a valid sweep
	spec, err := sweep.ParseSpec([]byte(cm.Data["sweep.yaml"]), path+": ConfigMap sweep.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sweep.NewPlan(spec, "")
	if err != nil {
		t.Fatal(err)
	}

	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Parallelism < 1 || *s.Parallelism > *s.Completions {
		t.Fatalf("completions %v, parallelism %v: want both, 1 <= parallelism <= completions", s.Completions, s.Parallelism)
	}
	shards := int(*s.Completions)
	if spec.Shards != shards {
		t.Errorf("spec shards %d, Job completions %d: keep them equal", spec.Shards, shards)
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever && s.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restartPolicy %q", s.Template.Spec.RestartPolicy)
	}
	if sc := s.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Error("the pod must run as a non-root user")
	}
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(s.Template.Spec.Containers))
	}
	c := s.Template.Spec.Containers[0]
	cmd := strings.Join(c.Command, " ")
	if !strings.HasPrefix(cmd, "/fabemu sweep run /spec/sweep.yaml --out /results") || strings.Contains(cmd, "--shard") {
		t.Errorf("command %q: want fabemu sweep run on the ConfigMap's spec into /results, the shard from the Job's index", cmd)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["FABEMU_SHARDS"] != fmt.Sprint(shards) {
		t.Errorf("FABEMU_SHARDS %q, want the completions, %d", env["FABEMU_SHARDS"], shards)
	}
	// the shard each pod runs, as fabemu reads it from the pod's environment
	for i := range shards {
		sh, ok, err := sweep.ShardFromEnv(func(k string) string {
			if k == "JOB_COMPLETION_INDEX" {
				return fmt.Sprint(i)
			}
			return env[k]
		}, 0)
		if err != nil || !ok || sh.Shard != i || sh.Shards != shards {
			t.Errorf("pod %d: shard %+v %v %v", i, sh, ok, err)
		}
	}
	mem := c.Resources.Requests[corev1.ResourceMemory]
	want := resource.MustParse(fmt.Sprintf("%dMi", plan.MaxMemoryMiB()))
	if mem.Cmp(want) < 0 {
		t.Errorf("memory request %s below the plan's estimate %s", mem.String(), want.String())
	}
	if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && lim.Cmp(mem) < 0 {
		t.Errorf("memory limit %s below the request %s", lim.String(), mem.String())
	}
	// volumes: results on the claim, the spec from the ConfigMap
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	vols := map[string]corev1.Volume{}
	for _, v := range s.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	if mounts["results"] != "/results" || vols["results"].PersistentVolumeClaim == nil || vols["results"].PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("results: mount %q, volume %+v; want /results on claim %s", mounts["results"], vols["results"], pvc.Name)
	}
	if mounts["spec"] != "/spec" || vols["spec"].ConfigMap == nil || vols["spec"].ConfigMap.Name != cm.Name {
		t.Errorf("spec: mount %q, volume %+v; want /spec from ConfigMap %s", mounts["spec"], vols["spec"], cm.Name)
	}
	if s.PodReplacementPolicy == nil || *s.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("podReplacementPolicy %v: want Failed (a replacement pod must not overlap the one it replaces)", s.PodReplacementPolicy)
	}
	if len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany {
		t.Errorf("claim access modes %v: pods on several nodes write it, want ReadWriteMany", pvc.Spec.AccessModes)
	}
}

func TestKubernetesMergeJob(t *testing.T) {
	path := filepath.Join("kubernetes", "fabemu-sweep-merge.yaml")
	docs := documents(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", path, len(docs))
	}
	var job batchv1.Job
	strict(t, path, docs[0], &job)
	p := job.Spec.Template.Spec
	if len(p.InitContainers) != 1 || len(p.Containers) != 1 {
		t.Fatalf("want a merge init container and a plot container")
	}
	if got := strings.Join(p.InitContainers[0].Command, " "); !strings.HasPrefix(got, "/fabemu sweep merge /results --out /results/merged.json") {
		t.Errorf("merge command %q", got)
	}
	if got := strings.Join(p.Containers[0].Command, " "); !strings.HasPrefix(got, "/fabemu plot /results/merged.json") {
		t.Errorf("plot command %q", got)
	}
	if len(p.Volumes) != 1 || p.Volumes[0].PersistentVolumeClaim == nil || p.Volumes[0].PersistentVolumeClaim.ClaimName != "fabemu-sweep-results" {
		t.Errorf("volumes %+v: want the sweep's claim", p.Volumes)
	}
}

// TestKubernetesManifestsRendered: the shipped manifests are the
// launcher's rendering of deploy/examples/paper004-table1.yaml, so that
// they and "fabemu sweep submit --k8s" cannot drift apart. Regenerate
// them with the command in the failure message.
func TestKubernetesManifestsRendered(t *testing.T) {
	const specPath = "examples/paper004-table1.yaml"
	text, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	s, dir, err := sweep.LoadSpec(specPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sweep.NewPlan(s, dir)
	if err != nil {
		t.Fatal(err)
	}
	k := &launch.Kubernetes{Plan: p, SpecText: string(text), Image: "registry.example/fabemu:latest", Shards: s.Shards, Retries: 3}
	a, b, err := k.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{"kubernetes/fabemu-sweep.yaml", a}, {"kubernetes/fabemu-sweep-merge.yaml", b}} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is not the launcher's rendering; regenerate it with: go run ./cmd/fabemu sweep submit deploy/examples/paper004-table1.yaml --k8s --dry-run --out deploy/kubernetes --image registry.example/fabemu:latest", f.path)
		}
	}
}

// buildFabemu builds the binary the script dry run executes.
func buildFabemu(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fabemu")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/fabemu").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

const tinySpec = `schema: fabemu.sweep/v1
name: tiny
grid:
  preset: paper004-torus4x4
  set: ["topology.k=[2, 2]", topology.hosts_per_switch=1, run.duration=10us, run.warmup=2us]
  axes: [{key: traffic.pattern, values: [uniform, bitrev]}]
  loads: [0.2, 0.5, 0.8]
`

func TestSlurmScript(t *testing.T) {
	script := filepath.Join("slurm", "fabemu-sweep.sbatch")
	if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", script, err, out)
	}
	if testing.Short() {
		t.Skip("the dry run builds fabemu")
	}
	bin := buildFabemu(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(spec, []byte(tinySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 4
	for i := range n {
		cmd := exec.Command("bash", script, spec, filepath.Join(dir, "array"))
		cmd.Env = append(os.Environ(), "FABEMU_BIN="+bin, fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", i), fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%d", n))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("task %d: %v\n%s", i, err, out)
		}
		if !bytes.Contains(out, []byte(fmt.Sprintf("shard %d/%d (SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT)", i, n))) {
			t.Errorf("task %d does not say where its shard came from:\n%s", i, out)
		}
	}
	// task 2 killed mid-file, resubmitted alone with the original count
	f2 := sweep.ShardFile(filepath.Join(dir, "array"), 2, n)
	data, err := os.ReadFile(f2)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f2, data[:len(data)/2], 0o644)
	cmd := exec.Command("bash", script, spec, filepath.Join(dir, "array"))
	cmd.Env = append(os.Environ(), "FABEMU_BIN="+bin, "SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_COUNT=1", "SLURM_ARRAY_TASK_MIN=2", fmt.Sprintf("FABEMU_SHARDS=%d", n))
	if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte(fmt.Sprintf("shard 2/%d (--shard)", n))) || !bytes.Contains(out, []byte("resumed")) {
		t.Fatalf("resubmitted task 2: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "sweep", "run", spec, "--out", filepath.Join(dir, "local"), "--jobs", "2").CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, out)
	}
	var merged [2][]byte
	for k, d := range []string{"array", "local"} {
		out := filepath.Join(dir, d+".json")
		if o, err := exec.Command(bin, "sweep", "merge", filepath.Join(dir, d), "--out", out).CombinedOutput(); err != nil {
			t.Fatalf("merge %s: %v\n%s", d, err, o)
		}
		merged[k], _ = os.ReadFile(out)
	}
	if len(merged[0]) == 0 || !bytes.Equal(merged[0], merged[1]) {
		t.Fatal("the job array's merged result differs from the local run's")
	}
	// without the array's variables the script refuses to run
	cmd = exec.Command("bash", script, spec, filepath.Join(dir, "x"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "FABEMU_BIN=" + bin}
	if out, err := cmd.CombinedOutput(); err == nil || !bytes.Contains(out, []byte("SLURM_ARRAY_TASK_ID is not set")) {
		t.Errorf("script outside an array: %v\n%s", err, out)
	}
}

// TestDockerfile checks the Dockerfile's structure (no container engine
// runs the build here): a build stage compiling a static binary and a
// final stage from an empty base, running as a non-root user with fabemu
// as its entry point. Every line is a known instruction.
func TestDockerfile(t *testing.T) {
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]bool{"FROM": true, "WORKDIR": true, "COPY": true, "RUN": true, "USER": true, "ENV": true,
		"ENTRYPOINT": true, "CMD": true, "ARG": true, "LABEL": true}
	type stage struct {
		from, name string
		lines      []string
	}
	var stages []stage
	sc := bufio.NewScanner(f)
	cont := false
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cont {
			cont = strings.HasSuffix(line, "\\")
			stages[len(stages)-1].lines[len(stages[len(stages)-1].lines)-1] += " " + line
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		if !known[word] {
			t.Fatalf("Dockerfile:%d: unknown instruction %q", n, word)
		}
		if word == "FROM" {
			fs := strings.Fields(rest)
			st := stage{from: fs[0]}
			if len(fs) == 3 && strings.EqualFold(fs[1], "AS") {
				st.name = fs[2]
			}
			stages = append(stages, st)
		} else if len(stages) == 0 {
			t.Fatalf("Dockerfile:%d: %s before FROM", n, word)
		}
		stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		cont = strings.HasSuffix(line, "\\")
	}
	if len(stages) != 2 || stages[0].name != "build" || stages[1].from != "scratch" {
		t.Fatalf("stages %+v: want a build stage and a final stage FROM scratch", stages)
	}
	build := strings.Join(stages[0].lines, "\n")
	if !strings.Contains(build, "CGO_ENABLED=0 go build") || !strings.Contains(build, "./cmd/fabemu") {
		t.Error("the build stage must build ./cmd/fabemu with CGO_ENABLED=0 (a static binary)")
	}
	final := strings.Join(stages[1].lines, "\n")
	for _, want := range []string{"COPY --from=build /out/passwd /etc/passwd", "USER 65532:65532", `ENTRYPOINT ["/fabemu"]`} {
		if !strings.Contains(final, want) {
			t.Errorf("final stage lacks %q", want)
		}
	}
	if !strings.Contains(build, "fabemu:x:65532:65532:") {
		t.Error("the passwd entry must name user 65532, which USER and the manifests' runAsUser use")
	}
	// the Go image is go.mod's version, and the build stays on it
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goVersion == nil || !strings.HasPrefix(stages[0].from, "golang:"+string(goVersion[1])+"-") && stages[0].from != "golang:"+string(goVersion[1]) {
		t.Errorf("build stage FROM %s: want golang:%s (go.mod's go version)", stages[0].from, goVersion[1])
	}
	if !strings.Contains(build, "ENV GOTOOLCHAIN=local") {
		t.Error("the build stage must set GOTOOLCHAIN=local (no toolchain download, the pinned image's Go)")
	}
	if !strings.Contains(build, "-X github.com/fabemu/fabemu/sweep.stampedRevision=${REVISION}") || !strings.Contains(build, "ARG REVISION") {
		t.Error("the build must stamp the revision (the context has no .git)")
	}
	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".git", "**/*.jsonl", "/results"} {
		if !slices.Contains(strings.Split(string(ignore), "\n"), want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
}

// TestStampedRevision: a binary built as the Dockerfile builds it
// (-buildvcs=false, the revision given with -X) records that revision in
// its sweep results.
func TestStampedRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fabemu")
	}
	bin := filepath.Join(t.TempDir(), "fabemu")
	out, err := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-X github.com/fabemu/fabemu/sweep.stampedRevision=0123abcd", "-o", bin, "../cmd/fabemu").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	spec := filepath.Join(dir, "tiny.yaml")
	os.WriteFile(spec, []byte(tinySpec), 0o644)
	if out, err := exec.Command(bin, "sweep", "run", spec, "--out", filepath.Join(dir, "r"), "--shard", "0/6", "--jobs", "1").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, _ := os.ReadFile(sweep.ShardFile(filepath.Join(dir, "r"), 0, 6))
	if !bytes.Contains(data, []byte(`"build":"github.com/fabemu/fabemu@(devel) rev 0123abcd"`)) {
		t.Fatalf("the record does not carry the stamped revision:\n%s", data)
	}
}

// TestShardLockAcrossProcesses: while another process holds a shard's
// lock, "fabemu sweep run" of that shard refuses with the holder's name
// and writes nothing; once the holder is gone the run goes ahead.
func TestShardLockAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fabemu")
	}
	bin := buildFabemu(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(spec, []byte(tinySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "res")
	os.MkdirAll(res, 0o755)
	file := sweep.ShardFile(res, 1, 2)
	lf, err := os.OpenFile(file+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	lf.WriteString("pid 4242 on host node7 since 2026-11-27T00:00:00Z\n")
	out, err := exec.Command(bin, "sweep", "run", spec, "--out", res, "--shard", "1/2", "--jobs", "1").CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("is being written by pid 4242 on host node7")) {
		t.Fatalf("run of a locked shard: %v\n%s", err, out)
	}
	if _, err := os.Stat(file); err == nil {
		t.Fatal("the refused run created the shard file")
	}
	lf.Close() // the holder is gone
	if out, err := exec.Command(bin, "sweep", "run", spec, "--out", res, "--shard", "1/2", "--jobs", "1").CombinedOutput(); err != nil ||
		!bytes.Contains(out, []byte("took over")) {
		t.Fatalf("run after the holder exited: %v\n%s", err, out)
	}
}
