package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fabemu/fabemu/sweep"
	"github.com/fabemu/fabemu/sweep/launch"
	"github.com/spf13/cobra"
)

func newSweepSubmitCmd() *cobra.Command {
	var out, bin string
	var slurm, watch bool
	var shards, jobs, retries int
	var poll time.Duration
	var sbatch []string
	cmd := &cobra.Command{
		Use:   "submit SPEC.yaml|EXPERIMENT --slurm --out DIR",
		Short: "Submit a sweep to Slurm as job arrays and, with --watch, retry failed shards, merge and plot",
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
every node sees.`,
		Example: `  fabemu sweep submit deploy/examples/fig5-quick.yaml --slurm --out "$PWD/fig5" --watch
  fabemu sweep submit deploy/examples/paper004-table1.yaml --slurm --out /shared/t1 --sbatch=--partition=long --sbatch=--time=4:00:00`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slurm {
				return fmt.Errorf("give --slurm (the scheduler to submit to)")
			}
			if out == "" {
				return fmt.Errorf("--out: the results directory is required")
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
	fs.StringVar(&out, "out", "", "results directory, on a file system every node sees")
	fs.StringVar(&bin, "bin", "", "the fabemu binary the tasks run (default: this one)")
	fs.IntVar(&shards, "shards", 0, "shard count (default: the spec's shards, else up to 4)")
	fs.IntVar(&jobs, "jobs", 1, "points each task runs at once (its CPUs)")
	fs.BoolVar(&watch, "watch", false, "wait for the shards, retry failed ones, then merge and plot")
	fs.IntVar(&retries, "retries", 3, "resubmissions of one shard before giving up")
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
