package synth

import (
	"errors"
	"github.com/fabemu/fabemu/model"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// TestDeadlockStopsAndReports builds a deliberately deadlocking fabric: an
// 8x8 torus with dimension-order routing and no dateline lanes (a cyclic
// escape function, Dally and Seitz) with the build-time escape check
// disabled, driven past saturation. The run must stop with a
// *fabric.DeadlockReport naming blocked packets and what each waits for,
// within bounded wall time, instead of hanging.
func TestDeadlockStopsAndReports(t *testing.T) {
	c, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	c.Routing.Mode = route.Deterministic
	c.Routing.Dateline, c.Routing.Check = false, "off"
	c.Traffic.Load = 1.0
	c.Run.Warmup, c.Run.Duration = 0, 20*des.Millisecond
	c.Fabric.DeadlockTimeout = 50 * des.Microsecond

	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		s, err := RunSim(c, nil)
		done <- result{s, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the deadlocked run did not stop within 60 s of wall time")
	}
	var dr *fabric.DeadlockReport
	if !errors.As(r.err, &dr) {
		t.Fatalf("want a *fabric.DeadlockReport, got %v", r.err)
	}
	if dr.InFabric == 0 || len(dr.Blocked) == 0 {
		t.Fatalf("report names no blocked packets: %+v", dr)
	}
	if dr.At >= c.Run.Duration {
		t.Fatalf("stopped at %v, the end of the run: the watchdog did not fire", dr.At)
	}
	msg := r.err.Error()
	for _, want := range []string{"deadlock", "waits for", "packet", "host"} {
		if !strings.Contains(msg, want) {
			t.Errorf("report does not mention %q:\n%s", want, msg)
		}
	}
	if r.sum == nil || r.sum.Invariants.NoDeadlock || r.sum.Invariants.OK {
		t.Errorf("summary of a deadlocked run must report no_deadlock=false and ok=false")
	}
	// Credits are still conserved at the moment of the deadlock: the
	// packets are held back by flow control, nothing is lost.
	if r.sum != nil && (!r.sum.Invariants.CreditsConserved || !r.sum.Invariants.PacketsConserved) {
		t.Errorf("deadlocked fabric lost credits or packets: %v", r.sum.Invariants.Violations)
	}
	t.Logf("stopped at %v simulated after %v wall, %d packets in the fabric, %d blocked heads",
		dr.At, time.Since(start).Round(time.Millisecond), dr.InFabric, len(dr.Blocked))
}
