// Command fabemu is the one binary of fabemu: it wires configuration, the
// command line, logging, metrics and the control API onto the model
// packages. It owns no model logic.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/fabemu/fabemu/internal/outfile"
	"github.com/fabemu/fabemu/model"
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
	// Under a cgroup memory limit or an rlimit, the collector must work
	// harder before the limit kills the process (GOMEMLIMIT overrides).
	model.SetRuntimeLimit()
	// Tables and messages go to standard output through a writer that
	// keeps the first error, so "fabemu ... > /dev/full" fails too.
	stdout := &checkedWriter{w: os.Stdout}
	root := newRoot()
	root.SetOut(stdout)
	if cmd, _, err := root.Find(os.Args[1:]); err == nil && !ownSignals[cmd.CommandPath()] {
		// SIGINT or SIGTERM removes the temporary files of outputs
		// being written before the process ends.
		defer outfile.RemoveOnSignal()()
	}
	err := root.Execute()
	if err == nil && stdout.err != nil {
		err = stdout.err // names /dev/stdout
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fabemu:", oneLine(err))
		os.Exit(1)
	}
}

// ownSignals are the commands that handle SIGINT and SIGTERM themselves,
// stopping gracefully and committing their outputs.
var ownSignals = map[string]bool{"fabemu run": true, "fabemu capture": true, "fabemu stat": true, "fabemu order": true}

// oneLine keeps an error to the one line a failed command prints: a
// configuration with several problems reports the first and how many
// more there are (fixing it shows the next).
func oneLine(err error) string {
	msg := strings.TrimRight(err.Error(), "\n")
	first, rest, ok := strings.Cut(msg, "\n")
	if !ok {
		return msg
	}
	more := strings.Count(rest, "\n") + 1
	if more == 1 {
		return first + " (and 1 more problem)"
	}
	return fmt.Sprintf("%s (and %d more problems)", first, more)
}

// checkedWriter passes writes on and remembers the first error.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}
