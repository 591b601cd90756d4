package emu

import (
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
)

// An idle daemon is real-time valid: its events run late only by the
// loop's own oversleeps (timer granularity), which validity does not count,
// so ten seconds give ten valid intervals. The status is asked for once
// per window: it is built on the loop, so each request delays the events
// due meanwhile by its cost (tens of microseconds, a few milliseconds when
// other processes crowd the CPU), as a real client would.
//
// go test runs other packages' tests beside this one on the same cores,
// and a process that is runnable but not scheduled for 2 ms is genuinely
// late: the daemon is right to call that interval invalid. So the test
// asks for one window of ten consecutive valid intervals within three
// windows. A daemon whose idle intervals are invalid by construction (the
// raw-lag definition this replaced marked 20 of 20 invalid) fails all
// three.
func TestIdleDaemonValid(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 10-30 s of wall time")
	}
	r := newRig(t, DefaultPreset, ports(2), nil)
	var prevIntervals, prevInvalid int64
	for window := 1; window <= 3; window++ {
		time.Sleep(10*time.Second + 50*time.Millisecond)
		deadline := time.Now().Add(5 * time.Second)
		var st *Status
		for {
			st = r.status(t)
			if int64(st.Pacer.Intervals)-prevIntervals >= 10 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		p := st.Pacer
		intervals, invalid := int64(p.Intervals)-prevIntervals, int64(p.Invalid)-prevInvalid
		prevIntervals, prevInvalid = int64(p.Intervals), int64(p.Invalid)
		t.Logf("window %d: %d events so far, lag p50/p99/max %.0f/%.0f/%.0f us, wake lag p50/p99/max %.0f/%.0f/%.0f us, excess lag p99/max %.0f/%.0f us, %d of %d intervals invalid",
			window, p.Events, p.Lag.P50/1e3, p.Lag.P99/1e3, p.Lag.Max/1e3, p.WakeLag.P50/1e3, p.WakeLag.P99/1e3, p.WakeLag.Max/1e3,
			p.ExcessLag.P99/1e3, p.ExcessLag.Max/1e3, invalid, intervals)
		if intervals >= 10 && invalid == 0 {
			return
		}
		t.Logf("window %d: recent %+v", window, p.Recent)
	}
	t.Errorf("no window of 10 s had 10 valid intervals out of 3 tried")
}

// The watcher's line names the cause: a model behind its load (lag
// stalls), threads waiting for a CPU (keeps up, normal scheduling: advise
// the real-time priority), or a host that did not run the daemon although
// it had the priority; nothing when every interval was valid. The worst
// excess lag is that of the intervals since the last look only.
func TestValidityWarning(t *testing.T) {
	t0 := time.Unix(1000, 0)
	recent := []des.IntervalReport{
		{Start: t0, End: t0.Add(time.Second), MaxLag: 9 * time.Millisecond}, // before the last look
		{Start: t0.Add(11 * time.Second), End: t0.Add(12 * time.Second), MaxLag: 3 * time.Millisecond},
		{Start: t0.Add(14 * time.Second), End: t0.Add(15 * time.Second), MaxLag: 2 * time.Millisecond},
	}
	since := t0.Add(10 * time.Second)
	prev := validityLook{intervals: 10, invalid: 1, lagStalls: 4}
	for _, tc := range []struct {
		name string
		cur  validityLook
		prio int
		want string // in the cause; "" for no warning
	}{
		{"all valid", validityLook{intervals: 20, invalid: 1, lagStalls: 4}, 0, ""},
		{"behind", validityLook{intervals: 20, invalid: 3, lagStalls: 9}, 0, "max_lag"},
		{"preempted", validityLook{intervals: 20, invalid: 3, lagStalls: 4}, 0, "realtime_priority"},
		{"preempted under SCHED_FIFO", validityLook{intervals: 20, invalid: 3, lagStalls: 4}, 10, "did not run the daemon"},
	} {
		msg, cause, worst := validityWarning(prev, tc.cur, recent, since, tc.prio)
		if tc.want == "" {
			if msg != "" {
				t.Errorf("%s: warned %q", tc.name, msg)
			}
			continue
		}
		if !strings.Contains(msg, "2 of the last 10 one-second intervals") || !strings.Contains(cause, tc.want) {
			t.Errorf("%s: %q, cause %q; want 2 of 10 intervals and a cause naming %q", tc.name, msg, cause, tc.want)
		}
		if worst != 3*time.Millisecond {
			t.Errorf("%s: worst excess lag %v, want 3ms (the intervals since the last look)", tc.name, worst)
		}
	}
}
