package emu

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/frameport/porttest"
	"github.com/fabemu/fabemu/fabric/des"
)

// overloadRig is a TAP pair the model cannot follow: 9000-byte frames
// (three 4 KB packets each) cross eight hops of an EDR 8x8 torus, pushed
// as fast as a goroutine can inject them and drained at the other end, at
// a dilation of 1/4 (the fabric runs four times faster than the wall
// clock). The model's work per frame is then many times the wall time
// between frames whatever the machine, so without a remedy its lag grows
// until the queues ahead of it (the pacer's input queue of 4096 frames)
// are full: tens of milliseconds at least.
func overloadRig(t *testing.T, edit func(*RunConfig)) *rig {
	pcs := []porttest.Config{{MAC: mac(0), MTU: 9000}, {MAC: mac(1), MTU: 9000}}
	r := newRig(t, "ib-edr-torus8x8", pcs, func(c *RunConfig) {
		far := 36 // (4,4) from (0,0): eight hops
		c.TAPs[1].Host = &far
		c.Pacing.Dilation = 0.25
		c.AdmitBytes = 64 << 20 // not the admission bound: the lag is the overload
		edit(c)
	})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the application behind port 0
		defer wg.Done()
		rng := rand.New(rand.NewPCG(31, 32))
		var frames [][]byte // made once: the injection must outrun the model
		for i := range 64 {
			frames = append(frames, mkFrame(mac(1), mac(0), etherTest, uint32(i), 9000-14, rng))
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if r.peers[0].Inject(frames[i%len(frames)]) != nil {
				return
			}
		}
	}()
	go func() { // the application behind port 1
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, _ = r.peers[1].Recv(10 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	return r
}

// overloadRun runs the overload for 2.5 s (two intervals closed) and
// returns the status.
func overloadRun(t *testing.T, edit func(*RunConfig)) *Status {
	r := overloadRig(t, edit)
	time.Sleep(2500 * time.Millisecond)
	st := r.status(t)
	p := st.Pacer
	t.Logf("overload %s: %d frames in; valid %.2f (%d of %d invalid, by cause %v), excess lag p99/max %.1f/%.1f ms, behind %v, dilation %g (%d raises), lag stalls %d, reader stalls %d",
		st.Overload, st.Hosts[0].FramesIn, p.ValidFraction, p.Invalid, p.Intervals, p.InvalidByCause, p.ExcessLag.P99/1e6, p.ExcessLag.Max/1e6,
		p.Behind, p.Dilation, p.DilationRaises, st.Hosts[0].LagStalls, st.Hosts[0].ReaderStalls)
	if p.Intervals < 2 {
		t.Fatalf("%d intervals closed in 2.5 s", p.Intervals)
	}
	if st.Hosts[0].FramesIn == 0 {
		t.Fatal("no frame read")
	}
	return st
}

// With pacing.overload none the model falls behind and says so: the
// intervals are not valid, for a busy loop: behind (its backlog grew while
// it had the CPU) or, where other processes left its thread without a CPU
// half the time, preempted.
func TestOverloadNone(t *testing.T) {
	st := overloadRun(t, func(c *RunConfig) { c.Pacing.Overload = OverloadNone })
	p := st.Pacer
	if busy := p.InvalidByCause[des.CauseBehind] + p.InvalidByCause[des.CausePreempted]; p.Invalid == 0 || busy != p.Invalid {
		t.Errorf("overloaded without a remedy: %d invalid intervals, by cause %v; want invalid ones, behind or preempted", p.Invalid, p.InvalidByCause)
	}
	if st.Hosts[0].LagStalls != 0 || p.DilationRaises != 0 {
		t.Errorf("overload none stalled the readers %d times, raised the dilation %d times", st.Hosts[0].LagStalls, p.DilationRaises)
	}
}

// Backpressure keeps the overloaded run valid: past max_lag (5 ms) the
// readers stop, and they never hand the model more than lagQueue frames
// ahead, so the model does not fall behind (no interval is invalid
// because of a backlog) and the application is slowed instead (reader or
// lag stalls). The threshold is 50 ms, not the daemon's 1 ms, and an
// interval made invalid by another cause (a garbage-collector pause, the
// loop's thread left without a CPU for tens of milliseconds on a crowded
// machine: late_start) is the machine's and only logged: the overload
// without a remedy is hundreds of milliseconds behind (TestOverloadNone).
func TestOverloadBackpressureStaysValid(t *testing.T) {
	st := overloadRun(t, func(c *RunConfig) {
		c.Pacing.Overload = OverloadBackpressure
		c.Pacing.MaxLag = Duration(5 * time.Millisecond)
		c.Pacing.LagThreshold = Duration(50 * time.Millisecond)
	})
	p := st.Pacer
	if st.Hosts[0].LagStalls+st.Hosts[0].ReaderStalls == 0 {
		t.Error("backpressure never stopped the reader")
	}
	if n := p.InvalidByCause[des.CauseBehind] + p.InvalidByCause[des.CauseDilated]; n != 0 {
		t.Errorf("backpressure: %d of %d intervals invalid for a backlog (by cause %v, recent %+v)", n, p.Intervals, p.InvalidByCause, p.Recent)
	}
}

// Dilate raises the dilation by half at a time while the model falls
// max_lag (5 ms) behind its background load (torus8x8-dor at 0.2, which this
// model cannot follow in real time: TestDilationAuto): the dilation in
// force is 1.5 per raise, the readers never stall and the run goes on.
// (An open-loop sender faster than the model is not helped by a slower
// fabric clock, only by admit_bytes or backpressure; TCP slows with the
// fabric.) How far it rises is the machine's and only logged.
func TestOverloadDilate(t *testing.T) {
	r := newRig(t, "torus8x8-dor", ports(2), func(c *RunConfig) {
		c.Pacing.Overload = OverloadDilate
		c.Pacing.MaxLag = Duration(5 * time.Millisecond)
		c.Background.Enabled = true
		c.Background.Traffic.Load = 0.2
	})
	time.Sleep(1500 * time.Millisecond)
	st := r.status(t)
	p := st.Pacer
	t.Logf("dilate: dilation %g after %d raises; valid %.2f (by cause %v), behind %v", p.Dilation, p.DilationRaises, p.ValidFraction, p.InvalidByCause, p.Behind)
	if p.DilationRaises == 0 || st.Hosts[0].LagStalls != 0 {
		t.Fatalf("dilate: %d raises, %d lag stalls; want raises and no stall", p.DilationRaises, st.Hosts[0].LagStalls)
	}
	if want := math.Pow(1.5, float64(p.DilationRaises)); math.Abs(st.Dilation-want) > want*1e-9 || st.Dilation != p.Dilation {
		t.Errorf("dilation %g (pacer %g) after %d raises, want %g", st.Dilation, p.Dilation, p.DilationRaises, want)
	}
	if p.InvalidByCause[des.CauseDilated] > p.DilationRaises {
		t.Errorf("%d intervals marked %s for %d raises", p.InvalidByCause[des.CauseDilated], des.CauseDilated, p.DilationRaises)
	}
}

// pacing.busy_poll on: frames cross as ever, in order and intact, with
// the loop polling between them instead of sleeping.
func TestBusyPollFrames(t *testing.T) {
	r := newRig(t, "tap-square-10g", ports(2), func(c *RunConfig) { c.Pacing.BusyPoll = "on" })
	rng := rand.New(rand.NewPCG(41, 42))
	for i := range 50 {
		b := mkFrame(mac(1), mac(0), etherTest, uint32(i), 1000, rng)
		r.inject(t, 0, b)
		if got := r.recv(t, 1); string(got) != string(b) {
			t.Fatalf("frame %d: received seq %d or different bytes", i, seqOf(got))
		}
	}
	if st := r.status(t); st.Pacer.BusyPolls == 0 {
		t.Error("busy_poll on: the loop never polled")
	}
}
