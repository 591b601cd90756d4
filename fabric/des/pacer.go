package des

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/internal/hist"
)

// Clock is the wall clock a Pacer follows. Tests use a fake one.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Pacer uses. Reset may be called
// from another goroutine than the one waiting on C (as with *time.Timer
// since Go 1.23, a value from before the Reset is not received after it).
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// WallClock is the real clock.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (WallClock) NewTimer(d time.Duration) Timer { return wallTimer{time.NewTimer(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time { return w.t.C }
func (w wallTimer) Stop() bool          { return w.t.Stop() }
func (w wallTimer) Reset(d time.Duration) bool {
	return w.t.Reset(d)
}

// Input is an external event (a frame read from a device): the wall time
// it happened and the function that brings it into the model. Fn runs on
// the Pacer's loop goroutine at simulated time at, which is the wall time
// mapped to simulated time, or the engine's current time if the loop had
// already moved past it.
type Input struct {
	At time.Time
	Fn func(at Time)
}

// PacerConfig configures a Pacer.
type PacerConfig struct {
	// Dilation is how many wall seconds one simulated second takes: 1 is
	// real time, 10 runs the model ten times slower than the wall clock
	// (for fabrics faster than the CPU can follow). 0 means 1.
	Dilation float64
	// InputQueue bounds the queue of inputs waiting for the loop; 0 means 4096.
	InputQueue int
	// LagThreshold is the excess lag (see Pacer) above which an interval
	// is not real-time valid; 0 means 1 ms.
	LagThreshold time.Duration
	// Interval is the wall-clock width of a validity interval; 0 means 1 s.
	Interval time.Duration
	// Spin is how close (wall time) the next event may be for the loop to
	// poll instead of arming a timer, whose wake-up latency is tens of
	// microseconds. 0 disables polling.
	Spin time.Duration
	// PreciseTimer makes the loop sleep on a timerfd (Linux, real clock)
	// instead of the runtime's timers, which wake an idle process with
	// millisecond granularity: a sleep shorter than 1 ms can overshoot by up
	// to 1 ms, which shows as lag. The timerfd removes that lag but, as
	// measured on a shared 2-core VM, adds about 50 µs to a ping's round
	// trip through the daemon, so it is off by default.
	PreciseTimer bool
	// DirectInput lets a submitter run its input itself when the loop is
	// asleep (see Pacer): the input is admitted and the due events fired on
	// the submitting goroutine, without waking the loop's goroutine first.
	DirectInput bool
	// BusyPoll, when positive, runs the loop on a locked OS thread that
	// polls instead of sleeping while traffic flows: as long as an input
	// was admitted or an event fired within the last BusyPoll, the loop
	// spins (looking at its input queue) up to its next event or the end
	// of that idle period, and parks (sleeps as usual) only after it. A
	// frame then finds the loop awake and is taken without a thread
	// wake-up (DPDK's and netmap's poll-mode threads, Linux's
	// SO_BUSY_POLL); it costs a CPU while traffic flows. 0 = never.
	BusyPoll time.Duration
	// DilateAfter, when positive, makes the pacer slow the model down
	// rather than let it fall behind (the dilate overload mode): when the
	// loop's oldest due event is more than DilateAfter behind the wall
	// clock (excess lag, see Pacer) and the backlog grew over two windows
	// of DilateAfter running (a loop that was only held up catches up), the dilation is multiplied by DilateStep and the wall
	// clock re-mapped so that the present is the engine's simulated time. A model that still cannot
	// keep up falls behind again and the dilation rises again: it grows
	// until the model keeps up, never shrinks, and every raise is counted
	// and marks its interval (time-dilation emulators slow the guests down
	// so that the model stays valid; here the model's clock slows and the
	// applications see a slower fabric). 0 = the dilation is fixed.
	DilateAfter time.Duration
	// DilateStep is the factor of one raise; 0 means 1.5.
	DilateStep float64
	// Classify, when set, names the cause of an invalid interval; it runs
	// on the loop as the interval closes, with the pacer's own cause in
	// r.Cause (CauseBehind, CausePreempted, CauseDilated or CauseLate), and returns the
	// cause to record (r.Cause to keep it).
	Classify func(r IntervalReport) string
	// Stages, when set, runs on the loop as every interval closes (valid
	// or not) and returns the largest time each stage of the caller's path
	// took during the interval, starting a new window. An invalid
	// interval's report keeps them (IntervalReport.Stages) and names the
	// stage that took longest, so that a late interval says where its
	// time went and by how much. Intervals skipped in one go after a long
	// idle stretch are not asked (nothing ran in them); the next window
	// covers them.
	Stages func() []StageTime
	// Clock is the wall clock; nil means the real one.
	Clock Clock
}

