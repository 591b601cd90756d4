// Package rtsched owns the daemon's real-time scheduling: it puts every
// thread of the process under SCHED_FIFO at one priority, so the threads
// that run the model (the pacer's loop and the TAP readers running frames
// into it) get a CPU as soon as they are runnable instead of waiting a
// time slice behind the applications they serve.
//
// Why a daemon needs it: on a machine whose CPUs the applications behind
// the TAPs keep busy (iperf3's two ends and their kernel stacks on two
// cores), the thread holding the model is preempted for milliseconds at a
// time and events run that late; no change inside the model removes that.
// Linux threads inherit their creator's policy, so once every existing
// thread is switched, the threads the Go runtime starts later follow.
package rtsched

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// MaxPriority is the highest SCHED_FIFO priority Linux accepts.
const MaxPriority = 99

// SetFIFO switches every thread of the process to SCHED_FIFO at priority
// prio (1-99), or back to SCHED_NORMAL (nice 0) with prio 0. It fails
// without the right (CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least prio)
// with an error that says so; threads switched before a failure are
// switched back.
func SetFIFO(prio int) error {
	if prio < 0 || prio > MaxPriority {
		return fmt.Errorf("real-time priority %d: want 0 (off) to %d", prio, MaxPriority)
	}
	attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if prio == 0 {
		attr = unix.SchedAttr{Policy: unix.SCHED_NORMAL}
	}
	done := map[int]bool{}
	// A thread started while the list is read is a child of one already
	// listed or switched; read again until a pass finds nothing new.
	for {
		tids, err := Threads()
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if done[tid] {
				continue
			}
			fresh++
			a := attr
			if err := unix.SchedSetAttr(tid, &a, 0); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread exited meanwhile
				}
				undo(done)
				if errors.Is(err, unix.EPERM) {
					return fmt.Errorf("real-time priority %d: SCHED_FIFO needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least %d (ulimit -r, LimitRTPRIO= in a systemd unit, which must not set RestrictRealtime=yes): %w", prio, prio, err)
				}
				return fmt.Errorf("real-time priority %d: thread %d: %w", prio, tid, err)
			}
			done[tid] = true
		}
		if fresh == 0 {
			return nil
		}
	}
}

// Policy returns the scheduling policy and priority of thread tid.
func Policy(tid int) (policy uint32, prio uint32, err error) {
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, 0, err
	}
	return a.Policy, a.Priority, nil
}

// Threads returns the thread IDs of the process.
func Threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("listing the process's threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// undo puts the threads of done back under SCHED_NORMAL.
func undo(done map[int]bool) {
	for tid := range done {
		a := unix.SchedAttr{Policy: unix.SCHED_NORMAL}
		_ = unix.SchedSetAttr(tid, &a, 0)
	}
}
