package synth

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/model"
)

// TestBubbleRingRunsDeadlockFree: the fabric TestDeadlockStopsAndReports
// deadlocks (an 8x8 torus, one lane, dimension order without datelines,
// load 1.0) is refused by the escape check, and with bubble flow control
// instead (paper 002 §3) it is accepted and runs past saturation without
// deadlock, conserving credits and packets, in deterministic mode (the
// escape ring only) and in adaptive mode (one bubble escape lane and two
// adaptive lanes, as paper 002's router).
func TestBubbleRingRunsDeadlockFree(t *testing.T) {
	c, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	c.Routing.Mode = route.Deterministic
	c.Routing.Dateline = false
	c.Traffic.Load = 1.0
	c.Run.Warmup, c.Run.Duration = 0, 400*des.Microsecond
	c.Fabric.DeadlockTimeout = 50 * des.Microsecond
	if _, err := RunSim(c, nil); err == nil || !strings.Contains(err.Error(), "not deadlock-free") {
		t.Fatalf("one lane without dateline and without bubble: %v, want the check's refusal", err)
	}
	for _, mode := range []route.Mode{route.Deterministic, route.Adaptive} {
		c := c
		c.Routing.Escape, c.Routing.Mode = "bubble", mode
		if mode == route.Adaptive {
			c.Routing.AdaptiveVLs = 2
			c.Fabric.EscapeVLBuffer = c.Fabric.InputBuffer / 3
		}
		sum, err := RunSim(c, nil)
		if err != nil {
			t.Fatalf("%s bubble: %v", mode, err)
		}
		iv := sum.Invariants
		if !iv.OK || !iv.NoDeadlock || !iv.CreditsConserved || !iv.PacketsConserved {
			t.Fatalf("%s bubble: invariants %+v", mode, iv)
		}
		if !strings.Contains(sum.Routing.EscapeCheck, "bubble") {
			t.Errorf("%s: routing check note %q does not name the bubble", mode, sum.Routing.EscapeCheck)
		}
		t.Logf("%s bubble: accepted %.3f of offered %.2f, %s", mode, sum.AcceptedLoad, c.Traffic.Load, sum.Routing.EscapeCheck)
	}
}

// TestRestrictiveInjectionRuns: every level of restrictive injection
// (paper 002 §5.1) runs deadlock-free on the adaptive bubble torus past
// saturation, and a level whose bubble does not fit the lanes is refused
// when the session is built.
func TestRestrictiveInjectionRuns(t *testing.T) {
	c, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	c.Routing.Mode, c.Routing.Escape, c.Routing.AdaptiveVLs = route.Adaptive, "bubble", 2
	c.Fabric.EscapeVLBuffer = 8 * 320
	c.Fabric.InputBuffer, c.Fabric.OutputBuffer = 3*8*320, 3*8*320
	c.Traffic.Load = 1.0
	c.Run.Warmup, c.Run.Duration = 0, 200*des.Microsecond
	for _, level := range []string{"bubble:2-esc", "bubble:2-all", "bubble:4-all", "bubble:6-all"} {
		c := c
		c.NIC.InjectionControl.Policy = injection.ControlKind(level)
		sum, err := RunSim(c, nil)
		if err != nil {
			t.Fatalf("%s: %v", level, err)
		}
		if iv := sum.Invariants; !iv.OK || !iv.NoDeadlock {
			t.Fatalf("%s: invariants %+v", level, iv)
		}
		t.Logf("%s: accepted %.3f", level, sum.AcceptedLoad)
	}
	c.NIC.InjectionControl.Policy = "bubble:6-all"
	c.Fabric.InputBuffer, c.Fabric.OutputBuffer = 8*320+2*4*320, 8*320+2*4*320
	if _, err := RunSim(c, nil); err == nil || !strings.Contains(err.Error(), "bubble:6-all") || !strings.Contains(err.Error(), "lane 1") {
		t.Fatalf("6-All on lanes of 4 packets: %v", err)
	}
}