// Causes of an invalid interval the pacer tells apart by itself.
const (
	// CauseBehind: the model's backlog grew: its oldest due event was
	// later and later at looks half a threshold apart (DilateAfter apart
	// in the dilate mode): it could not follow its load.
	CauseBehind = "behind"
	// CausePreempted: the interval's latest event came due while the loop
	// ran, and the backlog did not keep growing: the loop was held up
	// while busy (its thread preempted, a pause of the runtime, one slow
	// event) and caught up.
	CausePreempted = "preempted"
	// CauseDilated: the interval raised the dilation (DilateAfter).
	CauseDilated = "dilation_raised"
	// CauseLate: the interval's latest event came due while the loop
	// slept, and the loop (or a direct run) woke late for it, beyond any
	// oversleep of its timer: an input handed over late, the thread
	// waiting for a CPU after the wake-up, a pause of the runtime; not the
	// model's backlog.
	CauseLate = "late_start"
)

// IntervalReport is one validity interval whose excess lag exceeded the
// threshold.
type IntervalReport struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// MaxLag is the interval's largest excess lag.
	MaxLag time.Duration `json:"max_lag_ns"`
	// Behind is the interval's largest backlog: how far behind the wall
	// clock the oldest due event still was after a batch (0 if the loop
	// always caught up).
	Behind time.Duration `json:"behind_ns"`
	// Cause says why the interval was not valid (CauseBehind,
	// CausePreempted, CauseDilated, CauseLate or what
	// PacerConfig.Classify named).
	Cause string `json:"cause"`
	// Stages is what PacerConfig.Stages measured during the interval, and
	// Slowest the stage among them that took longest (empty without it).
	Stages  []StageTime `json:"stages,omitempty"`
	Slowest string      `json:"slowest_stage,omitempty"`
}

// StageTime is the largest wall time one stage of a frame's path took
// within an interval.
type StageTime struct {
	Stage string        `json:"stage"`
	Max   time.Duration `json:"max_ns"`
}

// slowestStage names the stage of st that took longest ("" if none took
// any time).
func slowestStage(st []StageTime) string {
	var name string
	var worst time.Duration
	for _, s := range st {
		if s.Max > worst {
			name, worst = s.Stage, s.Max
		}
	}
	return name
}

// PacerStats is a snapshot of the pacer's measurements.
type PacerStats struct {
	// SimNow is the engine's simulated time; WallSim the wall clock mapped
	// to simulated time (SimNow trails it by at most the current lag).
	SimNow  Time `json:"sim_now_ps"`
	WallSim Time `json:"wall_sim_ps"`
	// Lag is the distribution, in nanoseconds of wall time, of how late
	// each event ran: the wall time it ran minus the wall time its
	// simulated time maps to.
	Lag hist.Summary `json:"lag_ns"`
	// WakeLag is the distribution (ns) of how late the loop woke from a
	// timed sleep: the timer's own granularity and the scheduler's delay
	// (the Go runtime's timers wake an idle process with millisecond
	// granularity). ExcessLag is the distribution of each event's lag
	// minus the part of it spent while the loop overslept: how far the
	// model itself was behind.
	WakeLag   hist.Summary `json:"wake_lag_ns"`
	ExcessLag hist.Summary `json:"excess_lag_ns"`
	// Behind is how far behind the wall clock the loop's oldest due event
	// was at its last look (0 when it was keeping up), in ns.
	Behind time.Duration `json:"behind_ns"`
	// Events and Inputs count what the loop ran and admitted.
	Events uint64 `json:"events"`
	Inputs uint64 `json:"inputs"`
	// InputsRefused counts TrySubmit calls refused because the input
	// queue was full.
	InputsRefused uint64 `json:"inputs_refused"`
	// DirectRuns counts inputs run by their submitter because the loop
	// was asleep (DirectInput).
	DirectRuns uint64 `json:"direct_runs"`
	// Intervals counts finished validity intervals; Invalid those whose
	// largest excess lag exceeded the threshold, the most recent of which
	// are listed in Recent (at most 16). ValidFraction is the fraction of
	// the finished intervals (of equal wall width, so of the time) that
	// were valid, 1 before the first one ends.
	Intervals     uint64           `json:"intervals"`
	Invalid       uint64           `json:"invalid_intervals"`
	ValidFraction float64          `json:"valid_fraction"`
	Recent        []IntervalReport `json:"recent_invalid,omitempty"`
	// InvalidByCause counts the invalid intervals by cause
	// (IntervalReport.Cause).
	InvalidByCause map[string]uint64 `json:"invalid_by_cause,omitempty"`
	// InvalidBySlowest counts the invalid intervals by the stage that took
	// longest in them (PacerConfig.Stages; absent without it).
	InvalidBySlowest map[string]uint64 `json:"invalid_by_slowest_stage,omitempty"`
	// LagThreshold is the validity threshold.
	LagThreshold time.Duration `json:"lag_threshold_ns"`
	// Dilation is the dilation in force; DilationRaises how often the
	// dilate overload mode (PacerConfig.DilateAfter) raised it.
	Dilation       float64 `json:"dilation"`
	DilationRaises uint64  `json:"dilation_raises"`
	// Queued is the number of inputs waiting in the queue.
	Queued int `json:"queued_inputs"`
	// BusyPolls counts the busy-polling loop's spins instead of sleeps
	// (PacerConfig.BusyPoll).
	BusyPolls uint64 `json:"busy_polls"`
	// LagBuckets, WakeLagBuckets and ExcessLagBuckets are the three
	// distributions (ns) at LagBounds, for Prometheus histograms.
	LagBuckets       hist.Buckets `json:"-"`
	WakeLagBuckets   hist.Buckets `json:"-"`
	ExcessLagBuckets hist.Buckets `json:"-"`
}

