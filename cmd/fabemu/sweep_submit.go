package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/sweep"
	"github.com/fabemu/fabemu/sweep/launch"
	"github.com/spf13/cobra"
)

func newSweepSubmitCmd() *cobra.Command {
	var out, bin, image, storageClass, name string
	var slurm, k8s, watch, dryRun bool
	var shards, jobs, retries int
	var poll time.Duration
	var sbatch []string
	cmd := &cobra.Command{
		Use:   "submit SPEC.yaml|EXPERIMENT --slurm|--k8s --out DIR",
		Short: "Submit a sweep to Slurm (job arrays; --watch retries failed shards, merges and plots) or Kubernetes (an Indexed Job)",
		Long: `Submit the shards of a sweep whose files in --out are not complete. With
--slurm: sbatch job arrays of one task per shard (grouped by memory: each
task asks for the largest estimate of its points times --jobs), logs
under DIR/logs, scripts under DIR/slurm, the working directory DIR; when
the plan has calibration points, a calibration job runs them all first and
the shards depend on it. With --watch it then polls squeue and the results
directory, resubmits a shard whose task ended without completing its file
(at most --retries times; twice the memory after OUT_OF_MEMORY), and when
every shard is complete merges into DIR/merged.json and plots into
DIR/figure.svg (DIR/figure-NETWORK.svg for several networks) and
DIR/table.json. The spec, DIR and the binary must be on a file system
every node sees.

With --k8s: render DIR/NAME.yaml (the spec as a ConfigMap, a ReadWriteMany
claim of --storage-class, the Indexed Job with the shard count set once,
podReplacementPolicy: Failed) and DIR/NAME-merge.yaml from one template,
and apply the first with kubectl (not with --dry-run). With --watch it
then polls the Job (its pods are retried by the Job itself, per index)
until it is Complete, applies the merge Job, waits for it and prints the
table from its log; a Failed Job is reported with its failed indexes.`,
		Example: `  fabemu sweep submit deploy/examples/fig5-quick.yaml --slurm --out "$PWD/fig5" --watch
  fabemu sweep submit deploy/examples/paper004-table1.yaml --slurm --out /shared/t1 --sbatch=--partition=long --sbatch=--time=4:00:00`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if slurm == k8s {
				return fmt.Errorf("give --slurm or --k8s (the scheduler to submit to), one of them")
			}
			if out == "" {
				return fmt.Errorf("--out: the results directory is required")
			}
			if err := checkShardsFlag(cmd, shards); err != nil {
				return err
			}
			p, err := loadPlan(args[0])
			if err != nil {
				return err
			}
			if shards == 0 {
				shards = p.Spec.Shards
			}
			if shards == 0 {
				shards = min(len(p.Points), 4)
			}
			if k8s {
				return submitKubernetes(cmd, p, args[0], out, name, image, storageClass, shards, retries, watch, dryRun, poll)
			}
			if bin == "" {
				if bin, err = os.Executable(); err != nil {
					return err
				}
			}
			spec := args[0]
			if _, err := os.Stat(spec); err != nil {
				// an embedded experiment's name: write it as a spec file
				// the tasks can read
				if err := os.MkdirAll(out, 0o755); err != nil {
					return err
				}
				spec = filepath.Join(out, "slurm-spec.yaml")
				text := fmt.Sprintf("experiment: %s\nquick: %v\nshards: %d\n", p.Spec.Experiment, p.Quick, shards)
				if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
					return err
				}
			}
			s := &launch.Slurm{Plan: p, Spec: spec, Dir: out, Bin: bin, Shards: shards, Jobs: jobs,
				MaxRetries: retries, Poll: poll, Sbatch: sbatch, Log: cmd.ErrOrStderr()}
			if err := s.Submit(); err != nil {
				return err
			}
			if !watch {
				fmt.Fprintf(cmd.ErrOrStderr(), "watch it with: fabemu sweep status %s\n", out)
				return nil
			}
			if err := s.Watch(); err != nil {
				return err
			}
			return mergeAndPlot(cmd, s.Dir)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&slurm, "slurm", false, "submit to Slurm (sbatch, squeue)")
	fs.BoolVar(&k8s, "k8s", false, "render the Kubernetes Indexed Job and merge Job into --out and apply the first (kubectl)")
	fs.StringVar(&image, "image", "", "--k8s: the fabemu image, pinned by digest (registry/fabemu@sha256:...)")
	fs.StringVar(&storageClass, "storage-class", "", "--k8s: the results claim's storage class (one offering ReadWriteMany)")
	fs.StringVar(&name, "name", "fabemu-sweep", "--k8s: the Job's name (and the prefix of its ConfigMap and claim)")
	fs.BoolVar(&dryRun, "dry-run", false, "--k8s: write the manifests, do not apply them")
	fs.StringVar(&out, "out", "", "results directory, on a file system every node sees")
	fs.StringVar(&bin, "bin", "", "the fabemu binary the tasks run (default: this one)")
	fs.IntVar(&shards, "shards", 0, "shard count (left out: the spec's shards, else up to 4)")
	fs.IntVar(&jobs, "jobs", 1, "points each task runs at once (its CPUs)")
	fs.BoolVar(&watch, "watch", false, "wait for the shards, retry failed ones, then merge and plot")
	fs.IntVar(&retries, "retries", 3, "resubmissions of one shard before giving up (--k8s: backoffLimitPerIndex)")
	fs.DurationVar(&poll, "poll", 10*time.Second, "time between two looks at the scheduler")
	fs.StringArrayVar(&sbatch, "sbatch", nil, "an extra sbatch argument (repeatable), e.g. --sbatch=--partition=long")
	return cmd
}

