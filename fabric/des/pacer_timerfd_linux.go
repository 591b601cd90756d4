package des

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// hrTimer is a reusable high-resolution timer for the real clock, built on
// a timerfd read through the runtime's poller. Go's own timers wake an idle
// process from epoll_pwait, whose timeout has millisecond granularity: a
// wait shorter than 1 ms sleeps up to a whole millisecond (measured: a 1 ms
// periodic event ran 90 µs later each period, up to 1 ms lag). A timerfd
// expires on the kernel's hrtimer, and its readiness wakes epoll at once.
type hrTimer struct {
	fd int
	f  *os.File
	c  chan time.Time
}

func newHRTimer() *hrTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil // fall back to the runtime's timers
	}
	t := &hrTimer{fd: fd, f: os.NewFile(uintptr(fd), "pacer-timerfd"), c: make(chan time.Time, 1)}
	go t.run()
	return t
}

// run turns expirations into sends on c (never blocking: one pending
// wake-up is enough, the loop recomputes what is due).
func (t *hrTimer) run() {
	var buf [8]byte
	for {
		if _, err := t.f.Read(buf[:]); err != nil {
			return // closed
		}
		select {
		case t.c <- time.Now():
		default:
		}
	}
}

// arm makes the timer expire once after d (> 0), replacing any earlier
// arming. A stale expiration may still be delivered; the loop treats a
// wake-up as "look again", so that is harmless.
func (t *hrTimer) arm(d time.Duration) {
	select {
	case <-t.c:
	default:
	}
	if d < time.Microsecond {
		d = time.Microsecond
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = unix.TimerfdSettime(t.fd, 0, &spec, nil)
}

// disarm cancels a pending expiration.
func (t *hrTimer) disarm() {
	_ = unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{}, nil)
}

func (t *hrTimer) close() { _ = t.f.Close() }

// threadCPU returns the calling OS thread's id and the CPU time it has
// used, to tell a loop that had the CPU and still fell behind from one
// that was not run (Pacer.trackBacklog).
func threadCPU() (tid int, cpu time.Duration, ok bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, 0, false
	}
	return unix.Gettid(), time.Duration(ts.Nano()), true
}