// TestBubbleNoLimIs2Esc: on the bubble torus the escape lane's bubble at
// injection is the deadlock avoidance itself, so No-Lim and 2-Esc are the
// same router and give the same run, figure for figure.
func TestBubbleNoLimIs2Esc(t *testing.T) {
	c, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	c.Routing.Mode, c.Routing.Escape, c.Routing.AdaptiveVLs = route.Adaptive, "bubble", 2
	c.Fabric.EscapeVLBuffer = 8 * 320
	c.Fabric.InputBuffer, c.Fabric.OutputBuffer = 3*8*320, 3*8*320
	c.Traffic.Load = 1.0
	c.Run.Warmup, c.Run.Duration, c.Run.LaneStats = 20*des.Microsecond, 60*des.Microsecond, true
	var got []*Summary
	for _, p := range []injection.ControlKind{"no-lim", "bubble:2-esc"} {
		c := c
		c.NIC.InjectionControl.Policy = p
		sum, err := RunSim(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, sum)
	}
	a, b := got[0], got[1]
	if a.AcceptedLoad != b.AcceptedLoad || a.LatencyNs.Mean != b.LatencyNs.Mean || a.Packets != b.Packets {
		t.Errorf("No-Lim %g/%g and 2-Esc %g/%g differ", a.AcceptedLoad, a.LatencyNs.Mean, b.AcceptedLoad, b.LatencyNs.Mean)
	}
	l := a.Lanes
	if l == nil || len(l.Directions) != 4 || len(l.Lanes) != 3 || l.Lanes[0] != "esc0" || l.Samples < 50 {
		t.Fatalf("lanes report %+v", l)
	}
	if !(l.AdaptiveUtilisation > 0 && l.AdaptiveUtilisation <= 1 && l.AdaptiveOccupancy > 0 && l.AdaptiveOccupancy <= 8) {
		t.Errorf("adaptive lanes: occupancy %g packets, utilisation %g", l.AdaptiveOccupancy, l.AdaptiveUtilisation)
	}
	for d := range l.Utilisation {
		for v, u := range l.Utilisation[d] {
			if u < 0 || u > 1 || l.Occupancy[d][v] < 0 || l.Occupancy[d][v] > 8 {
				t.Errorf("%s %s: utilisation %g, occupancy %g", l.Directions[d], l.Lanes[v], u, l.Occupancy[d][v])
			}
		}
	}
}

// TestAdaptiveBubbleRouterPreset runs the router of paper002-torus16x16
// (paper 002 §3: bubble escape lane, two adaptive lanes preferred in the
// same ring, random arbitration, 16-phit packets, 128-phit lanes) on an
// 8x8 torus to keep it short. Below saturation it accepts what is offered
// (within 3%: Bernoulli arrivals over 100 µs); past saturation it runs
// without deadlock, conserving packets and credits, with every transit
// lane holding at most its 8 packets; the same seed gives the same run
// and another seed another one (the arbitration draws from run.seed).
func TestAdaptiveBubbleRouterPreset(t *testing.T) {
	c, err := model.LookupPreset("paper002-torus16x16")
	if err != nil {
		t.Fatal(err)
	}
	if c.Fabric.Allocator != "random" || c.Routing.Selection != route.SameRing || c.Fabric.EscapeVLBuffer != 8*16*model.Phit {
		t.Fatalf("preset: allocator %q, selection %q, escape lane %v", c.Fabric.Allocator, c.Routing.Selection, c.Fabric.EscapeVLBuffer)
	}
	c.Topology.K = []int{8, 8}
	c.Run.Warmup, c.Run.Duration, c.Run.LaneStats = 20*des.Microsecond, 100*des.Microsecond, true
	run := func(load float64, seed uint64) *Summary {
		c := c
		c.Traffic.Load, c.Run.Seed = load, seed
		sum, err := RunSim(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if iv := sum.Invariants; !iv.OK || !iv.NoDeadlock || !iv.CreditsConserved || !iv.PacketsConserved {
			t.Fatalf("load %g seed %d: invariants %+v", load, seed, iv)
		}
		return sum
	}
	low := run(0.3, 1)
	if d := low.AcceptedLoad/low.OfferedLoad - 1; d < -0.03 || d > 0.03 {
		t.Errorf("load 0.3: accepted %.4f of offered %.4f", low.AcceptedLoad, low.OfferedLoad)
	}
	a, b, other := run(1.0, 1), run(1.0, 1), run(1.0, 2)
	if a.AcceptedLoad != b.AcceptedLoad || a.Packets != b.Packets {
		t.Errorf("seed 1 twice: accepted %g and %g", a.AcceptedLoad, b.AcceptedLoad)
	}
	if a.AcceptedLoad == other.AcceptedLoad && a.LatencyNs.Mean == other.LatencyNs.Mean {
		t.Errorf("seeds 1 and 2 give the same run (accepted %g)", a.AcceptedLoad)
	}
	for d := range a.Lanes.Occupancy {
		for v, o := range a.Lanes.Occupancy[d] {
			if o < 0 || o > 8 {
				t.Errorf("%s %s: %g packets in a lane of 8", a.Lanes.Directions[d], a.Lanes.Lanes[v], o)
			}
		}
	}
	t.Logf("8x8: accepted %.3f at 0.3, %.3f at 1.0 (seed 2: %.3f)", low.AcceptedLoad, a.AcceptedLoad, other.AcceptedLoad)
}