// LagBounds are the bucket bounds, in nanoseconds, of the lag histograms:
// 1 µs to 1 s, 1-2.5-5 per decade (wake-ups take tens of microseconds,
// timer oversleeps a millisecond, a model behind its load seconds).
var LagBounds = []float64{1e3, 2.5e3, 5e3, 1e4, 2.5e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9}

// ErrPacerStopped is returned by Submit once the pacer's loop has ended.
var ErrPacerStopped = errors.New("des: pacer stopped")

const maxRecentInvalid = 16

// Pacer runs an Engine against the wall clock: simulated time t is due at
// wall time start + t*Dilation. Its loop admits external inputs at their
// arrival time, fires due events, and sleeps until the next event or
// input. It never gives up for falling behind: it fires late events as
// soon as it can and records how late they were (the lag) in a histogram,
// and marks validity intervals whose worst excess lag exceeded a
// threshold, where the run was not real-time.
//
// Excess lag is what validity measures: an event's lag minus the part of
// it that fell while the loop overslept a timed sleep (woke later than it
// asked). Oversleeping is the host's timer granularity and scheduling,
// not the model falling behind: with the Go runtime's timers an idle
// process wakes with millisecond granularity (measured on a shared 2-core
// VM: 0.6 ms median, 1.3-1.5 ms p99, a few ms at worst), so the raw lag of
// an idle loop's every event is about that, and a 1 ms threshold on it
// marked every interval invalid. The oversleeps are reported on their own
// (WakeLag). A model that cannot keep up never sleeps and its events'
// lag grows with no oversleep to explain it, so it is invalid as soon as
// it is a threshold behind.
//
// Everything that touches the engine must happen on the loop goroutine:
// inside an Input's Fn, an event handler, or a function passed to Do.
//
// With DirectInput, "the loop" is whichever goroutine holds the engine
// (the mutex mu): the loop's own goroutine holds it except while it
// sleeps, and a Submit that finds it free (the loop asleep) admits its
// input and fires every due event itself, spinning as the loop would while
// the next event is within Spin, then lets go and wakes the loop only if
// its timer is now due later than the engine's next event. That saves the
// hand-over to the sleeping loop (a thread wake-up: tens of microseconds
// on a VM whose other CPU is halted) on every frame that finds the loop
// idle. The model sees the same inputs at the same simulated times either
// way, so it stays deterministic for a given arrival sequence; only one
// goroutine runs it at a time, and Fn and the handlers still run one at a
// time, in order.
type Pacer struct {
	eng      *Engine
	clock    Clock
	dilation float64
	start    time.Time
	in       chan Input
	calls    chan func()
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	cfg      PacerConfig

	refused atomic.Uint64

	// mu is held by whoever runs the engine (DirectInput): the loop's
	// goroutine except while it sleeps, or a submitter running its input.
	mu sync.Mutex
	// kick wakes the sleeping loop (capacity 1); timer is its timer while
	// it sleeps on one of the clock's (under mu), which a direct run
	// moves instead of waking the loop (wakeLoopAt).
	kick  chan struct{}
	timer Timer
	// Under mu: the sleeping loop sleeps toward the wall time sleepUntil,
	// the due time of the engine's next event when it went to sleep (or
	// the end of its longest sleep); sleeping is false while the loop
	// runs; stopped once Run has ended.
	sleeping   bool
	sleepUntil time.Time
	stopped    bool
	directRuns atomic.Uint64
	// kicks and timerMoves count how direct runs woke the loop early:
	// by waking it (kickLoop) or by moving its timer (wakeLoopAt).
	kicks, timerMoves atomic.Uint64

	// loop-owned state (under mu)
	active      time.Time // when an input or event last ran (BusyPoll)
	busyPolls   uint64    // spins of the busy-polling loop
	inputs      uint64
	lag         hist.Hist // ns
	wake        hist.Hist // ns: oversleeps of timed sleeps
	excess      hist.Hist // ns: lag beyond the oversleep
	asked       time.Time // when the last timed sleep asked to wake
	woke        time.Time // when it woke (zero before the first)
	timerWoke   bool      // woken by its timer: poll's first look sets woke
	behind      atomic.Int64
	ivStart     time.Time
	ivMax       time.Duration
	ivBehind    time.Duration // the interval's largest backlog after a batch
	ivRaised    bool          // the interval raised the dilation
	ivBusy      bool          // the interval's latest event came due while the loop ran
	ivGrew      bool          // the model's backlog grew (trackBacklog)
	slept       time.Time     // when the loop last went to sleep
	overAt      time.Time     // checkDilate's first look past DilateAfter
	overBehind  time.Duration // and the raw lag of the oldest due event then
	overGrew    int           // windows running in which the backlog grew
	overTid     int           // the loop's OS thread at overAt (0: unknown)
	overCPU     time.Duration // and its CPU time then
	intervals   uint64
	invalid     uint64
	byCause     map[string]uint64
	bySlowest   map[string]uint64
	raises      uint64
	recent      []IntervalReport
	inputH      *inputHandler
	freeInputs  []*Input // admitted inputs' holders, for reuse (loop-owned)
	hr          *hrTimer // real clock only: precise sleeps (timerfd)
	running     atomic.Bool
	lastSnap    atomic.Pointer[PacerStats]
	lastSnapped time.Time
}

