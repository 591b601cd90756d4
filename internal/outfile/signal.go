package outfile

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// tempSet is the temporary files being written, so that a signal that
// ends the process can remove them: an interrupted output must leave
// neither a truncated target nor a hidden temporary file behind.
type tempSet struct {
	mu    sync.Mutex
	names map[string]bool
}

var temps tempSet

func (t *tempSet) add(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil {
		t.names = map[string]bool{}
	}
	t.names[name] = true
}

func (t *tempSet) remove(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.names, name)
}

// removeAll removes every temporary file still being written and reports
// how many there were.
func (t *tempSet) removeAll() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.names)
	for name := range t.names {
		os.Remove(name)
	}
	t.names = nil
	return n
}

// Temporaries returns the names of the temporary files being written
// (for tests).
func Temporaries() []string {
	temps.mu.Lock()
	defer temps.mu.Unlock()
	var ns []string
	for n := range temps.names {
		ns = append(ns, n)
	}
	return ns
}

// RemoveOnSignal makes SIGINT and SIGTERM remove the temporary files of
// outputs still being written, then end the process as the signal would
// have (the handler is reset and the signal raised again, so the exit
// status still says which signal it was). A signal the process was
// started ignoring stays ignored. It is for commands that do not
// handle these signals themselves; one that does (and then commits or
// aborts its outputs) must not call it. stop undoes it.
func RemoveOnSignal() (stop func()) {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		// A signal the process was started ignoring (SIGINT of a
		// background job) stays ignored: Notify would enable it.
		if !signal.Ignored(sig) {
			signal.Notify(ch, sig)
		}
	}
	go func() {
		select {
		case sig := <-ch:
			temps.removeAll()
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				syscall.Kill(os.Getpid(), s)
			}
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}
