package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/fabemu/fabemu/internal/outfile"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/sweep"
	"github.com/spf13/cobra"
)

func init() { register(newSweepCmd) }

func newSweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Plan, run (sharded over a cluster or locally), merge and watch a sweep of independent runs",
		Long: `A sweep is an experiment (embedded or a file), or a grid over --set keys,
loads and seeds on a preset, split into independent points. "sweep plan"
lists the points; "sweep run" runs all of them on a local worker pool, or
one shard of them (a Kubernetes Indexed Job's or Slurm job array's task);
"sweep merge" checks that every point is there exactly once and writes the
merged result, which "fabemu plot" turns into the experiment's table and
plots. Every sharding merges to the same bytes as a local run. Recipes and
file formats: docs/sweeps.md.`,
	}
	cmd.AddCommand(newSweepPlanCmd(), newSweepRunCmd(), newSweepMergeCmd(), newSweepStatusCmd(), newSweepSubmitCmd())
	return cmd
}

func loadPlan(path string) (*sweep.Plan, error) {
	s, dir, err := sweep.LoadSpec(path)
	if err != nil {
		return nil, err
	}
	p, err := sweep.NewPlan(s, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// sweepMemory checks a plan's largest point (times jobs at once) against
// --max-memory or the memory available, as sim checks its run.
func sweepMemory(p *sweep.Plan, jobs int, maxMemory string) error {
	var limit int64
	if maxMemory != "" {
		var err error
		if limit, err = model.ParseSize(maxMemory); err != nil {
			return fmt.Errorf("--max-memory %w", err)
		}
	}
	return p.CheckMemory(jobs, limit)
}

func newSweepPlanCmd() *cobra.Command {
	var shards int
	var maxMemory string
	cmd := &cobra.Command{
		Use:   "plan SPEC.yaml|EXPERIMENT",
		Short: "Print a sweep's points in order, with each one's shard, seed, configuration hash and memory estimate",
		Example: `  fabemu sweep plan deploy/examples/paper004-table1.yaml --shards 8
  fabemu sweep plan paper004-fig5`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadPlan(args[0])
			if err != nil {
				return err
			}
			if err := checkShardsFlag(cmd, shards); err != nil {
				return err
			}
			if shards == 0 {
				shards = p.Spec.Shards
			}
			if err := sweepMemory(p, 1, maxMemory); err != nil {
				return err
			}
			return p.Write(cmd.OutOrStdout(), shards)
		},
	}
	cmd.Flags().IntVar(&shards, "shards", 0, "show the shard of each point for this many shards (left out: the spec's shards)")
	cmd.Flags().StringVar(&maxMemory, "max-memory", "", "memory a point may use, e.g. 8GiB (default: the memory available here); a plan whose largest point exceeds it is refused")
	return cmd
}

func newSweepRunCmd() *cobra.Command {
	var shard, out, maxMemory string
	var jobs int
	var mixed, calibration bool
	cmd := &cobra.Command{
		Use:   "run SPEC.yaml|EXPERIMENT",
		Short: "Run a sweep's points, or one shard of them, into a results directory (resumable)",
		Long: `Run the points of a sweep into --out. With --shard I/N, or inside a Kubernetes
Indexed Job (JOB_COMPLETION_INDEX, with FABEMU_SHARDS or the spec's shards as
the count) or a Slurm job array (SLURM_ARRAY_TASK_ID with FABEMU_SHARDS, else
SLURM_ARRAY_TASK_COUNT or SLURM_ARRAY_TASK_MIN/MAX), only that shard's points
run; without any, the whole sweep runs on a local pool of --jobs workers. The
shard's results go to DIR/shard-IIII-of-NNNN.jsonl. Run it again after a
crash: finished points are kept and a point cut short is redone.

The first run records the plan and the shard count in DIR/sweep.json; a run
of another plan or another shard count there is refused. A shard's file is
locked while a run writes it (DIR/shard-IIII-of-NNNN.jsonl.lock): a second
run of the same shard refuses and names the holder.`,
		Example: `  fabemu sweep run sweep.yaml --out results
  fabemu sweep run sweep.yaml --shard 3/8 --out /results
  SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=8 fabemu sweep run sweep.yaml --out results`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if jobs < 1 {
				return fmt.Errorf("--jobs %d: want at least 1", jobs)
			}
			p, err := loadPlan(args[0])
			if err != nil {
				return err
			}
			if err := sweepMemory(p, min(jobs, len(p.Points)), maxMemory); err != nil {
				return err
			}
			log := cmd.ErrOrStderr()
			sh := sweep.ShardEnv{Shard: 0, Shards: 1, From: "no shard given: the whole sweep"}
			if shard != "" {
				if sh, err = sweep.ParseShard(shard); err != nil {
					return err
				}
			} else if s, ok, err := sweep.ShardFromEnv(os.Getenv, p.Spec.Shards); err != nil {
				return err
			} else if ok {
				sh = s
			}
			if calibration {
				fmt.Fprintf(log, "sweep %s (plan %s): the calibration points of all %d shards (%s), %d jobs, results in %s\n",
					p.Name, p.Hash, sh.Shards, sh.From, jobs, out)
			} else {
				fmt.Fprintf(log, "sweep %s (plan %s): shard %d/%d (%s), %d of %d points, %d jobs, results in %s\n",
					p.Name, p.Hash, sh.Shard, sh.Shards, sh.From, len(p.Shard(sh.Shard, sh.Shards)), len(p.Points), jobs, out)
			}
			var prog *report.Progress
			rep, err := sweep.Run(p, out, sweep.RunOptions{Shard: sh.Shard, Shards: sh.Shards, Jobs: jobs, From: sh.From, AllowMixedVersions: mixed, CalibrationOnly: calibration,
				Progress: func(done, total int) {
					if prog == nil {
						prog = report.NewProgress(os.Stderr, p.Name, float64(total), "points")
					}
					prog.Update(float64(done))
				}})
			prog.Done()
			if rep != nil {
				if rep.StaleLock != "" {
					fmt.Fprintf(log, "took over %s's lock from a run that died (%s)\n", rep.File, rep.StaleLock)
				}
				if rep.Redone != "" && rep.Ran > 0 {
					fmt.Fprintf(log, "resumed %s: %s; the rest of the file was dropped and its points run again\n", rep.File, rep.Redone)
				}
				fmt.Fprintf(log, "%s: %d points: %d ran, %d already done", rep.File, rep.Points, rep.Ran, rep.Skipped)
				if rep.Calibration > 0 {
					fmt.Fprintf(log, ", %d calibration runs repeated in memory (not yet recorded by their shards)", rep.Calibration)
				}
				fmt.Fprintln(log)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&shard, "shard", "", "run shard I of N (I/N, 0-based); default from the Kubernetes or Slurm array variables, else the whole sweep")
	fs.StringVar(&out, "out", "sweep-results", "results directory (shared by all shards)")
	fs.IntVar(&jobs, "jobs", runtime.GOMAXPROCS(0), "points run at once")
	fs.StringVar(&maxMemory, "max-memory", "", "memory the points run at once may use, e.g. 8GiB (default: the memory available); refused before running if the largest point times --jobs exceeds it")
	fs.BoolVar(&mixed, "allow-mixed-versions", false, "resume a shard file another build of fabemu began")
	fs.BoolVar(&calibration, "calibration", false, "run only the calibration points of every shard (of the count from --shard or the environment) into their files, before the shards run")
	return cmd
}

func newSweepMergeCmd() *cobra.Command {
	var out string
	var mixed bool
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Check that every point of a sweep is present exactly once and write the merged result",
		Example: `  fabemu sweep merge results --out merged.json
  fabemu plot merged.json --plot figure.svg`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The merge reads the shard files of each directory, so a
			// merged result may sit beside them; it may not be one of
			// them, nor be named as one (the next merge would read it).
			var inputs []string
			for _, d := range args {
				files, err := sweep.ResultFiles(d)
				if err != nil {
					return err
				}
				inputs = append(inputs, files...)
			}
			if ok, _ := filepath.Match("shard-*.jsonl", filepath.Base(out)); ok {
				return fmt.Errorf("--out %s: a shard result file's name; the next merge would read it as a shard (name it merged.json, say)", out)
			}
			if err := checkOutputs(inputs, output{"--out", out}); err != nil {
				return err
			}
			m, err := sweep.MergeWith(sweep.MergeOptions{AllowMixedVersions: mixed}, args...)
			if err != nil {
				return err
			}
			b, err := m.Encode()
			if err != nil {
				return err
			}
			if out == "-" {
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if err := outfile.Write(out, cmd.OutOrStdout(), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "merged %d points of sweep %s (plan %s) from %s into %s\n",
				len(m.Points), m.Sweep, m.Plan, strings.Join(args, ", "), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "merged.json", "merged result (schema "+sweep.MergedSchema+"; - for stdout)")
	cmd.Flags().BoolVar(&mixed, "allow-mixed-versions", false, "merge points run by different builds of fabemu (refused by default)")
	return cmd
}

func newSweepStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status DIR",
		Short: "Show each shard's state (complete, running, dead, missing, corrupt, foreign), whether merge would succeed, and an ETA while shards run",
		Long: `Show a results directory's progress: the points done out of the plan's,
whether "sweep merge" would succeed now (100% only then), and each shard's
state: complete (a valid trailer), running (a run holds its lock), dead
(partial and no run holds the lock: run it again, it resumes), missing,
corrupt (a bad line before the end, named), or foreign (another plan or
shard count). The ETA is shown only while a shard runs.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := sweep.ReadStatus(args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			return st.Write(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// checkShardsFlag refuses --shards given as 0 or less: left out, the
// spec's shards apply, so an explicit 0 would silently become them.
func checkShardsFlag(cmd *cobra.Command, shards int) error {
	if cmd.Flags().Changed("shards") && shards < 1 {
		return fmt.Errorf("--shards %d: want at least 1 (leave the flag out for the spec's shards)", shards)
	}
	return nil
}