type inputHandler struct{ p *Pacer }

// Handle runs an admitted input; its holder goes back to the free list
// first (no heap allocation per input once the list has grown).
func (h *inputHandler) Handle(ev *Event) {
	in := ev.Ref.(*Input)
	fn := in.Fn
	*in = Input{}
	h.p.freeInputs = append(h.p.freeInputs, in)
	fn(ev.At)
}

// NewPacer returns a pacer for eng. Simulated time zero maps to the wall
// time of the call plus the engine's current time; call Run to start it.
func NewPacer(eng *Engine, cfg PacerConfig) (*Pacer, error) {
	if cfg.Dilation == 0 {
		cfg.Dilation = 1
	}
	if cfg.Dilation < 0 || cfg.Dilation > 1e6 {
		return nil, fmt.Errorf("des: pacer dilation %g: want 0 < dilation <= 1e6", cfg.Dilation)
	}
	if cfg.InputQueue == 0 {
		cfg.InputQueue = 4096
	}
	if cfg.InputQueue < 0 {
		return nil, fmt.Errorf("des: pacer input queue %d: must be positive", cfg.InputQueue)
	}
	if cfg.LagThreshold == 0 {
		cfg.LagThreshold = time.Millisecond
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.LagThreshold < 0 || cfg.Interval < 0 || cfg.Spin < 0 || cfg.DilateAfter < 0 || cfg.BusyPoll < 0 {
		return nil, fmt.Errorf("des: pacer lag threshold, interval, spin, busy poll and dilate-after must not be negative")
	}
	if cfg.DilateStep == 0 {
		cfg.DilateStep = 1.5
	}
	if !(cfg.DilateStep > 1) {
		return nil, fmt.Errorf("des: pacer dilate step %g: want a factor above 1", cfg.DilateStep)
	}
	if cfg.Clock == nil {
		cfg.Clock = WallClock{}
	}
	p := &Pacer{eng: eng, clock: cfg.Clock, dilation: cfg.Dilation, cfg: cfg,
		in: make(chan Input, cfg.InputQueue), calls: make(chan func()), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), byCause: map[string]uint64{}, bySlowest: map[string]uint64{}}
	p.inputH = &inputHandler{p}
	now := p.clock.Now()
	p.start = now.Add(-p.wallOf(eng.Now()))
	p.ivStart = now
	p.lastSnap.Store(&PacerStats{LagThreshold: cfg.LagThreshold, Dilation: cfg.Dilation})
	return p, nil
}

// wallOf returns the wall duration after start at which t is due.
func (p *Pacer) wallOf(t Time) time.Duration {
	return time.Duration(float64(t) / float64(Nanosecond) * p.dilation)
}

// SimTime maps a wall instant to simulated time. With DilateAfter the
// mapping changes as the loop runs: call it on the loop only.
func (p *Pacer) SimTime(wall time.Time) Time {
	d := wall.Sub(p.start)
	if d < 0 {
		return 0
	}
	return Time(float64(d) / p.dilation * float64(Nanosecond))
}

// WallTime maps simulated time to the wall instant it is due (on the
// loop only, as SimTime).
func (p *Pacer) WallTime(t Time) time.Time { return p.start.Add(p.wallOf(t)) }

// Submit queues an input, blocking while the queue is full, or, with
// DirectInput and the loop asleep, runs it at once on the caller's
// goroutine. It returns ErrPacerStopped if the loop has ended or ends
// while waiting.
func (p *Pacer) Submit(in Input) error {
	if ran, err := p.tryDirect(in); ran {
		return err
	}
	return p.submitQueued(in)
}

func (p *Pacer) submitQueued(in Input) error {
	// A stopped pacer refuses before the queue is tried: with room in
	// the queue, a select of both would accept the input half the time
	// after Run has returned, and nothing would ever take it.
	if p.hasStopped() {
		return ErrPacerStopped
	}
	select {
	case p.in <- in:
		p.kickLoop()
		return nil
	case <-p.done:
		return ErrPacerStopped
	}
}

// kickLoop wakes the loop if it sleeps. With DirectInput the sleeping loop
// does not take inputs from the queue itself: only the engine's holder
// does, before anything else, so a submitter's queued inputs are admitted
// before one it runs directly (taken while the engine was held by a
// direct run, an input would be admitted after it).
func (p *Pacer) kickLoop() {
	if !p.cfg.DirectInput {
		return
	}
	select {
	case p.kick <- struct{}{}:
		p.kicks.Add(1)
	default:
	}
}

// SubmitWait is Submit that also reports whether it had to wait for room
// in the queue (backpressure the caller may want to count).
func (p *Pacer) SubmitWait(in Input) (waited bool, err error) {
	if ran, err := p.tryDirect(in); ran {
		return false, err
	}
	if p.hasStopped() {
		return false, ErrPacerStopped
	}
	select {
	case p.in <- in:
		p.kickLoop()
		return false, nil
	default:
	}
	return true, p.submitQueued(in)
}

