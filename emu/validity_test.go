package emu

import (
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
)

// An idle daemon's oversleeps are not lag it is blamed for: with
// background load so light that the loop sleeps between events (2e-5 on
// torus8x8-dor's 62 hosts without a TAP), its timed sleeps are recorded
// as wake lag, no event's excess lag exceeds its lag, and no interval is
// invalid because the model fell behind (its backlog never grows over
// windows of 25 ms). Whether every interval is valid is the machine's:
// one that leaves the loop's thread without a CPU for a millisecond makes
// a genuine late_start or preempted interval, which is logged.
func TestIdleDaemonValid(t *testing.T) {
	r := newRig(t, DefaultPreset, ports(2), func(c *RunConfig) {
		c.Background.Enabled = true
		c.Background.Traffic.Load = 0.00002
		// Backlogs are judged over windows of half the threshold: at the
		// daemon's 1 ms, one background message's burst of events run
		// while other processes crowd the CPUs (or under the race
		// detector) grows a backlog for a millisecond, which is the
		// machine's and not this test's subject.
		c.Pacing.LagThreshold = Duration(50 * time.Millisecond)
	})
	time.Sleep(3 * time.Second)
	p := r.status(t).Pacer
	t.Logf("%d events, lag p50/p99/max %.0f/%.0f/%.0f us, wake lag p50/p99/max %.0f/%.0f/%.0f us, excess lag p50/p99/max %.0f/%.0f/%.0f us, %d of %d intervals invalid %v",
		p.Events, p.Lag.P50/1e3, p.Lag.P99/1e3, p.Lag.Max/1e3, p.WakeLag.P50/1e3, p.WakeLag.P99/1e3, p.WakeLag.Max/1e3,
		p.ExcessLag.P50/1e3, p.ExcessLag.P99/1e3, p.ExcessLag.Max/1e3, p.Invalid, p.Intervals, p.InvalidByCause)
	if p.Intervals < 2 || p.Events == 0 || p.WakeLag.Count == 0 {
		t.Fatalf("%d intervals, %d events, %d timed wake-ups in 3 s", p.Intervals, p.Events, p.WakeLag.Count)
	}
	if p.ExcessLag.Max > p.Lag.Max || p.ExcessLag.P99 > p.Lag.P99 || p.ExcessLag.P50 > p.Lag.P50 {
		t.Errorf("excess lag %v above lag %v", p.ExcessLag, p.Lag)
	}
	// Under the race detector each event costs about ten times more and
	// this load is more than the model follows: only the checks above hold.
	if n := p.InvalidByCause[des.CauseBehind] + p.InvalidByCause[des.CauseDilated]; n != 0 && !raceEnabled {
		t.Errorf("idle daemon: %d intervals invalid for a backlog (%v)", n, p.InvalidByCause)
	}
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
