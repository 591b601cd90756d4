package emu

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
	"go.uber.org/zap"
)

// Saying why a run was not real-time valid.
//
// The pacer marks a one-second interval invalid when an event ran more
// than pacing.lag_threshold late beyond the loop's own oversleep. Two
// causes look the same in that count and call for different remedies: a
// model that cannot follow its load falls behind for good (the max_lag
// warning, lag.go, says so and the readers stall), while a model that
// keeps up on average is invalid because the thread holding it was not
// run for milliseconds at a time (the applications behind the TAPs took
// the CPUs; under iperf3 on two cores 23-77% of the intervals stay valid).
// The watcher looks at the count every validityEvery and logs one line
// naming which it was and what to do.

// CauseGCPause names an invalid interval whose latest event came due while
// the loop slept (des.CauseLate) during which the Go runtime stopped the
// world for its garbage collector longer than half the lag threshold.
const CauseGCPause = "gc_pause"

// classify refines the pacer's cause of an invalid interval (loop
// goroutine, once per invalid interval): a late start during which a
// garbage-collector pause of half the threshold or more ended is the GC's.
func (e *Emulator) classify(r des.IntervalReport) string {
	if r.Cause != des.CauseLate {
		return r.Cause
	}
	var gc debug.GCStats
	debug.ReadGCStats(&gc)
	for i, end := range gc.PauseEnd {
		if i < len(gc.Pause) && !end.Before(r.Start) && !end.After(r.End) && 2*gc.Pause[i] >= time.Duration(e.cfg.Pacing.LagThreshold) {
			return CauseGCPause
		}
	}
	return r.Cause
}

// CauseText explains a cause of invalid intervals in a sentence.
func CauseText(cause string) string {
	switch cause {
	case des.CauseBehind:
		return "the model fell behind its load: its backlog kept growing (CPU-bound)"
	case des.CausePreempted:
		return "the model was held up while busy and caught up (its thread preempted, a pause of the runtime)"
	case des.CauseLate:
		return "the model was idle and started late (its thread waited for a CPU, or a frame was handed over late)"
	case des.CauseDilated:
		return "the model fell behind and pacing.overload dilate raised the dilation"
	case CauseGCPause:
		return "a garbage-collector pause"
	}
	return cause
}

// validityEvery is how often the watcher looks.
const validityEvery = 10 * time.Second

// validityLook is what the watcher compares from one look to the next.
type validityLook struct {
	intervals, invalid, lagStalls uint64
}

func (e *Emulator) lookValidity() (validityLook, des.PacerStats) {
	st := e.pacer.Stats()
	l := validityLook{intervals: st.Intervals, invalid: st.Invalid}
	for _, p := range e.ports {
		l.lagStalls += p.lagStalls.Load()
	}
	return l, st
}

// validityWarning returns the warning for the intervals closed between
// two looks, with its cause, or "" if they were all valid. recent are the
// pacer's latest invalid intervals; prio the SCHED_FIFO priority in force.
func validityWarning(prev, cur validityLook, recent []des.IntervalReport, since time.Time, prio int) (msg, cause string, worst time.Duration) {
	invalid := cur.invalid - prev.invalid
	if invalid == 0 {
		return "", "", 0
	}
	for _, r := range recent {
		if r.End.After(since) {
			worst = max(worst, r.MaxLag)
		}
	}
	msg = fmt.Sprintf("%d of the last %d one-second intervals were not real-time valid", invalid, cur.intervals-prev.intervals)
	switch {
	case cur.lagStalls > prev.lagStalls:
		cause = "the model fell behind its load (lag stalls: see the max_lag warning); raise pacing.dilation (or --dilation auto) or lower the load"
	case prio == 0:
		cause = "the model kept up on average: the thread running it waited for a CPU the applications held; pacing.realtime_priority (--realtime-priority) runs the daemon's threads first"
	default:
		cause = "the model kept up on average and its threads run under SCHED_FIFO: the host did not run the daemon for that long (a virtual CPU descheduled, real-time throttling, or higher-priority threads)"
	}
	return msg, cause, worst
}

// slowestSince names, for the invalid intervals of recent that ended
// after since, the stage that took longest in the worst of them and how
// long ("model_late 4.2ms"), or "" if they measured no stage.
func slowestSince(recent []des.IntervalReport, since time.Time) string {
	var worst *des.IntervalReport
	for i := range recent {
		r := &recent[i]
		if r.End.After(since) && r.Slowest != "" && (worst == nil || r.MaxLag > worst.MaxLag) {
			worst = r
		}
	}
	if worst == nil {
		return ""
	}
	for _, st := range worst.Stages {
		if st.Stage == worst.Slowest {
			return fmt.Sprintf("%s %v", st.Stage, st.Max)
		}
	}
	return worst.Slowest
}

// watchValidity logs validityWarning every validityEvery until the
// emulator stops.
func (e *Emulator) watchValidity() {
	t := time.NewTicker(validityEvery)
	defer t.Stop()
	prev, _ := e.lookValidity()
	since := time.Now()
	for {
		select {
		case <-e.stopWatch:
			return
		case now := <-t.C:
			cur, st := e.lookValidity()
			if msg, cause, worst := validityWarning(prev, cur, st.Recent, since, e.cfg.Pacing.RealtimePriority); msg != "" {
				e.log.Warn(msg, zap.String("cause", cause), zap.Duration("worst_excess_lag", worst),
					zap.String("slowest_stage", slowestSince(st.Recent, since)),
					zap.Duration("lag_threshold", st.LagThreshold), zap.Float64("valid_fraction_since_start", st.ValidFraction))
			}
			prev, since = cur, now
		}
	}
}
