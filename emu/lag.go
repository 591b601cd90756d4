package emu

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Bounded lag (pacing.max_lag, pacing.overload). A model that cannot
// follow its load falls behind the wall clock without bound: frames then
// wait in the pacer and the fabric for ever longer, and every measurement
// describes the past. An emulation that cannot keep real time must not
// pretend, so the daemon does one of three things past max_lag:
//
//   - backpressure (the default): the TAP readers stop handing frames to
//     the model (like admit_bytes: the kernel's TAP queue and then the
//     applications wait) until it is back within the bound, and they never
//     hand it more than lagQueue frames ahead (frames queued for the loop
//     are lag the pacer cannot see yet). With max_lag under lag_threshold
//     the applications slow down before an interval turns invalid: the
//     run stays real-time valid at a lower throughput, and lag_stalls
//     says it was slowed. Background load is not throttled (it is the
//     experiment): if it alone is more than the model can follow, the lag
//     still grows and the intervals say "behind".
//   - dilate: the pacer raises the dilation (des.PacerConfig.DilateAfter),
//     as often as it takes; the status shows the dilation reached.
//   - none: the model falls behind; the intervals say so.
//
// A warning names the cause at most every lagWarnEvery; SIGTERM still
// ends the daemon within drain_timeout (the pacer honours Stop between
// batches).

const (
	lagWarnEvery = 10 * time.Second
	lagPollMin   = 200 * time.Microsecond
	lagPollMax   = 5 * time.Millisecond
	// lagQueue is how many inputs may wait for the loop before readers
	// stop under backpressure (a few hundred microseconds of the model's
	// work), and lagQueuePoll how often a reader looks again then.
	lagQueue     = 64
	lagQueuePoll = 50 * time.Microsecond
)

// lagWarner rate-limits the lag warning.
type lagWarner struct {
	next       atomic.Int64 // unix ns
	suppressed atomic.Uint64
}

// awaitLag waits, on p's reader goroutine, while the model is more than
// max_lag behind; false if the emulator is stopping.
func (e *Emulator) awaitLag(p *port) bool {
	limit := time.Duration(e.cfg.Pacing.MaxLag)
	if limit <= 0 || e.cfg.Pacing.Overload != OverloadBackpressure {
		return true
	}
	stalled := false
	for {
		behind := e.pacer.Behind()
		queued := e.pacer.Queued()
		if behind <= limit && queued <= lagQueue {
			return true
		}
		if e.quitting.Load() {
			return false
		}
		if !stalled {
			stalled = true
			if behind > limit {
				p.lagStalls.Add(1)
				e.warnLag(p, behind, limit)
			} else {
				p.readerStalls.Add(1) // as a full input queue
			}
		}
		if behind <= limit {
			time.Sleep(lagQueuePoll) // only the queue is long: it drains fast
			continue
		}
		time.Sleep(min(max(behind-limit, lagPollMin), lagPollMax))
	}
}

// warnLag logs, at most every lagWarnEvery, that reading stopped and why.
func (e *Emulator) warnLag(p *port, behind, limit time.Duration) {
	now := time.Now().UnixNano()
	n := e.lagWarn.next.Load()
	if now < n || !e.lagWarn.next.CompareAndSwap(n, now+int64(lagWarnEvery)) {
		e.lagWarn.suppressed.Add(1)
		return
	}
	cause := "the frames from the TAP devices are more than the model can follow at this dilation"
	if len(e.background) > 0 {
		cause = "the model cannot follow its load (background load on hosts without a TAP, and the TAP frames) at this dilation"
	}
	e.log.Warn("model behind the wall clock past pacing.max_lag: not reading the TAP devices until it catches up (pacing.overload backpressure; pacing.overload dilate slows the fabric instead)",
		zap.Duration("behind", behind), zap.Duration("max_lag", limit), zap.String("tap", p.cfg.Name),
		zap.String("cause", cause), zap.Uint64("suppressed_since_last_log", e.lagWarn.suppressed.Swap(0)))
}