// TrySubmit queues an input if there is room and reports whether it did;
// a refusal is counted in PacerStats.InputsRefused.
func (p *Pacer) TrySubmit(in Input) bool {
	if ran, err := p.tryDirect(in); ran {
		return err == nil
	}
	if p.hasStopped() {
		return false
	}
	select {
	case p.in <- in:
		p.kickLoop()
		return true
	default:
		p.refused.Add(1)
		return false
	}
}

// tryDirect runs in on the caller's goroutine if DirectInput is set and
// the engine is free (the loop asleep): it admits in, fires what is due
// and spins as the loop would, then wakes the loop if its timer is late
// for the engine's next event. ran is false if the caller must queue in.
func (p *Pacer) tryDirect(in Input) (ran bool, err error) {
	if !p.cfg.DirectInput || !p.mu.TryLock() {
		return false, nil
	}
	defer p.mu.Unlock()
	if p.stopped {
		return true, ErrPacerStopped
	}
	if !p.sleeping {
		// The loop has not started, or is between taking an input and
		// taking the engine: queue, it is about to look.
		return false, nil
	}
	p.directRuns.Add(1)
	p.woke = p.clock.Now() // as an input that woke the loop: no oversleep credit
	// Inputs queued before this one (the same submitter's, queued while
	// the loop held the engine) go first: a source's inputs keep their
	// order.
	for queued := true; queued; {
		select {
		case q := <-p.in:
			p.admit(q)
		default:
			queued = false
		}
	}
	p.admit(in)
	for {
		now := p.poll()
		next := p.eng.NextAt()
		if next == Never {
			return true, nil
		}
		due := p.WallTime(next)
		wait := due.Sub(now)
		if wait <= 0 && !p.stopRequested() {
			continue
		}
		if wait > 0 && wait <= p.cfg.Spin {
			p.spin(due)
			continue
		}
		if due.Before(p.sleepUntil) {
			p.wakeLoopAt(due, wait)
		}
		return true, nil
	}
}

// wakeLoopAt makes the sleeping loop wake at due, wait from now, for an
// event a direct run scheduled before the time the loop sleeps toward.
// The runner moves the loop's timer itself (its timerfd, or the clock's
// timer it sleeps on): waking the loop only for it to re-arm its timer is
// a thread wake-up (an inter-processor interrupt on a VM, several
// microseconds of the runner's time, and the loop then takes a CPU the
// next frame's reader wants). Called with mu held by a direct run.
func (p *Pacer) wakeLoopAt(due time.Time, wait time.Duration) {
	switch {
	case p.hr != nil:
		p.hr.arm(wait)
	case p.timer != nil:
		p.timer.Reset(wait)
	default:
		p.kickLoop()
		return
	}
	p.timerMoves.Add(1)
	p.asked = p.clock.Now().Add(wait)
	p.sleepUntil = due
}

func (p *Pacer) stopRequested() bool {
	select {
	case <-p.stop:
		return true
	default:
		return false
	}
}

// Do runs fn on the loop goroutine and waits for it; it returns
// ErrPacerStopped (without running fn) if the loop is not running.
func (p *Pacer) Do(fn func()) error {
	ran := make(chan struct{})
	select {
	case p.calls <- func() { fn(); close(ran) }:
		<-ran
		return nil
	case <-p.done:
		return ErrPacerStopped
	}
}

// Stop makes Run return after the event it is running. Idempotent.
func (p *Pacer) Stop() { p.stopOnce.Do(func() { close(p.stop) }) }

// hasStopped reports whether Run has returned.
func (p *Pacer) hasStopped() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when Run has returned.
func (p *Pacer) Done() <-chan struct{} { return p.done }

// Run is the loop. It returns when Stop is called. Run may be called once.
func (p *Pacer) Run() error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("des: pacer already running")
	}
	defer close(p.done)
	if p.cfg.BusyPoll > 0 {
		// One thread polls: the model's state stays in its caches and a
		// parked loop wakes on its own thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if _, real := p.clock.(WallClock); real && p.cfg.PreciseTimer {
		if p.hr = newHRTimer(); p.hr != nil {
			defer p.hr.close()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		select {
		case <-p.stop:
			p.stopped = true
			p.snapshot(p.clock.Now())
			return nil
		default:
		}
		now := p.poll()
		next := p.eng.NextAt()
		var wait time.Duration = -1 // forever
		if next != Never {
			wait = p.WallTime(next).Sub(now)
			if wait <= 0 {
				continue
			}
			if wait <= p.cfg.Spin {
				p.spin(p.WallTime(next))
				continue
			}
		}
		if p.cfg.BusyPoll > 0 {
			if until := p.active.Add(p.cfg.BusyPoll); now.Before(until) {
				if next != Never && p.WallTime(next).Before(until) {
					until = p.WallTime(next)
				}
				p.busyPolls++
				p.spin(until)
				continue
			}
		}
		// Wake up at least once per interval to close validity intervals
		// and refresh the snapshot.
		if wait < 0 || wait > p.cfg.Interval {
			wait = p.cfg.Interval
		}
		p.sleep(now.Add(wait), wait)
	}
}