// mergeAndPlot merges a complete results directory into DIR/merged.json
// and runs "fabemu plot" on it.
func mergeAndPlot(cmd *cobra.Command, dir string) error {
	m, err := sweep.Merge(dir)
	if err != nil {
		return err
	}
	b, err := m.Encode()
	if err != nil {
		return err
	}
	merged := filepath.Join(dir, "merged.json")
	if err := os.WriteFile(merged, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "merged %d points into %s\n", len(m.Points), merged)
	pc := newPlotCmd()
	pc.SetOut(cmd.OutOrStdout())
	pc.SetErr(cmd.ErrOrStderr())
	pc.SetArgs([]string{merged, "--plot", filepath.Join(dir, "figure.svg"), "--json", filepath.Join(dir, "table.json")})
	pc.SilenceUsage, pc.SilenceErrors = true, true
	return pc.Execute()
}

// submitKubernetes renders the sweep's manifests into dir and applies the
// sweep's (unless dryRun).
func submitKubernetes(cmd *cobra.Command, p *sweep.Plan, specPath, dir, name, image, storageClass string, shards, retries int, watch, dryRun bool, poll time.Duration) error {
	if watch && dryRun {
		return fmt.Errorf("--watch with --dry-run: nothing is applied to watch")
	}
	text := fmt.Sprintf("schema: %s\nexperiment: %s\nquick: %v\nshards: %d\n", sweep.SpecSchema, p.Spec.Experiment, p.Quick, shards)
	if data, err := os.ReadFile(specPath); err == nil {
		if p.Spec.Grid == nil && !experimentEmbedded(p.Spec.Experiment) {
			return fmt.Errorf("%s: experiment %s is a file, which the pods cannot read from the ConfigMap: use an embedded experiment or a grid", specPath, p.Spec.Experiment)
		}
		text = string(data)
	}
	k := &launch.Kubernetes{Plan: p, SpecText: text, Name: name, Image: image, Shards: shards, Retries: retries, StorageClass: storageClass}
	a, b, err := k.Render()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sweepFile, mergeFile := filepath.Join(dir, name+".yaml"), filepath.Join(dir, name+"-merge.yaml")
	if err := os.WriteFile(sweepFile, a, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(mergeFile, b, 0o644); err != nil {
		return err
	}
	log := cmd.ErrOrStderr()
	fmt.Fprintf(log, "wrote %s (%d shards) and %s\n", sweepFile, shards, mergeFile)
	if dryRun {
		return nil
	}
	kc := exec.Command("kubectl", "apply", "-f", sweepFile)
	kc.Stdout, kc.Stderr = log, log
	if err := kc.Run(); err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w", sweepFile, err)
	}
	if !watch {
		fmt.Fprintf(log, "then: kubectl get job %s (until complete), kubectl apply -f %s\n", name, mergeFile)
		return nil
	}
	if err := launch.WatchJob(name, poll, log); err != nil {
		return err
	}
	kc = exec.Command("kubectl", "apply", "-f", mergeFile)
	kc.Stdout, kc.Stderr = log, log
	if err := kc.Run(); err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w", mergeFile, err)
	}
	if err := launch.WatchJob(name+"-merge", poll, log); err != nil {
		return err
	}
	kc = exec.Command("kubectl", "logs", "job/"+name+"-merge", "-c", "plot")
	kc.Stdout, kc.Stderr = cmd.OutOrStdout(), log
	return kc.Run()
}

func experimentEmbedded(name string) bool {
	for _, n := range experiment.Embedded() {
		if n == name {
			return true
		}
	}
	return false
}
