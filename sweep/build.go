package sweep

import (
	"runtime/debug"
	"sync"
)

// stampedRevision is the VCS revision given at link time (-X), for
// builds without VCS information (the container image's: its build
// context has no .git).
var stampedRevision string

// buildID is the binary's identity as result records carry it; tests set
// it to simulate another binary.
var buildID = sync.OnceValue(readBuildID)

// readBuildID is the module's version and the VCS revision the binary
// was built from ("github.com/fabemu/fabemu@(devel) rev 7010820…+modified"),
// or "unknown" without build information. Two binaries built from
// different commits, or from a modified tree, give different identities;
// merge refuses to mix them (a point's result may depend on the code).
func readBuildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	id := bi.Main.Path + "@" + bi.Main.Version
	if id == "@" {
		id = "unknown"
	}
	rev, mod := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			mod = s.Value == "true"
		}
	}
	if rev == "" && stampedRevision != "" && stampedRevision != "unknown" {
		rev = stampedRevision
	}
	if rev != "" {
		id += " rev " + rev
		if mod {
			id += "+modified"
		}
	}
	return id
}
