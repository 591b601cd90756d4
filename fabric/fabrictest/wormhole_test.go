package fabrictest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/internal/units"
)

// cycleConfig is a wormhole fabric whose routing, crossbar and link each
// take one 100 ns cycle, as paper 001 §4.1 has them ("Routing time,
// transmission time across the crossbar and across a channel are all
// assumed to be equal to one clock cycle"): 16-byte flits on 1.28 Gb/s
// uncoded links (128 bits in 100 ns), no cable delay, lanes of 4 flits
// (they cover the credit round trip of 3 cycles).
func cycleConfig() fabric.Config {
	c := fabric.DefaultConfig()
	c.Switch, c.OutputBuffer, c.Switching = "iq", 0, fabric.SwitchingWormhole
	c.LinkRate, c.LineCoding, c.LinkLength = 1_280_000_000, "none", 0
	c.RoutingDelay = 100 * des.Nanosecond
	c.FlitBytes, c.LaneFlits = 16, 4
	return c
}

// TestWormholePipelineLatency, worked by hand: one 256-byte message (16
// flits) from host 0 through 3 switches of an idle line to host 6. Its
// head crosses 4 links (a cycle each) and, at each of the 3 switches, is
// routed (a cycle) and crosses the crossbar (a cycle): 10 cycles; the
// other 15 flits follow one cycle apart. 25 cycles: 2.5 us.
func TestWormholePipelineLatency(t *testing.T) {
	tp, err := Line(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	c := cycleConfig()
	n, err := Build("line3", tp, c, route.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	n.EP.Send(0, 5, 256)
	n.Eng.RunUntil(10 * des.Microsecond)
	if n.EP.Delivered != 1 {
		t.Fatalf("delivered %d", n.EP.Delivered)
	}
	if want := 2500 * des.Nanosecond; n.EP.Latency != want || WormholeLatency(c, 3, 256) != want {
		t.Errorf("latency %v (formula %v), want %v", n.EP.Latency, WormholeLatency(c, 3, 256), want)
	}
	if err := n.Invariants(); err != nil {
		t.Error(err)
	}
}

// TestWormholeMultiplexing: two 16-flit messages cross the same physical
// channel at once on distinct lanes (host 0 to host 2 and host 1 to host
// 3 over the link between the two switches of a line, adaptive routing:
// the first takes the adaptive lane, the second the escape lane). The
// channel alternates their flits, so each advances at half speed there
// (paper 001 §3: "once one of the channels used by the message is
// multiplexed, the whole message advances at a lower speed ... up to v
// times"). Worked by hand in cycles of 100 ns: both heads reach switch 0
// at 1 and are routed at 2. Alone, a message's flits leave at 2..17
// (crossbar and link: 2 cycles), the head is on switch 1 at 4, routed at
// 5, at host 2 at 7, and the tail at 22; its transmission time on the
// channel (head arrival 1 to the tail leaving the link 19) is 18 cycles,
// over a minimum of 16: ratio 1.125 (paper 001 §3's measure). Together, the first message's flits leave at 2, 4, ..., 32
// and the second's at 3, 5, ..., 33: the tails reach the hosts at 36
// and 37, and the second's ratio, the last measured on the channel, is
// (35-1)/16 = 2.125, about twice the lone message's.
func TestWormholeMultiplexing(t *testing.T) {
	run := func(both bool) (*Net, []des.Time) {
		tp, err := Line(2, 2)
		if err != nil {
			t.Fatal(err)
		}
		rc := route.DefaultConfig()
		rc.Mode = route.Adaptive
		n, err := Build("line2", tp, cycleConfig(), rc)
		if err != nil {
			t.Fatal(err)
		}
		n.F.MeasureTransmissionTimes(0)
		var at []des.Time
		n.EP.Send(0, 2, 256)
		if both {
			n.EP.Send(1, 3, 256)
		}
		for n.EP.Delivered < n.EP.Sent() && n.Eng.Now() < 10*des.Microsecond {
			before := n.EP.Delivered
			n.Eng.RunUntil(n.Eng.Now() + 100*des.Nanosecond)
			if n.EP.Delivered != before {
				at = append(at, n.Eng.Now())
			}
		}
		if err := n.Invariants(); err != nil {
			t.Fatal(err)
		}
		return n, at
	}
	cycle := 100 * des.Nanosecond
	alone, _ := run(false)
	if alone.EP.Latency != 22*cycle {
		t.Errorf("alone: latency %v, want 22 cycles", alone.EP.Latency)
	}
	if r, _, ok := alone.F.ChannelRatio(0, 3); !ok || r != 1.125 {
		t.Errorf("alone: transmission-time ratio on the shared channel %v (measured %v), want 1.125", r, ok)
	}
	both, at := run(true)
	if both.EP.Latency != (36+37)*cycle {
		t.Errorf("together: latencies sum to %v, want 36 + 37 cycles (delivered at %v)", both.EP.Latency, at)
	}
	if r, _, ok := both.F.ChannelRatio(0, 3); !ok || r != 2.125 {
		t.Errorf("together: transmission-time ratio %v (measured %v), want 2.125", r, ok)
	}
	if both.F.Stats.AdaptiveGrants == 0 || both.F.Stats.EscapeGrants == 0 {
		t.Errorf("the two messages did not take distinct lanes: %+v", both.F.Stats)
	}
}

// TestWormholeTorusPastSaturation: 8x8 tori under wormhole switching with
// lanes of 2 and 4 flits, random traffic past saturation: deterministic
// routing (dimension order on dateline lanes) delivers every stream in
// order across the datelines; adaptive routing with the dateline escape
// lanes (Duato's condition) never deadlocks; every flit is delivered and
// credits are conserved per flit after every step.
func TestWormholeTorusPastSaturation(t *testing.T) {
	tc := topo.DefaultConfig(topo.KindTorus)
	tc.K, tc.HostsPerSwitch = []int{8, 8}, 1
	for _, lane := range []int{2, 4} {
		for _, mode := range []route.Mode{route.Deterministic, route.Adaptive} {
			name := fmt.Sprintf("lane%d/%s", lane, mode)
			t.Run(name, func(t *testing.T) {
				top, err := topo.Build(tc)
				if err != nil {
					t.Fatal(err)
				}
				c := fabric.DefaultConfig()
				c.Switch, c.OutputBuffer, c.Switching, c.LaneFlits = "iq", 0, fabric.SwitchingWormhole, lane
				rc := route.DefaultConfig()
				rc.Mode = mode
				n, err := Build(name, top, c, rc)
				if err != nil {
					t.Fatal(err)
				}
				runRandom(t, n, 2, 150)
				if mode == route.Deterministic && n.EP.OutOfOrder != 0 {
					t.Errorf("deterministic routing delivered %d packets out of order", n.EP.OutOfOrder)
				}
			})
		}
	}
}

// TestWormholeRefusals: wormhole switching is refused, with the key and
// the fix named, on switches it is not defined for, with a packet
// allocator it does not use, and with bubble flow control.
func TestWormholeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*fabric.Config, *route.Config)
		want []string
	}{
		{"cioq", func(c *fabric.Config, _ *route.Config) { c.Switch = "cioq"; c.OutputBuffer = 8192 }, []string{"fabric.switching", "fabric.switch=iq"}},
		{"voqnet", func(c *fabric.Config, _ *route.Config) { c.Switch = "voqnet"; c.OutputBuffer = 8192 }, []string{"fabric.switching", "fabric.switch=iq"}},
		{"islip", func(c *fabric.Config, _ *route.Config) { c.Allocator = "islip" }, []string{"fabric.switching", "fabric.allocator=rr"}},
		{"bubble", func(_ *fabric.Config, r *route.Config) { r.Escape = "bubble" }, []string{"fabric.switching", "routing.escape bubble", "virtual cut-through"}},
		{"unknown", func(c *fabric.Config, _ *route.Config) { c.Switching = "store-and-forward" }, []string{"fabric.switching", "vct or wormhole"}},
		{"lane", func(c *fabric.Config, _ *route.Config) { c.LaneFlits = -1 }, []string{"fabric.lane_flits"}},
		{"lane too deep", func(c *fabric.Config, _ *route.Config) { c.LaneFlits = fabric.MaxLaneFlits + 1 }, []string{"fabric.lane_flits"}},
		{"flit", func(c *fabric.Config, _ *route.Config) { c.FlitBytes = -16 }, []string{"fabric.flit_bytes"}},
		{"flit too big", func(c *fabric.Config, _ *route.Config) { c.FlitBytes = fabric.MaxBufferBytes + 1 }, []string{"fabric.flit_bytes"}},
	} {
		top, err := topo.Torus([]int{4, 4}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		c := cycleConfig()
		rc := route.DefaultConfig()
		tc.edit(&c, &rc)
		_, err = Build(tc.name, top, c, rc)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want it to name %q", tc.name, err, w)
			}
		}
	}
}

