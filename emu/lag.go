package emu

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Bounded lag (pacing.max_lag). A model that cannot follow its load falls
// behind the wall clock without bound: frames then wait in the pacer and
// the fabric for ever longer, and every measurement describes the past.
// Past max_lag the TAP readers stop handing frames to the model (input
// backpressure, like admit_bytes: the kernel's TAP queue and then the
// applications wait) until it is back within the bound, and a warning
// names the cause at most every lagWarnEvery. Background load is not
// throttled (it is the experiment); if it alone is more than the model can
// follow, the lag still grows, the warning says so and SIGTERM still ends
// the daemon within drain_timeout (the pacer honours Stop between batches).

const (
	lagWarnEvery = 10 * time.Second
	lagPollMin   = 200 * time.Microsecond
	lagPollMax   = 5 * time.Millisecond
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
	if limit <= 0 {
		return true
	}
	stalled := false
	for {
		behind := e.pacer.Behind()
		if behind <= limit {
			return true
		}
		if e.quitting.Load() {
			return false
		}
		if !stalled {
			stalled = true
			p.lagStalls.Add(1)
			e.warnLag(p, behind, limit)
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
	e.log.Warn("model behind the wall clock past pacing.max_lag: not reading the TAP devices until it catches up (raise pacing.dilation or lower the load)",
		zap.Duration("behind", behind), zap.Duration("max_lag", limit), zap.String("tap", p.cfg.Name),
		zap.String("cause", cause), zap.Uint64("suppressed_since_last_log", e.lagWarn.suppressed.Swap(0)))
}