// sleep blocks until an input, a call, a kick, Stop or wait has passed;
// until is the wall time the loop wants to look again at (the caller's
// now plus wait). It notes when it asked to wake and when it woke, and,
// woken by its timer, how late (the oversleep). It is called and returns
// with mu held and lets go of it while it waits (DirectInput submitters
// may run then).
func (p *Pacer) sleep(until time.Time, wait time.Duration) {
	var tc <-chan time.Time
	var stop func()
	if p.hr != nil {
		// Woken early, the loop leaves the timer armed: the next arm
		// replaces it, and a stale expiration only costs one look at the
		// queue, cheaper than a disarm system call per input.
		p.hr.arm(wait)
		tc, stop = p.hr.c, func() {}
	} else {
		t := p.clock.NewTimer(wait)
		tc, stop = t.C(), func() { t.Stop() }
		p.timer = t
	}
	// However it was woken (its timer, an input, a call), the loop is
	// late for what was due from when it asked to wake if it woke after.
	// The timer counts from now, not from the caller's now, which may be
	// a few events old: the time those events took is the loop's own lag.
	p.asked = p.clock.Now().Add(wait)
	p.sleeping, p.sleepUntil = true, until
	p.slept = p.clock.Now()
	in := p.in
	if p.cfg.DirectInput {
		in = nil // see kickLoop
	}
	p.mu.Unlock()
	select {
	case in := <-in:
		stop()
		p.mu.Lock()
		p.woke = p.clock.Now()
		p.admit(in)
	case fn := <-p.calls:
		stop()
		p.mu.Lock()
		p.woke = p.clock.Now()
		fn()
	case <-p.kick:
		stop()
		p.mu.Lock()
		p.woke = p.clock.Now()
	case <-tc:
		p.mu.Lock()
		p.woke = p.clock.Now()
		p.wake.Add(int64(max(0, p.woke.Sub(p.asked))))
		// Nothing runs before the loop's next look: the wake-up ends
		// there (a preemption in between is the wake-up's too).
		p.timerWoke = true
	case <-p.stop:
		stop()
		p.mu.Lock()
	}
	p.sleeping, p.timer = false, nil
	// A kick left over from a direct run the loop has already seen.
	select {
	case <-p.kick:
	default:
	}
}

// excessLag returns the part of lag, for an event due at due, that did not
// fall while the loop overslept its last timed sleep (from when it asked
// to wake to when it woke).
func (p *Pacer) excessLag(due time.Time, lag time.Duration) time.Duration {
	if !due.Before(p.woke) {
		return lag
	}
	from := p.asked
	if due.After(from) {
		from = due
	}
	credit := p.woke.Sub(from)
	if credit <= 0 {
		return lag
	}
	return max(0, lag-credit)
}

// excessLagOff is excessLag with wall times as offsets from the pacer's
// start: due, and when the loop asked to wake and woke.
func excessLagOff(due, lag, woke, asked time.Duration) time.Duration {
	if due >= woke {
		return lag
	}
	credit := woke - max(asked, due)
	if credit <= 0 {
		return lag
	}
	return max(0, lag-credit)
}

// spin polls for inputs until the wall time due, without sleeping.
func (p *Pacer) spin(due time.Time) {
	for {
		select {
		case in := <-p.in:
			p.admit(in)
			return
		case fn := <-p.calls:
			fn()
			return
		case <-p.stop:
			return
		default:
		}
		if !p.clock.Now().Before(due) {
			return
		}
		// Let a goroutine the loop just made runnable (a writer it handed
		// a frame to sits in this P's run queue) run here at once instead
		// of waiting for the spin to end or for another P to steal it.
		runtime.Gosched()
	}
}

// admit schedules an input at its wall time mapped to simulated time, or
// now if the loop is already past it (the lag of that event shows it).
func (p *Pacer) admit(in Input) {
	at := max(p.SimTime(in.At), p.eng.Now())
	p.inputs++
	var ip *Input
	if n := len(p.freeInputs); n > 0 {
		ip, p.freeInputs = p.freeInputs[n-1], p.freeInputs[:n-1]
	} else {
		ip = new(Input)
	}
	*ip = in
	p.eng.Schedule(at, p.inputH, 0, 0, ip)
}

// clockEvery is how many events the loop fires between clock reads.
const clockEvery = 32