// TestWormholeReceptionHold: a host that holds its reception keeps the
// flits that reach its NIC with their credits, so the worm behind them
// stops in the fabric (nothing is delivered, credits stay conserved);
// resuming delivers every packet in order and returns every credit. With
// lanes of 4 flits the first 16-flit packet is stuck half in the NIC;
// with lanes of 16 it arrives whole and waits as a held packet, and the
// next one waits behind it for the NIC's lane.
func TestWormholeReceptionHold(t *testing.T) {
	for _, lane := range []int{4, 16} {
		tp, err := Line(2, 2)
		if err != nil {
			t.Fatal(err)
		}
		c := cycleConfig()
		c.LaneFlits = lane
		n, err := Build("line2", tp, c, route.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		n.F.HoldReception(0)
		for i := 0; i < 5; i++ {
			n.EP.Send(2, 0, 256)
		}
		n.Eng.RunUntil(20 * des.Microsecond)
		if n.EP.Delivered != 0 || n.F.InFabric() == 0 || n.EP.Queued() == 0 {
			t.Fatalf("lanes of %d, held: %d delivered, %d in the fabric, %d at the source; want none delivered, the worm backed up to the source",
				lane, n.EP.Delivered, n.F.InFabric(), n.EP.Queued())
		}
		if held, want := n.F.HeldPackets(0), lane/16; held != want {
			t.Errorf("lanes of %d: %d packets held whole at the NIC, want %d", lane, held, want)
		}
		if err := n.Invariants(); err != nil {
			t.Fatal(err)
		}
		n.F.ResumeReception(0)
		if err := n.Drain(100 * des.Microsecond); err != nil {
			t.Fatal(err)
		}
		if n.EP.OutOfOrder != 0 {
			t.Errorf("lanes of %d: %d packets out of order after the hold", lane, n.EP.OutOfOrder)
		}
	}
}

// TestWormholeOneFlitLanes: the smallest lanes, one flit, with flits of
// 8 bytes (a packet is up to 36 flits spread over as many lanes) and of
// 300 bytes (every packet is one flit), two adaptive lanes, on every
// topology family in both routing modes, random traffic past saturation:
// every packet is delivered once, credits are conserved per flit after
// every step, nothing deadlocks, and dimension order / up*/down* alone
// deliver every stream in order.
func TestWormholeOneFlitLanes(t *testing.T) {
	for _, tp := range Topologies() {
		for _, mode := range []route.Mode{route.Deterministic, route.Adaptive} {
			for _, flit := range []int{8, 300} {
				name := fmt.Sprintf("%s/%s/flit%d", tp.Name, mode, flit)
				top, err := tp.Build()
				if err != nil {
					t.Fatal(err)
				}
				c := fabric.DefaultConfig()
				c.Switch, c.OutputBuffer, c.Switching = "iq", 0, fabric.SwitchingWormhole
				c.LaneFlits, c.FlitBytes = 1, units.Bytes(flit)
				rc := route.DefaultConfig()
				rc.Mode, rc.AdaptiveVLs = mode, 2
				n, err := Build(name, top, c, rc)
				if err != nil {
					t.Fatal(err)
				}
				runRandom(t, n, 5, 80)
				if mode == route.Deterministic && n.EP.OutOfOrder != 0 {
					t.Errorf("%s: %d packets out of order", name, n.EP.OutOfOrder)
				}
			}
		}
	}
}

// TestWormholeEscapeStays: on a 16x16 torus with the dateline escape
// lanes and one adaptive lane (paper001-16ary2cube-wh's router), random
// traffic past saturation drains completely. It deadlocked (the fabric
// stopped with worms holding escape lanes in a cycle around the rings)
// while a worm could leave the escape lanes for an adaptive lane and come
// back: under wormhole a packet that took an escape lane stays on escape
// lanes (fabric/wormhole.go, inEscape).
func TestWormholeEscapeStays(t *testing.T) {
	top, err := topo.Torus([]int{16, 16}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := fabric.DefaultConfig()
	c.Switch, c.OutputBuffer, c.Switching, c.FlitBytes, c.LaneFlits = "iq", 0, fabric.SwitchingWormhole, 16, 4
	c.RoutingDelay, c.LinkLength = c.SerializationTime(16), 0
	rc := route.DefaultConfig()
	rc.Mode = route.Adaptive
	n, err := Build("torus16x16", top, c, rc)
	if err != nil {
		t.Fatal(err)
	}
	runRandom(t, n, 3, 150)
}

// TestWormholeTransTMarksBlockedWorm: Trans-t's ratio under wormhole is
// taken every 8 flit times from the header's arrival (paper 001 §3), so a
// worm blocked downstream marks the channel it holds while its tail has
// not left. Host 2's 16-flit messages cross the link from switch 1 to
// switch 0 towards host 0, whose reception is held: the first worm fills
// host 0's lane and switch 0's input lane (4 flits each) and stops with
// about 8 of its flits sent on the link. Its ratio, (time since its head
// arrived) / (flits sent x flit time), passes u1 = 4 some 32 flit times
// after the head arrived; the sweep marks the channel at the next multiple
// of 8 cycles. Without the hold the same message moves at the link's rate
// (ratio about 1) and nothing is marked.
func TestWormholeTransTMarksBlockedWorm(t *testing.T) {
	cycle := 100 * des.Nanosecond
	for _, held := range []bool{false, true} {
		tp, err := Line(2, 2)
		if err != nil {
			t.Fatal(err)
		}
		n, err := Build("line2", tp, cycleConfig(), route.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		n.F.MeasureTransmissionTimes(4)
		if held {
			n.F.HoldReception(0)
		}
		n.EP.Send(2, 0, 256)
		marked := func() (des.Time, bool) {
			for port := 0; port < 4; port++ {
				if at, ok := n.F.ChannelMarked(2, port); ok {
					return at, true
				}
			}
			return 0, false
		}
		n.Eng.RunUntil(20 * cycle)
		if _, ok := marked(); ok {
			t.Errorf("held %v: a channel marked within 20 cycles, before any worm waited 4 times its minimum", held)
		}
		n.Eng.RunUntil(100 * cycle)
		at, ok := marked()
		switch {
		case !held && ok:
			t.Errorf("a lone message moving at the link's rate marked its channel at %v", at)
		case held && !ok:
			t.Error("a worm blocked for 100 cycles did not mark the channel it holds")
		}
		if held {
			t.Logf("blocked worm: channel last marked at cycle %d", at/cycle)
		}
		if err := n.Invariants(); err != nil {
			t.Fatal(err)
		}
	}
}
