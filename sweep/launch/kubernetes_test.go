package launch

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/sweep"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const gridSpec = `name: tiny
grid:
  preset: paper004-torus4x4
  set: ["topology.k=[2, 2]", topology.hosts_per_switch=1, run.duration=10us, run.warmup=2us]
  axes: [{key: traffic.pattern, values: [uniform, bitrev]}]
  loads: [0.2, 0.5, 0.8]
`

// TestKubernetesRender: the rendered manifests decode strictly into the
// Kubernetes API types (a misspelt field fails), and the shard count,
// the claim, the storage class and the image appear where they must,
// from the one value each was given.
func TestKubernetesRender(t *testing.T) {
	s, err := sweep.ParseSpec([]byte(gridSpec), "tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sweep.NewPlan(s, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shards int
		class  string
		image  string
		pull   corev1.PullPolicy
	}{
		{3, "nfs-rwx", "registry.example/fabemu@sha256:" + strings.Repeat("ab", 32), corev1.PullIfNotPresent},
		{6, "", "registry.example/fabemu:latest", corev1.PullAlways},
	} {
		k := &Kubernetes{Plan: p, SpecText: gridSpec, Name: "tiny", Image: tc.image, Shards: tc.shards, Retries: 2, StorageClass: tc.class}
		a, b, err := k.Render()
		if err != nil {
			t.Fatal(err)
		}
		docs := regexp.MustCompile(`(?m)^---\s*$`).Split(string(a), -1)
		if len(docs) != 3 {
			t.Fatalf("%d documents", len(docs))
		}
		var cm corev1.ConfigMap
		var pvc corev1.PersistentVolumeClaim
		var job, merge batchv1.Job
		for i, v := range []any{&cm, &pvc, &job} {
			if err := yaml.UnmarshalStrict([]byte(docs[i]), v); err != nil {
				t.Fatalf("document %d: %v\n%s", i, err, docs[i])
			}
		}
		if err := yaml.UnmarshalStrict(b, &merge); err != nil {
			t.Fatal(err)
		}
		if cm.Data["sweep.yaml"] != gridSpec {
			t.Errorf("ConfigMap spec %q", cm.Data["sweep.yaml"])
		}
		js := job.Spec
		if *js.Completions != int32(tc.shards) || *js.Parallelism != int32(tc.shards) || *js.BackoffLimitPerIndex != 2 ||
			*js.PodReplacementPolicy != batchv1.Failed || *js.CompletionMode != batchv1.IndexedCompletion {
			t.Errorf("job spec %+v", js)
		}
		c := js.Template.Spec.Containers[0]
		if c.Env[0].Name != "FABEMU_SHARDS" || c.Env[0].Value != fmt.Sprint(tc.shards) || c.Image != tc.image || c.ImagePullPolicy != tc.pull {
			t.Errorf("container %+v", c)
		}
		if got := pvc.Spec.StorageClassName; (tc.class == "") != (got == nil) || (got != nil && *got != tc.class) {
			t.Errorf("storage class %v, want %q", got, tc.class)
		}
		claim := js.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
		if claim != pvc.Name || merge.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name || pvc.Name != "tiny-results" {
			t.Errorf("claims %q %q", claim, pvc.Name)
		}
		if merge.Spec.Template.Spec.Containers[0].Image != tc.image || merge.Name != "tiny-merge" {
			t.Errorf("merge job %+v", merge)
		}
	}
	for _, bad := range []Kubernetes{
		{Plan: p, Image: "x", Shards: 7},
		{Plan: p, Image: "", Shards: 2},
		{Plan: p, Image: "x", Shards: 2, Name: "Bad_Name"},
	} {
		if _, _, err := bad.Render(); err == nil {
			t.Errorf("%+v rendered", bad)
		}
	}
}
