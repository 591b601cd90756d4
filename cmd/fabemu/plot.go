package main

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/experiment"
	"github.com/fabemu/fabemu/sweep"
	"github.com/spf13/cobra"
)

func init() { register(newPlotCmd) }

func newPlotCmd() *cobra.Command {
	var plot, jsonPath string
	cmd := &cobra.Command{
		Use:   "plot MERGED.json",
		Short: "Print the table and draw the plots of a merged sweep (the same as the experiment's own)",
		Example: `  fabemu sweep merge results --out merged.json
  fabemu plot merged.json --plot table1.svg --json table1.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputs(args, output{"--json", jsonPath}, output{"--plot", plot}); err != nil {
				return err
			}
			m, err := sweep.ReadMerged(args[0])
			if err != nil {
				return err
			}
			res, err := m.Result(args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if jsonPath == "-" {
				out = cmd.ErrOrStderr()
			}
			if err := res.WriteTable(out); err != nil {
				return err
			}
			if e, err := experiment.FromJSON(m.Experiment, args[0]); err == nil {
				for _, n := range e.Notes() {
					fmt.Fprintln(out, n)
				}
			}
			if err := writeOut(jsonPath, res); err != nil {
				return err
			}
			if plot != "" {
				files, err := res.WritePlot(plot)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "plot written to %s\n", strings.Join(files, ", "))
			}
			if ok, bad := res.InvariantsOK(); !ok {
				return fmt.Errorf("invariants violated: %s", strings.Join(bad, "; "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&plot, "plot", "", "write the plot to PATH (.svg or .png; a figure with several networks writes PATH-NETWORK.svg each)")
	cmd.Flags().StringVar(&jsonPath, "json", "", "write the experiment's result (schema "+experiment.Schema+", without wall times) to PATH (- for stdout)")
	return cmd
}
