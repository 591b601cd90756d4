package des

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual clock: time moves only with Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock *fakeClock
	c     chan time.Time
	at    time.Time
	off   bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.off = true
	return true
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1), at: c.now.Add(d)}
	if d <= 0 {
		t.c <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-t.c:
	default:
	}
	t.at, t.off = c.now.Add(d), false
	if d <= 0 {
		t.c <- c.now
		return true
	}
	if !slices.Contains(c.timers, t) {
		c.timers = append(c.timers, t)
	}
	return true
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			if !t.off {
				t.c <- c.now
			}
			continue
		}
		keep = append(keep, t)
	}
	c.timers = keep
}

// awaitTimer waits until some goroutine has a live timer due at at: a test
// that advances the clock past a deadline must first know the loop is
// asleep on it, or the loop finds the deadline already past and runs the
// event late by its own fault, not by an oversleep.
func (c *fakeClock) awaitTimer(t *testing.T, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, tm := range c.timers {
			if !tm.off && tm.at.Equal(at) {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("no timer armed for %v", at)
}

// wallRecorder notes the simulated time of each event it handles, and the
// fake wall time it ran at.
type wallRecorder struct {
	clock *fakeClock
	at    []Time
	wall  []time.Time
}

func (r *wallRecorder) Handle(ev *Event) {
	r.at = append(r.at, ev.At)
	r.wall = append(r.wall, r.clock.Now())
}

func TestPacerMapping(t *testing.T) {
	for _, tc := range []struct {
		dilation float64
		wall     time.Duration
		sim      Time
	}{
		{1, time.Millisecond, Millisecond},
		{1, 1500 * time.Nanosecond, 1500 * Nanosecond},
		{10, time.Millisecond, 100 * Microsecond},
		{0.5, time.Millisecond, 2 * Millisecond},
	} {
		c := newFakeClock()
		p, err := NewPacer(New(), PacerConfig{Dilation: tc.dilation, Clock: c})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.SimTime(c.Now().Add(tc.wall)); got != tc.sim {
			t.Errorf("dilation %g: SimTime(+%v) = %v, want %v", tc.dilation, tc.wall, got, tc.sim)
		}
		if got := p.WallTime(tc.sim).Sub(c.Now()); got != tc.wall {
			t.Errorf("dilation %g: WallTime(%v) = +%v, want +%v", tc.dilation, tc.sim, got, tc.wall)
		}
	}
}

func TestPacerConfigErrors(t *testing.T) {
	for _, cfg := range []PacerConfig{{Dilation: -1}, {InputQueue: -1}, {LagThreshold: -1}, {Spin: -1}} {
		if _, err := NewPacer(New(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// eventually polls cond on the loop goroutine until it holds.
func eventually(t *testing.T, p *Pacer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var ok bool
		if err := p.Do(func() { ok = cond() }); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func startPacer(t *testing.T, cfg PacerConfig) (*Pacer, *Engine) {
	t.Helper()
	eng := New()
	p, err := NewPacer(eng, cfg)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- p.Run() }()
	t.Cleanup(func() {
		p.Stop()
		if err := <-errc; err != nil {
			t.Error(err)
		}
	})
	return p, eng
}

func TestPacerRunsEventsWhenDue(t *testing.T) {
	c := newFakeClock()
	p, eng := startPacer(t, PacerConfig{Clock: c})
	r := &wallRecorder{clock: c}
	start := c.Now()
	if err := p.Do(func() {
		eng.Schedule(10*Microsecond, r, 0, 0, nil)
		eng.Schedule(20*Microsecond, r, 0, 0, nil)
	}); err != nil {
		t.Fatal(err)
	}
	c.Advance(5 * time.Microsecond)
	var n int
	_ = p.Do(func() { n = len(r.at) })
	if n != 0 {
		t.Fatalf("%d events ran before they were due", n)
	}
	c.Advance(10 * time.Microsecond) // wall +15us: the first is due
	eventually(t, p, "first event", func() bool { return len(r.at) == 1 })
	c.Advance(10 * time.Microsecond) // +25us
	eventually(t, p, "second event", func() bool { return len(r.at) == 2 })
	for i, at := range r.at {
		if d := r.wall[i].Sub(start); d < time.Duration(at/Nanosecond) {
			t.Errorf("event at %v ran at wall +%v, early", at, d)
		}
	}
	// Events ran 5us late each (the clock jumped past them).
	st := p.Snapshot()
	if st.Lag.Max != 5000 || st.Events < 2 {
		t.Errorf("lag %+v events %d, want max 5000 ns", st.Lag, st.Events)
	}
}

func TestPacerAdmitsInputsAtTheirWallTime(t *testing.T) {
	c := newFakeClock()
	p, eng := startPacer(t, PacerConfig{Clock: c})
	var got []Time
	c.Advance(3 * time.Microsecond)
	at := c.Now()
	if err := p.Submit(Input{At: at, Fn: func(t Time) { got = append(got, t) }}); err != nil {
		t.Fatal(err)
	}
	eventually(t, p, "input", func() bool { return len(got) == 1 })
	if got[0] != 3*Microsecond {
		t.Errorf("input admitted at %v, want 3us", got[0])
	}
	// An input stamped before the engine's clock is admitted now.
	_ = p.Do(func() { eng.Schedule(10*Microsecond, &wallRecorder{clock: c}, 0, 0, nil) })
	c.Advance(10 * time.Microsecond)
	eventually(t, p, "event", func() bool { return eng.Now() == 10*Microsecond })
	if err := p.Submit(Input{At: at, Fn: func(t Time) { got = append(got, t) }}); err != nil {
		t.Fatal(err)
	}
	eventually(t, p, "late input", func() bool { return len(got) == 2 })
	if got[1] < 10*Microsecond {
		t.Errorf("late input admitted at %v, before the engine's clock 10us", got[1])
	}
	if st := p.Snapshot(); st.Inputs != 2 {
		t.Errorf("inputs %d, want 2", st.Inputs)
	}
}

// slowHandler is an event that takes d of (fake) wall time to run.
type slowHandler struct {
	clock *fakeClock
	d     time.Duration
	n     int
}

func (h *slowHandler) Handle(*Event) { h.clock.Advance(h.d); h.n++ }

// A model that falls behind (an event takes 5 ms of wall time, so the next
// one runs 4 ms late with the loop awake all along) makes its interval
// invalid, with its excess lag.
func TestPacerMarksInvalidIntervals(t *testing.T) {
	c := newFakeClock()
	p, eng := startPacer(t, PacerConfig{Clock: c, Interval: 10 * time.Millisecond, LagThreshold: time.Millisecond})
	r := &wallRecorder{clock: c}
	slow := &slowHandler{clock: c, d: 5 * time.Millisecond}
	_ = p.Do(func() {
		eng.Schedule(1*Millisecond, slow, 0, 0, nil)
		eng.Schedule(2*Millisecond, r, 0, 0, nil)
	})
	c.Advance(time.Millisecond)
	eventually(t, p, "late event", func() bool { return len(r.at) == 1 })
	c.Advance(20 * time.Millisecond) // close the intervals
	eventually(t, p, "intervals", func() bool { return p.intervals >= 2 })
	p.Snapshot()
	st := p.Stats()
	if st.Invalid != 1 || len(st.Recent) != 1 || st.Recent[0].MaxLag != 4*time.Millisecond || st.ValidFraction >= 1 {
		t.Errorf("stats %+v: want one invalid interval with max excess lag 4ms", st)
	}
	// The late event came due while the loop ran the slow one, and the
	// backlog did not keep growing: held up while busy, not behind.
	if len(st.Recent) == 1 && (st.Recent[0].Cause != CausePreempted || st.InvalidByCause[CausePreempted] != 1) {
		t.Errorf("cause %q, by cause %v; want %s", st.Recent[0].Cause, st.InvalidByCause, CausePreempted)
	}
	// Nothing aborted: the pacer still runs events.
	_ = p.Do(func() { eng.Schedule(eng.Now()+Microsecond, r, 0, 0, nil) })
	c.Advance(time.Millisecond)
	eventually(t, p, "event after lag", func() bool { return len(r.at) == 2 })
}

// A loop that oversleeps (its timer fires 5 ms late, as the runtime's
// timers and a busy host can make it) runs the event 5 ms late: that lag
// and the oversleep are reported, but the model was not behind, so the
// interval stays valid.
func TestPacerOversleepIsValid(t *testing.T) {
	c := newFakeClock()
	p, eng := startPacer(t, PacerConfig{Clock: c, Interval: 10 * time.Millisecond, LagThreshold: time.Millisecond})
	r := &wallRecorder{clock: c}
	_ = p.Do(func() { eng.Schedule(1*Millisecond, r, 0, 0, nil) })
	c.awaitTimer(t, c.Now().Add(time.Millisecond))
	c.Advance(6 * time.Millisecond)
	eventually(t, p, "late event", func() bool { return len(r.at) == 1 })
	c.Advance(20 * time.Millisecond)
	eventually(t, p, "intervals", func() bool { return p.intervals >= 2 })
	p.Snapshot()
	st := p.Stats()
	if st.Invalid != 0 || st.ValidFraction != 1 || st.Lag.Max != 5e6 || st.WakeLag.Max < 5e6 || st.ExcessLag.Max != 0 {
		t.Errorf("stats %+v: want lag 5ms, wake lag >= 5ms, no excess, every interval valid", st)
	}
}

// An input that reaches a sleeping loop late (its reader waited 5 ms for
// a CPU) runs late with the loop idle before it: the interval is invalid
// because the loop started late, not because the model had a backlog;
// Classify sees the pacer's cause and may rename it.
func TestPacerLateStartCause(t *testing.T) {
	c := newFakeClock()
	var seen []IntervalReport
	p, _ := startPacer(t, PacerConfig{Clock: c, Interval: 10 * time.Millisecond, LagThreshold: time.Millisecond,
		Classify: func(r IntervalReport) string { seen = append(seen, r); return r.Cause + "+checked" }})
	ran := 0
	waitAsleep(t, p)
	c.Advance(6 * time.Millisecond) // under the loop's 10 ms sleep
	if err := p.Submit(Input{At: c.Now().Add(-5 * time.Millisecond), Fn: func(Time) { ran++ }}); err != nil {
		t.Fatal(err)
	}
	eventually(t, p, "input", func() bool { return ran == 1 })
	c.Advance(20 * time.Millisecond)
	eventually(t, p, "intervals", func() bool { return p.intervals >= 2 })
	st := p.Snapshot()
	if st.Invalid != 1 || len(seen) != 1 || seen[0].Cause != CauseLate || st.InvalidByCause[CauseLate+"+checked"] != 1 {
		t.Errorf("invalid %d, classified %+v, by cause %v; want one %s interval", st.Invalid, seen, st.InvalidByCause, CauseLate)
	}
}

// Every interval that closes asks Stages for its window; an invalid one
// keeps what it returned and names the stage that took longest.
func TestPacerIntervalStages(t *testing.T) {
	c := newFakeClock()
	calls := 0
	p, _ := startPacer(t, PacerConfig{Clock: c, Interval: 10 * time.Millisecond, LagThreshold: time.Millisecond,
		Stages: func() []StageTime {
			calls++
			if calls > 1 {
				return []StageTime{{"read", 0}, {"write", 0}}
			}
			return []StageTime{{"read", time.Millisecond}, {"model", 5 * time.Millisecond}, {"write", 20 * time.Microsecond}}
		}})
	ran := 0
	waitAsleep(t, p)
	c.Advance(6 * time.Millisecond)
	if err := p.Submit(Input{At: c.Now().Add(-5 * time.Millisecond), Fn: func(Time) { ran++ }}); err != nil {
		t.Fatal(err)
	}
	eventually(t, p, "input", func() bool { return ran == 1 })
	c.Advance(20 * time.Millisecond)
	eventually(t, p, "intervals", func() bool { return p.intervals >= 2 })
	st := p.Snapshot()
	var n int
	_ = p.Do(func() { n = calls })
	if uint64(n) != st.Intervals {
		t.Errorf("Stages called %d times for %d intervals; want once per interval", n, st.Intervals)
	}
	if len(st.Recent) != 1 || len(st.Recent[0].Stages) != 3 || st.Recent[0].Slowest != "model" || st.Recent[0].Stages[1].Max != 5*time.Millisecond {
		t.Errorf("recent %+v: want one invalid interval with three stages, model the slowest at 5ms", st.Recent)
	}
	if st.InvalidBySlowest["model"] != 1 || len(st.InvalidBySlowest) != 1 {
		t.Errorf("invalid by slowest stage %v, want model: 1", st.InvalidBySlowest)
	}
	if slowestStage([]StageTime{{"read", 0}}) != "" {
		t.Error("a window where nothing took time names a stage")
	}
}

// selfTicker is a model slower than real time: every event schedules the
// next one 1 µs of simulated time later and takes 2 µs of (fake) wall
// time, so it keeps up only at a dilation of 2 or more.
type selfTicker struct {
	eng   *Engine
	clock *fakeClock
	n     int
}

func (k *selfTicker) Handle(*Event) {
	k.n++
	k.clock.Advance(2 * time.Microsecond)
	k.eng.After(Microsecond, k, 0, 0, nil)
}

// The dilate overload mode: a model that falls DilateAfter behind gets
// its dilation raised by DilateStep, again while it still falls behind,
// and no more once it keeps up (1.5, then 2.25 for a model needing 2);
// each raise marks its interval.
func TestPacerDilateRaises(t *testing.T) {
	c := newFakeClock()
	p, eng := startPacer(t, PacerConfig{Clock: c, Interval: 10 * time.Millisecond, LagThreshold: time.Millisecond,
		DilateAfter: 500 * time.Microsecond})
	k := &selfTicker{eng: eng, clock: c}
	_ = p.Do(func() { eng.Schedule(eng.Now()+Microsecond, k, 0, 0, nil) })
	// 20000 events: 40 ms of wall time or more, far longer than the raises
	// take. The clock moves by itself only while the model runs late.
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n < 20000; {
		c.Advance(20 * time.Microsecond)
		_ = p.Do(func() { n = k.n })
		if time.Now().After(deadline) {
			t.Fatalf("%d events in 10 s", n)
		}
	}
	st := p.Snapshot()
	if st.Dilation != 2.25 || st.DilationRaises != 2 {
		t.Errorf("dilation %g after %d raises; want 2.25 after 2", st.Dilation, st.DilationRaises)
	}
	// A raise comes at most three windows after the model first falls
	// DilateAfter behind (then two of growth).
	if st.ExcessLag.Max > 2e6 {
		t.Errorf("excess lag max %.0f ns: the raises should have kept it within three DilateAfter windows", st.ExcessLag.Max)
	}
	if _, err := NewPacer(New(), PacerConfig{DilateStep: 0.5}); err == nil {
		t.Error("dilate step 0.5 accepted")
	}
}

func TestPacerDilation(t *testing.T) {
	c := newFakeClock()
	p, eng := startPacer(t, PacerConfig{Clock: c, Dilation: 100})
	r := &wallRecorder{clock: c}
	_ = p.Do(func() { eng.Schedule(1*Microsecond, r, 0, 0, nil) })
	c.Advance(50 * time.Microsecond) // 0.5us simulated
	var n int
	_ = p.Do(func() { n = len(r.at) })
	if n != 0 {
		t.Fatal("event ran before its dilated wall time")
	}
	c.Advance(50 * time.Microsecond)
	eventually(t, p, "dilated event", func() bool { return len(r.at) == 1 })
}

func TestPacerStopAndSubmitAfterStop(t *testing.T) {
	eng := New()
	p, err := NewPacer(eng, PacerConfig{Clock: newFakeClock(), InputQueue: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !p.TrySubmit(Input{Fn: func(Time) {}}) {
		t.Fatal("first TrySubmit refused")
	}
	if p.TrySubmit(Input{Fn: func(Time) {}}) {
		t.Fatal("TrySubmit on a full queue accepted")
	}
	if got := p.Stats().InputsRefused; got != 1 {
		t.Errorf("refused %d, want 1", got)
	}
	done := make(chan error)
	go func() { done <- p.Run() }()
	p.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := p.Submit(Input{Fn: func(Time) {}}); err != ErrPacerStopped {
		t.Errorf("Submit after stop: %v", err)
	}
	if err := p.Do(func() {}); err != ErrPacerStopped {
		t.Errorf("Do after stop: %v", err)
	}
	if err := p.Run(); err == nil {
		t.Error("second Run: no error")
	}
}

func TestPacerRealClock(t *testing.T) {
	p, eng := startPacer(t, PacerConfig{Spin: 20 * time.Microsecond})
	r := &wallRecorder{clock: newFakeClock()}
	var start time.Time
	var at Time
	_ = p.Do(func() {
		start = time.Now()
		at = p.SimTime(start) + 2*Millisecond
		eng.Schedule(at, r, 0, 0, nil)
	})
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		_ = p.Do(func() { n = len(r.at) })
		if n == 1 {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	if el := time.Since(start); el < 2*time.Millisecond {
		t.Errorf("event 2ms ahead ran after %v", el)
	}
	if st := p.Snapshot(); st.Lag.Count == 0 {
		t.Error("no lag sample recorded")
	}
}

// TestHRTimer checks the real clock's precise timer: it fires once per
// arming, not before the requested time, and disarm cancels it.
func TestHRTimer(t *testing.T) {
	h := newHRTimer()
	if h == nil {
		t.Skip("no timerfd on this platform")
	}
	defer h.close()
	for _, d := range []time.Duration{50 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		h.arm(d)
		select {
		case <-h.c:
			if el := time.Since(start); el < d {
				t.Errorf("armed for %v, fired after %v", d, el)
			}
		case <-time.After(time.Second):
			t.Fatalf("armed for %v, not fired within 1 s", d)
		}
	}
	h.arm(20 * time.Millisecond)
	h.disarm()
	select {
	case <-h.c:
		t.Error("fired after disarm")
	case <-time.After(40 * time.Millisecond):
	}
}

// ticker reschedules itself every nanosecond of simulated time: a model
// that can never catch up with a wall clock an hour ahead.
type ticker struct{ eng *Engine }

func (k *ticker) Handle(*Event) { k.eng.After(Nanosecond, k, 0, 0, nil) }

// TestPacerStopsWhileFarBehind: a pacer with an endless backlog still
// returns from Run after Stop (it used to return only once caught up, so a
// daemon that fell behind hung on SIGTERM). How soon is the machine's
// (one batch of events) and only logged; the 10 s limit catches the hang.
func TestPacerStopsWhileFarBehind(t *testing.T) {
	c := newFakeClock()
	eng := New()
	p, err := NewPacer(eng, PacerConfig{Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	eng.Schedule(0, &ticker{eng}, 0, 0, nil)
	c.Advance(time.Hour)
	errc := make(chan error, 1)
	go func() { errc <- p.Run() }()
	time.Sleep(20 * time.Millisecond) // let it start on the backlog
	start := time.Now()
	p.Stop()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Run returned %v after Stop", time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of Stop with a backlog")
	}
}

// waitAsleep waits until the loop sleeps (it then lets go of the engine).
func waitAsleep(t *testing.T, p *Pacer) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		s := p.sleeping
		p.mu.Unlock()
		if s {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatal("the loop never went to sleep")
}

// With DirectInput an input submitted while the loop sleeps runs on the
// submitter's goroutine before Submit returns, at its wall time mapped to
// simulated time; an event it schedules before the loop's timer wakes the
// loop, which then fires it on time.
func TestPacerDirectInput(t *testing.T) {
	c := newFakeClock()
	p, eng := startPacer(t, PacerConfig{Clock: c, DirectInput: true})
	waitAsleep(t, p)
	c.Advance(3 * time.Microsecond)
	r := &wallRecorder{clock: c}
	var got []Time
	err := p.Submit(Input{At: c.Now(), Fn: func(at Time) {
		got = append(got, at)
		eng.Schedule(at+5*Microsecond, r, 0, 0, nil)
	}})
	if err != nil {
		t.Fatal(err)
	}
	// No synchronisation with the loop: the input ran on this goroutine
	// (the race detector would object otherwise).
	if len(got) != 1 || got[0] != 3*Microsecond {
		t.Fatalf("direct input ran at %v, want once at 3us before Submit returned", got)
	}
	if n := p.Stats().DirectRuns; n != 1 {
		t.Errorf("direct runs %d, want 1", n)
	}
	// The loop slept with a timer an interval (1 s) away; the event at 8us
	// must not wait for it.
	waitAsleep(t, p)
	c.Advance(5 * time.Microsecond)
	eventually(t, p, "event scheduled by the direct input", func() bool { return len(r.at) == 1 })
	if r.at[0] != 8*Microsecond || !r.wall[0].Equal(c.Now()) {
		t.Errorf("event at %v ran at wall %v, want 8us at %v", r.at[0], r.wall[0], c.Now())
	}
}

// On the real clock a direct run that schedules an event before the
// sleeping loop's timer moves the timer (the timerfd, or the Go timer)
// instead of waking the loop, and the event still runs on time; a direct
// run that leaves the loop's next event where it was neither wakes the
// loop nor moves its timer (the loop's own target, not the later time its
// timer was set for, is what counts: comparing with the latter woke an
// idle daemon's loop on pings, its next event being the watchdog).
func TestPacerDirectRunMovesTheLoopTimer(t *testing.T) {
	for _, precise := range []bool{false, true} {
		t.Run(fmt.Sprintf("precise_timer=%v", precise), func(t *testing.T) { testDirectRunMovesTimer(t, precise) })
	}
}

func testDirectRunMovesTimer(t *testing.T, precise bool) {
	p, eng := startPacer(t, PacerConfig{DirectInput: true, Interval: time.Second, PreciseTimer: precise})
	var hr bool
	_ = p.Do(func() { hr = p.hr != nil }) // Run makes the timerfd
	if precise && !hr {
		t.Skip("no timerfd here")
	}
	ran := make(chan time.Time, 2)
	rec := handlerFunc(func(*Event) { ran <- time.Now() })
	var last Time
	_ = p.Do(func() { last = eng.Now() + 400*Millisecond; eng.Schedule(last, rec, 0, 0, nil) })
	waitAsleep(t, p)
	sub := time.Now()
	if err := p.Submit(Input{At: sub, Fn: func(at Time) { eng.Schedule(at+3*Millisecond, rec, 0, 0, nil) }}); err != nil {
		t.Fatal(err)
	}
	if p.Stats().DirectRuns != 1 {
		t.Fatalf("direct runs %d, want 1", p.Stats().DirectRuns)
	}
	select {
	case at := <-ran:
		// 3 ms after the input, not at the loop's 400 ms event; the margin
		// is for a loaded machine.
		if late := at.Sub(sub); late < 3*time.Millisecond || late > 200*time.Millisecond {
			t.Errorf("event due 3 ms after the input ran after %v", late)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the event scheduled by the direct run never ran")
	}
	if k, m := p.kicks.Load(), p.timerMoves.Load(); k != 0 || m != 1 {
		t.Errorf("the loop was kicked %d times and its timer moved %d times, want 0 and 1", k, m)
	}
	// Asleep toward the 400 ms event: an input that schedules nothing
	// leaves it the next event.
	waitAsleep(t, p)
	if err := p.Submit(Input{At: time.Now(), Fn: func(Time) {}}); err != nil {
		t.Fatal(err)
	}
	if k, m := p.kicks.Load(), p.timerMoves.Load(); k != 0 || m != 1 {
		t.Errorf("after an input that scheduled nothing: kicked %d, timer moved %d, want 0 and 1", k, m)
	}
	select {
	case <-ran:
	case <-time.After(2 * time.Second):
		t.Fatal("the loop's own event never ran")
	}
}

// A submitter's inputs run in submission order whether they are queued
// (the engine busy) or run directly (the loop asleep), and every input
// runs once: a direct run first admits what its submitter queued before.
func TestPacerDirectInputKeepsOrder(t *testing.T) {
	p, eng := startPacer(t, PacerConfig{DirectInput: true, Spin: 20 * time.Microsecond, InputQueue: 64})
	const n = 20000
	var got []int
	busy := handlerFunc(func(*Event) {
		d := time.Now().Add(2 * time.Microsecond)
		for time.Now().Before(d) {
		}
	})
	var wg sync.WaitGroup
	for s := 0; s < 2; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < n; i++ {
				i := i
				_, err := p.SubmitWait(Input{At: time.Now(), Fn: func(at Time) {
					got = append(got, s*n+i)
					// Keep the engine busy now and then, so that
					// inputs queue behind it.
					if i%7 == 0 {
						eng.Schedule(at+Time(i%50)*Microsecond, busy, 0, 0, nil)
					}
				}})
				if err != nil {
					t.Error(err)
					return
				}
				if i%1000 == 0 {
					time.Sleep(200 * time.Microsecond) // let the loop fall asleep
				}
			}
		}(s)
	}
	wg.Wait()
	var all []int
	eventually(t, p, "every input", func() bool {
		all = append(all[:0], got...)
		return len(got) == 2*n
	})
	last := [2]int{-1, -1}
	for _, v := range all {
		s, i := v/n, v%n
		if i <= last[s] {
			t.Fatalf("input %d of submitter %d ran after its input %d", i, s, last[s])
		}
		last[s] = i
	}
	st := p.Snapshot()
	t.Logf("direct runs %d of %d inputs", st.DirectRuns, 2*n)
}

// pollChain is an event that schedules the next one step later, n times.
type pollChain struct {
	eng  *Engine
	step Time
	n    int
}

func (c *pollChain) Handle(ev *Event) {
	if c.n--; c.n > 0 {
		c.eng.Schedule(ev.At+c.step, c, 0, 0, nil)
	}
}

// BenchmarkPacerPoll measures the pacer's own cost per event (the lag and
// excess-lag bookkeeping, clock reads) on a loop that is behind: 64 chains
// of events 10 ns apart, all due, fired by poll against a fake clock.
func BenchmarkPacerPoll(b *testing.B) {
	c := newFakeClock()
	eng := New()
	p, err := NewPacer(eng, PacerConfig{Clock: c})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		eng.Schedule(Time(i), &pollChain{eng: eng, step: 10 * Nanosecond, n: b.N/64 + 1}, 0, 0, nil)
	}
	c.Advance(time.Hour)
	b.ResetTimer()
	for eng.Fired() < uint64(b.N) && eng.NextAt() != Never {
		p.poll()
	}
}

// With BusyPoll the loop does not sleep while traffic flows: after an
// input it keeps the engine (polling) until BusyPoll of the wall clock has
// passed without another, then parks; without it, it sleeps at once.
func TestPacerBusyPoll(t *testing.T) {
	for _, poll := range []time.Duration{0, 5 * time.Millisecond} {
		c := newFakeClock()
		p, _ := startPacer(t, PacerConfig{Clock: c, BusyPoll: poll})
		waitAsleep(t, p)
		ran := make(chan struct{}, 1)
		if err := p.Submit(Input{At: c.Now(), Fn: func(Time) { ran <- struct{}{} }}); err != nil {
			t.Fatal(err)
		}
		<-ran
		if poll == 0 {
			waitAsleep(t, p)
			continue
		}
		// 20 ms of real time, no fake time: the loop holds the engine
		// throughout (it polls).
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if p.mu.TryLock() {
				asleep := p.sleeping
				p.mu.Unlock()
				if asleep {
					t.Fatal("busy poll: the loop slept within BusyPoll of an input")
				}
			}
		}
		c.Advance(poll + time.Millisecond)
		waitAsleep(t, p) // parked after the idle period
		if st := p.Snapshot(); st.BusyPolls == 0 {
			t.Error("no busy poll counted")
		}
	}
}
