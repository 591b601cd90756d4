package emu

import (
	"testing"
	"time"
)

// An idle daemon is real-time valid: its events run late only by the
// loop's own oversleeps (timer granularity), which validity does not count,
// so ten seconds give ten valid intervals. The status is asked for once
// at the end: it is built on the loop, so each request delays the events
// due meanwhile by its cost (tens of microseconds, a few milliseconds when
// other processes crowd the CPU), as a real client would.
func TestIdleDaemonValid(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10 s of wall time")
	}
	r := newRig(t, DefaultPreset, ports(2), nil)
	time.Sleep(10*time.Second + 50*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	var st *Status
	for {
		st = r.status(t)
		if st.Pacer.Intervals >= 10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	p := st.Pacer
	t.Logf("%d events, lag p50/p99/max %.0f/%.0f/%.0f us, wake lag p50/p99/max %.0f/%.0f/%.0f us, excess lag p99/max %.0f/%.0f us, %d of %d intervals invalid",
		p.Events, p.Lag.P50/1e3, p.Lag.P99/1e3, p.Lag.Max/1e3, p.WakeLag.P50/1e3, p.WakeLag.P99/1e3, p.WakeLag.Max/1e3,
		p.ExcessLag.P99/1e3, p.ExcessLag.Max/1e3, p.Invalid, p.Intervals)
	if p.Intervals < 10 || p.Invalid != 0 || p.ValidFraction != 1 {
		t.Errorf("%d of %d intervals invalid (valid fraction %.3f), recent %+v; want 0 of at least 10", p.Invalid, p.Intervals, p.ValidFraction, p.Recent)
	}
}
