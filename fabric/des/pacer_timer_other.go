//go:build !linux

package des

import "time"

// hrTimer is only available on Linux (timerfd); elsewhere the pacer uses
// the runtime's timers.
type hrTimer struct{ c chan time.Time }

func newHRTimer() *hrTimer           { return nil }
func (t *hrTimer) arm(time.Duration) {}
func (t *hrTimer) disarm()           {}
func (t *hrTimer) close()            {}

// threadCPU is only available on Linux: elsewhere every backlog that grows
// counts as the model's.
func threadCPU() (tid int, cpu time.Duration, ok bool) { return 0, 0, false }
