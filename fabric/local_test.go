package fabric

import (
	"math"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// TestTransmissionTimeRatio works paper 001 §3's ratio by hand on a line
// of two switches, one host each (host ports 0, right neighbour port 2):
// an unloaded 282-byte packet's head reaches switch 0 one propagation
// delay after it starts, is routed for the routing delay, and its tail
// leaves one serialization time later, so the ratio is (routing +
// serialization) / serialization; below the threshold it marks nothing,
// above it it marks the channel.
func TestTransmissionTimeRatio(t *testing.T) {
	tp := line(t, 2, 1)
	cfg := DefaultConfig()
	eng, f, ep := build(t, tp, cfg, route.DefaultConfig())
	if _, _, ok := f.ChannelRatio(0, 2); ok {
		t.Fatal("a ratio before anything was measured")
	}
	f.MeasureTransmissionTimes(1.5)
	ep.send(0, 1, 282, 0)
	eng.RunUntil(100 * des.Microsecond)
	ser := cfg.SerializationTime(282)
	want := float64(cfg.RoutingDelay+ser) / float64(ser)
	r, at, ok := f.ChannelRatio(0, 2)
	if !ok || math.Abs(r-want) > 1e-6 {
		t.Fatalf("ratio on switch 0's port to switch 1 = %v (ok %v), want (routing + ser)/ser = %v", r, ok, want)
	}
	if wantAt := cfg.PropagationDelay() + cfg.RoutingDelay; at != wantAt {
		t.Errorf("measured at %v, want when the packet started there, %v", at, wantAt)
	}
	if _, ok := f.ChannelMarked(0, 2); ok {
		t.Errorf("ratio %v below the threshold 1.5 marked the channel", r)
	}
	// Switch 1 sends it on to host 1 (its port 0): same ratio.
	if r1, _, ok := f.ChannelRatio(1, 0); !ok || math.Abs(r1-want) > 1e-6 {
		t.Errorf("ratio at switch 1's host port = %v, want %v", r1, want)
	}
	// With the threshold below the unloaded ratio the next packet marks.
	f.MeasureTransmissionTimes(1.01)
	ep.send(0, 1, 282, 1)
	eng.RunUntil(200 * des.Microsecond)
	if at, ok := f.ChannelMarked(0, 2); !ok || at <= 100*des.Microsecond {
		t.Errorf("a ratio of %v above the threshold 1.01 did not mark the channel (at %v, %v)", want, at, ok)
	}
}

// TestUsefulChannels: the minimal-path ports of a host's switch.
func TestUsefulChannels(t *testing.T) {
	tp := line(t, 3, 1)
	_, f, _ := build(t, tp, DefaultConfig(), route.DefaultConfig())
	if got := f.UsefulChannels(0, 2, nil); len(got) != 1 || got[0] != 2 {
		t.Errorf("useful channels from host 0 to host 2 = %v, want [2] (rightwards)", got)
	}
	if got := f.UsefulChannels(1, 0, nil); len(got) != 1 || got[0] != 1 {
		t.Errorf("useful channels from host 1 to host 0 = %v, want [1] (leftwards)", got)
	}
	if f.LocalFreeBlocks(0, 0) <= 0 || f.Lanes() < 1 {
		t.Error("an idle switch has free blocks")
	}
	if full, total := f.FullBuffers(); full != 0 || total == 0 {
		t.Errorf("FullBuffers of an idle fabric = %d of %d", full, total)
	}
}

// TestMeasureAllocatesNothing: the measurement on the hot path does not
// allocate.
func TestMeasureAllocatesNothing(t *testing.T) {
	tp := line(t, 2, 1)
	_, f, _ := build(t, tp, DefaultConfig(), route.DefaultConfig())
	f.MeasureTransmissionTimes(2)
	p := f.NewPacket()
	o := &f.out[f.sw[0].out[2]]
	if n := testing.AllocsPerRun(100, func() { f.recordTx(f.sw[0].out[2], o, p, 10, 20, 5) }); n != 0 {
		t.Errorf("recordTx allocates %v times", n)
	}
	var buf []int
	buf = f.UsefulChannels(0, 1, buf)
	if n := testing.AllocsPerRun(100, func() { buf = f.UsefulChannels(0, 1, buf) }); n != 0 {
		t.Errorf("UsefulChannels allocates %v times with a buffer", n)
	}
}