// poll admits queued inputs and fires every due event. It returns the
// wall time it last read.
func (p *Pacer) poll() time.Time {
	now := p.clock.Now()
	if p.timerWoke {
		p.woke, p.timerWoke = now, false
	}
	inputs0, fired0 := p.inputs, p.eng.Fired()
	defer func() {
		if p.inputs != inputs0 || p.eng.Fired() != fired0 {
			p.active = now
		}
	}()
	for {
		// Admit what is queued (bounded, so events cannot starve).
		for i := 0; i < 256; i++ {
			select {
			case in := <-p.in:
				p.admit(in)
				continue
			case fn := <-p.calls:
				fn()
				continue
			default:
			}
			break
		}
		target := p.SimTime(now)
		fired := 0
		// Per event, wall times as offsets from start (integers, not
		// time.Time arithmetic: this runs for every event).
		nowOff := now.Sub(p.start)
		wokeOff, askedOff, sleptOff := p.woke.Sub(p.start), p.asked.Sub(p.start), p.slept.Sub(p.start)
		for fired < 4096 {
			at := p.eng.NextAt()
			if at > target {
				break
			}
			p.eng.Step()
			dueOff := p.wallOf(at)
			lag := nowOff - dueOff
			p.lag.Add(int64(lag))
			ex := excessLagOff(dueOff, lag, wokeOff, askedOff)
			p.excess.Add(int64(ex))
			if ex > p.ivMax {
				// Due before the loop went to sleep (it slept on a stale
				// look) or after it woke: it came due while the loop ran.
				p.ivMax, p.ivBusy = ex, dueOff < sleptOff || dueOff >= wokeOff
			}
			fired++
			if fired%clockEvery == 0 {
				now = p.clock.Now()
				// Within a batch too: a model far behind must not run a
				// whole batch late before it is slowed down.
				if p.checkDilate(now) {
					wokeOff, askedOff, sleptOff = p.woke.Sub(p.start), p.asked.Sub(p.start), p.slept.Sub(p.start)
				}
				target = p.SimTime(now)
				nowOff = now.Sub(p.start)
			}
		}
		// The backlog is measured on a fresh look: the batch's last clock
		// read may be up to clockEvery events old.
		now = p.clock.Now()
		p.closeIntervals(now)
		var behind time.Duration
		if next := p.eng.NextAt(); next != Never && p.WallTime(next).Before(now) {
			behind = p.excessLag(p.WallTime(next), now.Sub(p.WallTime(next)))
		}
		p.ivBehind = max(p.ivBehind, behind)
		if p.checkDilate(now) {
			behind = 0
		}
		p.behind.Store(int64(behind))
		if fired < 4096 && len(p.in) == 0 {
			return now
		}
		// Far behind the wall clock, a batch may follow a batch for a long
		// time: Stop must still be honoured between batches, or a daemon
		// that cannot keep up never exits.
		select {
		case <-p.stop:
			return now
		default:
		}
		now = p.clock.Now()
	}
}

// maxDilation is the largest dilation (as NewPacer accepts).
const maxDilation = 1e6

// checkDilate follows the model's backlog (trackBacklog) and raises the
// dilation (DilateAfter) while it grows. Loop only; true if it raised.
func (p *Pacer) checkDilate(now time.Time) bool {
	if !p.trackBacklog(now) || p.cfg.DilateAfter <= 0 || p.dilation >= maxDilation {
		return false
	}
	p.raiseDilation(now)
	p.overAt, p.overGrew = time.Time{}, 0
	return true
}

// trackBacklog reports whether the model is falling behind: its oldest
// due event more than a window late (excess lag) and later still (raw
// lag) at each of two looks that follow at least a window apart, with
// the loop's thread on a CPU at least half of each window; the window is
// DilateAfter, or half the lag threshold. A loop that was only held up
// (its thread preempted, a pause of the runtime) is late too, but it
// catches up, or it was not run: neither is the model's backlog. Loop
// only.
func (p *Pacer) trackBacklog(now time.Time) bool {
	win := p.cfg.DilateAfter
	if win <= 0 {
		win = p.cfg.LagThreshold / 2
	}
	// The excess lag says whether the loop is behind; the raw lag whether
	// the backlog grows. After an oversleep the excess lag of the events
	// due while the loop slept grows with the time the loop has been awake
	// (all of it is the loop's), but a model that catches up runs them
	// faster than the wall clock: their raw lag shrinks.
	var behind, raw time.Duration
	if next := p.eng.NextAt(); next != Never {
		if due := p.WallTime(next); now.After(due) {
			raw = now.Sub(due)
			behind = p.excessLag(due, raw)
		}
	}
	switch {
	case behind <= win:
		p.overAt, p.overGrew = time.Time{}, 0
		return false
	case p.overAt.IsZero():
		p.overAt, p.overBehind = now, raw
		p.overTid, p.overCPU = p.loopCPU()
		return false
	case now.Sub(p.overAt) < win:
		return false
	}
	tid, cpu := p.loopCPU()
	// Had the loop's thread the CPU for at least half the window? One
	// that was not run (other processes held the CPUs) falls behind
	// without being too slow: that is not counted as the model's backlog.
	// (Fake clocks and other systems: always.)
	ran := tid == 0 || tid != p.overTid || 2*(cpu-p.overCPU) >= now.Sub(p.overAt)
	if raw > p.overBehind && ran {
		p.overGrew++
	} else {
		p.overGrew = 0 // catching up, or not run
	}
	p.overAt, p.overBehind, p.overTid, p.overCPU = now, raw, tid, cpu
	if p.overGrew < 2 {
		return false
	}
	p.ivGrew = true
	return true
}

// loopCPU returns the loop's OS thread and its CPU time, or 0 when the
// clock is not the real one (a fake clock's time has nothing to do with
// CPU time) or the system cannot say.
func (p *Pacer) loopCPU() (tid int, cpu time.Duration) {
	if _, real := p.clock.(WallClock); !real {
		return 0, 0
	}
	tid, cpu, ok := threadCPU()
	if !ok {
		return 0, 0
	}
	return tid, cpu
}

