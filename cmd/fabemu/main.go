// Command fabemu is the one binary of fabemu: it wires configuration, the
// command line, logging, metrics and the control API onto the model
// packages. It owns no model logic.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// subcommands is filled by the init functions of the files beside this one,
// one file per subcommand, so that each can be written on its own.
var subcommands []func() *cobra.Command

func register(f func() *cobra.Command) { subcommands = append(subcommands, f) }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "fabemu",
		Short:         "Emulate a lossless InfiniBand / PCIe AS fabric in one process",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, f := range subcommands {
		root.AddCommand(f())
	}
	return root
}

func main() {
	// The model keeps few long-lived objects and recycles packets, so the
	// collector mostly runs for nothing; a higher target cut 8% of a
	// saturated run's time (docs/performance.md). GOGC still overrides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "fabemu:", err)
		os.Exit(1)
	}
}
