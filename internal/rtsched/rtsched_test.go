package rtsched

import (
	"runtime"
	"sync"
	"testing"

	"github.com/fabemu/fabemu/internal/privtest"
	"golang.org/x/sys/unix"
)

func TestSetFIFORange(t *testing.T) {
	for _, p := range []int{-1, 100} {
		if err := SetFIFO(p); err == nil {
			t.Errorf("SetFIFO(%d): no error", p)
		}
	}
}

// Every thread, those that exist and those the runtime starts after, runs
// under SCHED_FIFO at the priority given; 0 puts them all back.
func TestSetFIFOEveryThread(t *testing.T) {
	privtest.Require(t, "SCHED_FIFO (CAP_SYS_NICE)")
	if err := SetFIFO(3); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := SetFIFO(0); err != nil {
			t.Error(err)
		}
	})
	// Start threads after the switch: goroutines locked to their thread
	// and blocked force the runtime to make new ones.
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-release
		}()
	}
	check := func(policy, prio uint32) {
		t.Helper()
		tids, err := Threads()
		if err != nil {
			t.Fatal(err)
		}
		for _, tid := range tids {
			p, q, err := Policy(tid)
			if err != nil {
				continue // exited
			}
			if p != policy || q != prio {
				t.Errorf("thread %d: policy %d priority %d, want %d and %d (of %d threads)", tid, p, q, policy, prio, len(tids))
			}
		}
	}
	runtime.Gosched()
	check(unix.SCHED_FIFO, 3)
	close(release)
	wg.Wait()
	if err := SetFIFO(0); err != nil {
		t.Fatal(err)
	}
	check(unix.SCHED_NORMAL, 0)
}
