package main

import (
	"fmt"

	"github.com/fabemu/fabemu/internal/outfile"
)

// output is one output of a command: the flag or argument that names it
// and its path ("" when not asked for).
type output struct{ name, path string }

// checkOutputs refuses, before anything is read or run, an output that
// cannot be written: a directory, a path in a missing directory, or one of
// the command's inputs (a trace, a config file). Writing itself goes
// through package outfile, which reports failed writes and never leaves a
// truncated file behind.
func checkOutputs(inputs []string, outs ...output) error {
	for _, o := range outs {
		if err := outfile.Check(o.path, inputs...); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
	}
	return nil
}
