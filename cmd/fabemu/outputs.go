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
//
// It is the command's one registry of paths: two outputs naming one file
// (after resolving links, "-" and /dev/stdout alike) are refused too, as
// the second would silently overwrite the first.
func checkOutputs(inputs []string, outs ...output) error {
	for i, o := range outs {
		if err := outfile.Check(o.path, inputs...); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
		for _, p := range outs[:i] {
			if outfile.Same(o.path, p.path) {
				return fmt.Errorf("%s %s: %s writes the same file; give each output its own path", o.name, o.path, p.name)
			}
		}
	}
	return nil
}
