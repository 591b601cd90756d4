package launch

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/fabemu/fabemu/sweep"
)

//go:embed kubernetes.yaml.tmpl
var kubernetesTemplate string

var kubeTmpl = template.Must(template.New("k8s").Parse(kubernetesTemplate))

// Kubernetes renders a sweep's Indexed Job (with its spec ConfigMap and
// results claim) and its merge Job from one template, so that the shard
// count, the image and the claim are each set in one place.
type Kubernetes struct {
	Plan *sweep.Plan
	// SpecText is the sweep spec the pods read (from a ConfigMap).
	SpecText string
	// Name prefixes every object (default fabemu-sweep).
	Name string
	// Image is the fabemu image; pin it by digest (name@sha256:...) so
	// that every pod runs the same binary (merge refuses mixed builds).
	Image string
	// Shards, Parallelism (default Shards) and Retries per index.
	Shards, Parallelism, Retries int
	// StorageClass is the claim's class (one offering ReadWriteMany);
	// Storage its size (default 1Gi).
	StorageClass, Storage string
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Render returns the sweep's manifest (ConfigMap, PersistentVolumeClaim,
// Indexed Job) and the merge Job's.
func (k *Kubernetes) Render() (sweepYAML, mergeYAML []byte, err error) {
	if k.Name == "" {
		k.Name = "fabemu-sweep"
	}
	if !dnsLabel.MatchString(k.Name) || len(k.Name) > 40 {
		return nil, nil, fmt.Errorf("name %q: want a DNS label of at most 40 characters (lower-case letters, digits, '-')", k.Name)
	}
	if k.Image == "" {
		return nil, nil, fmt.Errorf("no image: give the fabemu image, pinned by digest (--image registry/fabemu@sha256:...)")
	}
	if k.Shards < 1 || k.Shards > len(k.Plan.Points) {
		return nil, nil, fmt.Errorf("%d shards: want 1 to %d (the plan's points)", k.Shards, len(k.Plan.Points))
	}
	if k.Parallelism <= 0 || k.Parallelism > k.Shards {
		k.Parallelism = k.Shards
	}
	if k.Storage == "" {
		k.Storage = "1Gi"
	}
	if k.StorageClass != "" && !dnsLabel.MatchString(k.StorageClass) {
		return nil, nil, fmt.Errorf("storage class %q: want a DNS name", k.StorageClass)
	}
	// an image pinned by digest cannot change under a tag: pull it once
	pull := "Always"
	if strings.Contains(k.Image, "@sha256:") {
		pull = "IfNotPresent"
	}
	mem := sweep.RequestMiB(k.Plan.MaxMemoryMiB())
	spec := strings.TrimRight(k.SpecText, "\n")
	data := map[string]any{
		"Name": k.Name, "Sweep": k.Plan.Name, "Plan": k.Plan.Hash, "Points": len(k.Plan.Points),
		"Shards": k.Shards, "Parallelism": k.Parallelism, "Retries": k.Retries,
		"Image": k.Image, "PullPolicy": pull, "MemoryMiB": mem, "LimitMiB": 2 * mem,
		"StorageClass": k.StorageClass, "Storage": k.Storage,
		"SpecIndented": "    " + strings.ReplaceAll(spec, "\n", "\n    "),
	}
	var a, b bytes.Buffer
	if err := kubeTmpl.ExecuteTemplate(&a, "sweep", data); err != nil {
		return nil, nil, err
	}
	if err := kubeTmpl.ExecuteTemplate(&b, "merge", data); err != nil {
		return nil, nil, err
	}
	return a.Bytes(), b.Bytes(), nil
}

// jobStatusPath asks kubectl for a Job's true conditions, its succeeded
// count and its failed indexes, separated by '|'.
const jobStatusPath = `jsonpath={range .status.conditions[?(@.status=="True")]}{.type} {end}|{.status.succeeded}|{.status.failedIndexes}`

// WatchJob polls "kubectl get job" until the Job has the condition
// Complete (nil) or Failed (an error naming its failed indexes). A Job's
// pods are retried by the Job itself (backoffLimitPerIndex), so there is
// nothing to resubmit here; a failed Job is one whose shards used up
// their retries. Unlike "kubectl wait --for=condition=complete" it does
// not hang when the Job fails.
func WatchJob(name string, poll time.Duration, log io.Writer) error {
	if poll <= 0 {
		poll = 10 * time.Second
	}
	last := ""
	for {
		out, err := exec.Command("kubectl", "get", "job", name, "-o", jobStatusPath).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return fmt.Errorf("kubectl get job %s: %v: %s", name, err, strings.TrimSpace(string(ee.Stderr)))
			}
			return fmt.Errorf("kubectl: %w", err)
		}
		conds, rest, _ := strings.Cut(string(out), "|")
		succeeded, failed, _ := strings.Cut(rest, "|")
		for _, c := range strings.Fields(conds) {
			switch c {
			case "Complete":
				fmt.Fprintf(log, "job %s complete\n", name)
				return nil
			case "Failed":
				return fmt.Errorf("job %s failed (failed indexes: %s): see kubectl describe job %s and its pods' logs; "+
					"the shards resume when the Job is applied again", name, strings.TrimSpace(failed), name)
			}
		}
		line := fmt.Sprintf("job %s: %s pods succeeded", name, strings.TrimSpace(succeeded))
		if line != last {
			fmt.Fprintln(log, line)
			last = line
		}
		time.Sleep(poll)
	}
}
