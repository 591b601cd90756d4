package emu

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
)

// A frame's trip fills the interval's stage window: every stage it crosses
// took some time, the writer's stages come from the destination port, and
// taking the window starts an empty one.
func TestIntervalStagesMeasureAFrame(t *testing.T) {
	r := newRig(t, "tap-pair-10g", ports(2), nil)
	rng := rand.New(rand.NewPCG(5, 6))
	take := func() (st []des.StageTime, intervals uint64) {
		if err := r.e.pacer.Do(func() { st = r.e.intervalStages() }); err != nil {
			t.Fatal(err)
		}
		return st, r.e.pacer.Stats().Intervals
	}
	// The pacer closes an interval (and takes the window) every second: a
	// frame whose trip straddles a close is measured in two windows, so
	// try again then.
	for try := 0; ; try++ {
		_, before := take()
		f := mkFrame(mac(1), mac(0), etherTest, uint32(try), 1000, rng)
		r.inject(t, 0, f)
		r.recv(t, 1)
		// The writer records its stages just after the write the peer saw.
		time.Sleep(10 * time.Millisecond)
		st, after := take()
		if after != before && try < 5 {
			continue
		}
		if len(st) != 6 {
			t.Fatalf("stages %+v: want six", st)
		}
		for _, s := range st {
			if s.Max <= 0 && s.Stage != StageModelLate {
				t.Errorf("stage %s took %v for a frame that crossed it", s.Stage, s.Max)
			}
			if s.Max > 10*time.Second {
				t.Errorf("stage %s: %v, longer than the test", s.Stage, s.Max)
			}
		}
		break
	}
	st, _ := take()
	for _, s := range st {
		if s.Max != 0 {
			t.Errorf("stage %s: %v in a window no frame crossed", s.Stage, s.Max)
		}
	}
}

// The validity warning names the slowest stage of the worst interval
// since the last look, with its time.
func TestSlowestSince(t *testing.T) {
	t0 := time.Unix(1000, 0)
	stages := func(slow string, d time.Duration) []des.StageTime {
		return []des.StageTime{{Stage: StageReadToSubmit, Max: time.Microsecond}, {Stage: slow, Max: d}}
	}
	recent := []des.IntervalReport{
		{End: t0.Add(time.Second), MaxLag: 9 * time.Millisecond, Stages: stages(StageWrite, 9*time.Millisecond), Slowest: StageWrite},
		{End: t0.Add(12 * time.Second), MaxLag: 3 * time.Millisecond, Stages: stages(StageModelLate, 3*time.Millisecond), Slowest: StageModelLate},
		{End: t0.Add(15 * time.Second), MaxLag: 2 * time.Millisecond, Stages: stages(StageWriterQueue, 2*time.Millisecond), Slowest: StageWriterQueue},
	}
	if got := slowestSince(recent, t0.Add(10*time.Second)); got != "model_late 3ms" {
		t.Errorf("slowest since the last look: %q, want model_late 3ms", got)
	}
	if got := slowestSince(recent, t0.Add(20*time.Second)); got != "" {
		t.Errorf("nothing since the last look: %q", got)
	}
}
