package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/spf13/cobra"
)

func init() { register(newExperimentCmd) }

type experimentFlags struct {
	jsonPath, plot string
	jobs           int
	mem            memFlags
	list, quick    bool
}

func newExperimentCmd() *cobra.Command {
	var f experimentFlags
	cmd := &cobra.Command{
		Use:   "experiment NAME|FILE",
		Short: "Run a declared set of configurations (a paper's table or figure) and print one table, JSON and a plot",
		Long: `Run an experiment: a YAML file declaring a base configuration and rows
(delivery mode, reorder memory, injection policy, any --set override),
optionally a load sweep or a calibration of the trace compression factor.
The rows run in parallel (--jobs); each run is deterministic, so the
results do not depend on the number of jobs. Embedded experiments ship with
the binary (--list); a path to your own file works the same way.

The embedded paper004-table1 and paper004-table2 reproduce paper 004's
Tables 1 and 2 on a generated cello99-like trace, at a compression factor
calibrated so that DET runs past its saturation (the table says which trace
and factor were used); paper004-fig5 reproduces Figure 5's buffer
requirements. See docs/validation.md.`,
		Example: `  fabemu experiment --list
  fabemu experiment paper004-table1 --json table1.json --plot table1.svg
  fabemu experiment paper004-fig5 --quick
  fabemu experiment my-experiment.yaml --jobs 4`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.list {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if f.list {
				t := report.Table{Columns: []report.Column{{Name: "experiment"}, {Name: "source"}, {Name: "kind"}}}
				for _, n := range experiment.Embedded() {
					e, err := experiment.Load(n)
					if err != nil {
						return err
					}
					t.AddRow(n, e.Source, e.Kind)
				}
				return t.Write(out)
			}
			if f.jobs < 1 {
				return fmt.Errorf("--jobs %d: want at least 1", f.jobs)
			}
			e, err := experiment.Load(args[0])
			if err != nil {
				return err
			}
			if err := checkOutputs([]string{args[0], e.Trace.File}, output{"--json", f.jsonPath}, output{"--plot", f.plot}); err != nil {
				return err
			}
			if stop, err := f.mem.checkExperiment(out, e, f.quick, f.jobs); stop || err != nil {
				return err
			}
			tableOut := out
			if f.jsonPath == "-" { // keep stdout pure JSON
				tableOut = cmd.ErrOrStderr()
			}
			var prog *report.Progress
			res, err := experiment.Run(e, experiment.Options{Jobs: f.jobs, Quick: f.quick, Progress: func(done, total int) {
				if prog == nil {
					prog = report.NewProgressForced(os.Stderr, e.Name, float64(total), "runs", f.mem.progress)
				}
				prog.Update(float64(done))
			}})
			prog.Done()
			if err != nil {
				return err
			}
			if werr := res.WriteTable(tableOut); werr != nil {
				return werr
			}
			for _, n := range e.Notes() {
				fmt.Fprintln(tableOut, n)
			}
			if werr := writeOut(f.jsonPath, res); werr != nil {
				return werr
			}
			if f.plot != "" {
				files, perr := res.WritePlot(f.plot)
				if perr != nil {
					return perr
				}
				fmt.Fprintf(tableOut, "plot written to %s\n", strings.Join(files, ", "))
			}
			if ok, bad := res.InvariantsOK(); !ok {
				return fmt.Errorf("invariants violated: %s", strings.Join(bad, "; "))
			}
			return nil
		},
	}
	f.mem.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.jsonPath, "json", "", "write the result (schema "+experiment.Schema+") to PATH (- for stdout)")
	fs.StringVar(&f.plot, "plot", "", "write the plot to PATH (.svg or .png; a figure with several networks writes PATH-NETWORK.svg each)")
	fs.IntVar(&f.jobs, "jobs", runtime.GOMAXPROCS(0), "simulations run at once")
	fs.BoolVar(&f.list, "list", false, "list the embedded experiments")
	fs.BoolVar(&f.quick, "quick", false, "shrink the workload (fewer records, shorter runs) for tests and smoke runs; the output says so")
	return cmd
}