// raiseDilation multiplies the dilation by DilateStep and maps now to the
// engine's simulated time: what was due and not yet run is due from now
// on, at the slower pace (loop only).
func (p *Pacer) raiseDilation(now time.Time) {
	p.dilation = min(p.dilation*p.cfg.DilateStep, maxDilation)
	p.start = now.Add(-p.wallOf(p.eng.Now()))
	p.raises++
	p.ivRaised = true
}

// closeIntervals finishes the validity intervals that ended before now and
// refreshes the snapshot a few times per interval.
func (p *Pacer) closeIntervals(now time.Time) {
	for now.Sub(p.ivStart) >= p.cfg.Interval {
		end := p.ivStart.Add(p.cfg.Interval)
		p.intervals++
		var stages []StageTime
		if p.cfg.Stages != nil {
			stages = p.cfg.Stages()
		}
		if p.ivMax > p.cfg.LagThreshold {
			p.invalid++
			r := IntervalReport{Start: p.ivStart, End: end, MaxLag: p.ivMax, Behind: p.ivBehind, Cause: CauseLate,
				Stages: stages, Slowest: slowestStage(stages)}
			switch {
			case p.ivRaised:
				r.Cause = CauseDilated
			case p.ivGrew:
				r.Cause = CauseBehind
			case p.ivBusy:
				r.Cause = CausePreempted
			}
			if p.cfg.Classify != nil {
				r.Cause = p.cfg.Classify(r)
			}
			p.byCause[r.Cause]++
			if r.Slowest != "" {
				p.bySlowest[r.Slowest]++
			}
			p.recent = append(p.recent, r)
			if len(p.recent) > maxRecentInvalid {
				p.recent = p.recent[1:]
			}
		}
		p.ivStart, p.ivMax, p.ivBehind, p.ivRaised, p.ivBusy, p.ivGrew = end, 0, 0, false, false, false
		if now.Sub(p.ivStart) > 4*p.cfg.Interval {
			// Long idle stretch: skip the empty intervals in one go, they
			// were valid (nothing ran late).
			skip := now.Sub(p.ivStart) / p.cfg.Interval
			p.intervals += uint64(skip)
			p.ivStart = p.ivStart.Add(skip * p.cfg.Interval)
		}
	}
	if now.Sub(p.lastSnapped) >= p.cfg.Interval/8 {
		p.snapshot(now)
	}
}

func (p *Pacer) snapshot(now time.Time) {
	p.lastSnapped = now
	s := &PacerStats{SimNow: p.eng.Now(), WallSim: p.SimTime(now), Lag: p.lag.Summarize(1),
		WakeLag: p.wake.Summarize(1), ExcessLag: p.excess.Summarize(1), Behind: p.Behind(),
		Events: p.eng.Fired(), Inputs: p.inputs, Intervals: p.intervals, Invalid: p.invalid, ValidFraction: 1,
		Recent: append([]IntervalReport(nil), p.recent...), LagThreshold: p.cfg.LagThreshold,
		Dilation: p.dilation, DilationRaises: p.raises, BusyPolls: p.busyPolls, InvalidByCause: maps.Clone(p.byCause), InvalidBySlowest: maps.Clone(p.bySlowest),
		LagBuckets: p.lag.Buckets(LagBounds), WakeLagBuckets: p.wake.Buckets(LagBounds), ExcessLagBuckets: p.excess.Buckets(LagBounds)}
	if len(s.InvalidByCause) == 0 {
		s.InvalidByCause = nil
	}
	if len(s.InvalidBySlowest) == 0 {
		s.InvalidBySlowest = nil
	}
	if p.intervals > 0 {
		s.ValidFraction = 1 - float64(p.invalid)/float64(p.intervals)
	}
	p.lastSnap.Store(s)
}

// Stats returns the latest snapshot of the measurements. It is safe from
// any goroutine; the snapshot is refreshed by the loop several times per
// interval (and by Snapshot on the loop goroutine).
func (p *Pacer) Stats() PacerStats {
	s := *p.lastSnap.Load()
	s.InputsRefused = p.refused.Load()
	s.DirectRuns = p.directRuns.Load()
	s.Queued = len(p.in)
	return s
}

// Snapshot asks the loop to refresh the statistics and returns them (the
// last snapshot if the loop is not running). It must not be called from
// the loop goroutine itself.
func (p *Pacer) Snapshot() PacerStats {
	_ = p.Do(func() { p.snapshot(p.clock.Now()) })
	return p.Stats()
}

// Behind returns how far behind the wall clock the loop's oldest due event
// was at the loop's last look, beyond what an oversleep explains (0 when
// it was keeping up). It is safe from any goroutine.
func (p *Pacer) Behind() time.Duration { return time.Duration(p.behind.Load()) }

// LagHist returns the lag histogram (nanoseconds). Loop goroutine only.
func (p *Pacer) LagHist() *hist.Hist { return &p.lag }

// Queued returns how many inputs wait in the queue (safe from any
// goroutine): a reader that wants the model to stay close to real time
// hands it no more than a few frames ahead.
func (p *Pacer) Queued() int { return len(p.in) }
