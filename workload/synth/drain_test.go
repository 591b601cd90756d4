package synth

import (
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
)

// TestDrain: with run.drain the sources stop at warm-up + duration and
// the run goes on until every packet is delivered (paper 001 §4.3's bursty
// load); the last delivery is after the sources stopped, nothing is left
// in flight or queued, and the time series covers the drain. A bound too
// short to drain says how many packets were left.
func TestDrain(t *testing.T) {
	c := shortPreset(t, "torus8x8-dor")
	c.Traffic.Load = 1.0 // past saturation: a backlog builds up
	c.Run.Warmup, c.Run.Duration, c.Run.Bin = 0, 20*des.Microsecond, 2*des.Microsecond
	c.Run.Drain = 5 * des.Millisecond
	s, err := RunSim(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, s)
	d := s.Drain
	if d == nil || !d.AllDelivered || d.Undelivered != 0 {
		t.Fatalf("drain %+v: want everything delivered", d)
	}
	end := float64((c.Run.Warmup + c.Run.Duration).Nanoseconds())
	if d.LastDeliveryNs <= end {
		t.Errorf("last delivery at %g ns, not after the sources stopped at %g ns", d.LastDeliveryNs, end)
	}
	if p := s.Packets; p.InFlight != 0 || p.QueuedAtSources != 0 {
		t.Errorf("after the drain %d in flight, %d queued", p.InFlight, p.QueuedAtSources)
	}
	if last := s.Timeseries[len(s.Timeseries)-1].TimeUs * 1000; last+2000 < d.LastDeliveryNs {
		t.Errorf("time series ends at %g ns, before the last delivery at %g ns", last, d.LastDeliveryNs)
	}

	c.Run.Drain = des.Microsecond
	s, err = RunSim(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Drain; d == nil || d.AllDelivered || d.Undelivered == 0 {
		t.Fatalf("drain bounded at 1 us: %+v, want packets left undelivered", d)
	}
	checkSummary(t, s)
}
