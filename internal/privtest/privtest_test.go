package privtest

import (
	"os"
	"testing"
)

func TestCheckMatchesEnvironment(t *testing.T) {
	err := Check()
	if os.Geteuid() != 0 && err == nil {
		t.Fatal("Check passed for a non-root process")
	}
	t.Logf("Check() = %v", err)
}

func TestEffectiveCaps(t *testing.T) {
	if _, err := effectiveCaps(); err != nil {
		t.Fatal(err)
	}
}

func TestRequireRuns(t *testing.T) {
	// Require either returns (privileged) or skips/fails this subtest; both
	// are fine here, it must just not panic.
	t.Run("require", func(t *testing.T) { Require(t, "TAP devices") })
}
