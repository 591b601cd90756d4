package synth

import (
	"errors"
	"math"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
)

// TestPacketsBound: a host of paper000-min64 (8 Gb/s, 64-byte packets, no
// header: 64 ns a packet) at load 0.5 for 1 us of warm-up and 9 us
// generates at most 10,000 x 0.5 / 64 packets (+1 for the one drawn at
// time 0); the corner cases count at the full rate.
func TestPacketsBound(t *testing.T) {
	c, err := model.LookupPreset("paper000-min64")
	if err != nil {
		t.Fatal(err)
	}
	c.Traffic.Load, c.Run.Warmup, c.Run.Duration = 0.5, des.Microsecond, 9*des.Microsecond
	n, size, err := PacketsBound(&c)
	if err != nil {
		t.Fatal(err)
	}
	if want := 10000*0.5/64 + 1; math.Abs(n-want) > 1e-9 || size != 64 {
		t.Errorf("PacketsBound = %g packets of %d bytes, want %g of 64", n, size, want)
	}
	c.Traffic.Pattern = "corner2"
	if n, _, _ = PacketsBound(&c); math.Abs(n-(10000/64.0+1)) > 1e-9 {
		t.Errorf("corner2: %g packets, want the full rate's %g", n, 10000/64.0+1)
	}
}

// TestSourceBacklogStopsRun: past saturation the sources' queues grow;
// run.max_source_packets stops the run with a SourceBacklogError naming
// the bound, and does not mark it as a deadlock.
func TestSourceBacklogStopsRun(t *testing.T) {
	c, err := model.LookupPreset("paper003-min256-8x8")
	if err != nil {
		t.Fatal(err)
	}
	c.Traffic.Load, c.Run.Warmup, c.Run.Duration, c.Run.MaxSourcePackets = 1, des.Microsecond, 60*des.Microsecond, 500
	sum, err := RunSim(c, nil)
	var backlog *model.SourceBacklogError
	if !errors.As(err, &backlog) || backlog.Limit != 500 || backlog.Queued <= 500 {
		t.Fatalf("err = %v, want a SourceBacklogError past 500 packets", err)
	}
	if sum == nil || !sum.Invariants.NoDeadlock {
		t.Errorf("a stopped run is not a deadlock: %+v", sum)
	}
	c.Run.MaxSourcePackets = -1
	c.Run.Duration = 10 * des.Microsecond
	if _, err := RunSim(c, nil); err != nil {
		t.Errorf("no bound: %v", err)
	}
}
