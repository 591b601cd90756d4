package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit it was built from, and the Go toolchain",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			version, commit, dirty := "devel", "unknown", ""
			if bi, ok := debug.ReadBuildInfo(); ok {
				if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
					version = bi.Main.Version
				}
				for _, s := range bi.Settings {
					switch s.Key {
					case "vcs.revision":
						commit = s.Value
					case "vcs.modified":
						if s.Value == "true" {
							dirty = " (modified)"
						}
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fabemu %s, commit %s%s, %s %s/%s\n", version, commit, dirty, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
