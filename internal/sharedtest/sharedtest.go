// Package sharedtest finds the data files tests share with the project's
// steering material: ../shared/traces/NAME beside the repository root. Tests
// that need such a file skip with a clear message when it is absent, so a
// checkout without it still passes.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Trace returns the path of ../shared/traces/name, seen from the directory
// holding go.mod, or skips the test saying what is missing.
func Trace(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("skipping: repository root (go.mod) not found above the test's directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "traces", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is not present at ../shared/traces/ beside the repository root: %v", name, err)
	}
	return p
}
