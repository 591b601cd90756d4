package fabric

import (
	"fmt"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// path builds a turn sequence from (port, lane) pairs.
func path(turns ...int) string {
	s := ""
	for i := 0; i+1 < len(turns); i += 2 {
		s += turn(int32(turns[i]), turns[i+1])
	}
	return s
}

// TestRECNLongestMatch: the CAM of paper 000 §3.6 on a hand-worked
// example. Lines: A = [3], B = [3 1], C = [3 1 2] on lane 0, D = [3 1] on
// lane 1, E = [5] freed. A packet takes the longest line that is a prefix
// of its remaining turns on its own lane; overlapping trees (B inside A)
// resolve to the longer path.
func TestRECNLongestMatch(t *testing.T) {
	saqs := []saq{
		{active: true, vl: 0, path: path(3, 0)},
		{active: true, vl: 0, path: path(3, 0, 1, 0)},
		{active: true, vl: 0, path: path(3, 0, 1, 0, 2, 0)},
		{active: true, vl: 1, path: path(3, 0, 1, 0)},
		{active: false, vl: 0, path: path(5, 0)},
	}
	for _, c := range []struct {
		vl    int8
		route string
		want  int
	}{
		{0, path(3, 0, 1, 0, 2, 0, 7, 0), 2}, // C, the longest
		{0, path(3, 0, 1, 0, 4, 0), 1},       // B: C's third turn differs
		{0, path(3, 0, 2, 0), 0},             // A
		{0, path(3, 1, 1, 0), -1},            // same port, other lane at the first hop
		{0, path(5, 0, 1, 0), -1},            // E is free
		{1, path(3, 0, 1, 0, 2, 0), 3},       // D: lane 1 sees only D
		{1, path(3, 0), -1},                  // shorter than D
		{0, path(1, 0, 3, 0), -1},            // a match must be a prefix, not a substring
	} {
		if got := longestMatch(saqs, c.vl, c.route); got != c.want {
			t.Errorf("route %x on lane %d: SAQ %d, want %d", c.route, c.vl, got, c.want)
		}
	}
	if k := findExact(saqs, 0, path(3, 0, 1, 0)); k != 1 {
		t.Errorf("exact [3 1] on lane 0: %d, want 1", k)
	}
}

// TestRECNMarkers: markers (paper 000 §3.8) on a hand-worked example. The
// normal queue holds p1 p2 p3. SAQ 0 is allocated: its marker goes behind
// p3 (the tail). p4 arrives; SAQ 1 is allocated with markers behind p4 in
// the normal queue and behind q1 in SAQ 0 (whose path is a prefix of its
// own). Leaving p1, p2 enables nothing; p3 enables SAQ 0; q1 leaves SAQ 0
// (SAQ 1 still waits for p4); p4 enables SAQ 1.
func TestRECNMarkers(t *testing.T) {
	p := make([]*Packet, 6)
	for i := range p {
		p[i] = &Packet{ID: uint64(i)}
	}
	q1 := p[5]
	rp := &recnPort{saqs: []saq{{active: true, markers: 1}, {active: true, markers: 2}}}
	rp.markers = []marker{{p[3], 0}, {p[4], 1}, {q1, 1}}
	var enabled []string
	leave := func(x *Packet) {
		rp.passMarkers(x, func(k int) { enabled = append(enabled, fmt.Sprintf("%d after %d", k, x.ID)) })
	}
	for _, x := range []*Packet{p[1], p[2], p[3], q1, p[4]} {
		leave(x)
	}
	want := "[0 after 3 1 after 4]"
	if got := fmt.Sprint(enabled); got != want {
		t.Errorf("enabled %s, want %s", got, want)
	}
	if len(rp.markers) != 0 || rp.saqs[0].gated() || rp.saqs[1].gated() {
		t.Errorf("left: markers %v, SAQ gates %v %v", rp.markers, rp.saqs[0].gated(), rp.saqs[1].gated())
	}
}

// recnLine: three switches in a row, two hosts each (hosts 0,1 on s0;
// 2,3 on s1; 4,5 on s2), the recn switch with small thresholds.
func recnLine(t *testing.T, cfg Config) (*des.Engine, *Fabric, *testEP, *recnArch) {
	tp := line(t, 3, 2)
	eng, f, ep := build(t, tp, cfg, route.DefaultConfig())
	return eng, f, ep, f.arch.(*recnArch)
}

func recnConfig() Config {
	cfg := DefaultConfig()
	cfg.Switch = "recn"
	cfg.InputBuffer, cfg.OutputBuffer = 16*1024, 16*1024
	cfg.RECN = RECNConfig{MaxSAQs: 4, DetectionThreshold: 1024, NotificationThreshold: 512, XoffThreshold: 2048, XonThreshold: 1024, ControlPacket: 8}
	return cfg
}

// hotSpot: hosts 0..4 send n packets each to host 5, and host 0 also
// sends to host 4. Every host sends at its link rate, so the links to the
// right are the bottlenecks: s0's port 3 (three flows: 0->5, 1->5, 0->4)
// and s1's port 3 (six flows), whose output queues become roots.
func hotSpot(ep *testEP, n int) {
	seq := map[[2]int]uint64{}
	for i := 0; i < n; i++ {
		for _, src := range []int{0, 1, 2, 3, 4} {
			ep.send(src, 5, 256, seq[[2]int{src, 5}])
			seq[[2]int{src, 5}]++
		}
		ep.send(0, 4, 256, seq[[2]int{0, 4}])
		seq[[2]int{0, 4}]++
	}
}

// TestRECNHotSpot: a congestion tree grows from s2 back through s1 and s0
// and is torn down leaf first. Every packet arrives, each stream in order
// (the markers), credits are conserved, no port ever has more SAQs than
// max_saqs, Xon/Xoff alternate per SAQ with hysteresis, and at the end
// every SAQ is free. Leaf first (§3.5): when an input SAQ is freed the
// output SAQ upstream of it for the same path is already gone, and when
// an output SAQ is freed no input SAQ of its switch drains into it.
func TestRECNHotSpot(t *testing.T) {
	cfg := recnConfig()
	eng, f, ep, a := recnLine(t, cfg)
	xoffState := map[string]bool{}
	var errs []string
	a.trace = func(ev string, port int32, k int, blocks int32) {
		a.setup()
		side, key := ev[len(ev)-3:], fmt.Sprintf("%s/%d/%d", ev[len(ev)-3:], port, k)
		switch ev[:len(ev)-3] {
		case "xoff-":
			if xoffState[key] || blocks < a.xoff {
				errs = append(errs, fmt.Sprintf("%s: Xoff at %d blocks, already off %v", key, blocks, xoffState[key]))
			}
			xoffState[key] = true
		case "xon-":
			if !xoffState[key] || blocks >= a.xon {
				errs = append(errs, fmt.Sprintf("%s: Xon at %d blocks, off %v", key, blocks, xoffState[key]))
			}
			xoffState[key] = false
		case "free-":
			xoffState[key] = false
			if side == "nic" {
				break // a NIC SAQ is a leaf: nothing upstream of it
			}
			if side == "-in" {
				s := &a.in[port].saqs[k]
				up := f.in[port].up
				if f.out[up].sw >= 0 && findExact(a.out[up].saqs, s.vl, s.path) >= 0 {
					errs = append(errs, fmt.Sprintf("input SAQ %s freed before the output SAQ upstream of it", key))
				}
			} else {
				for _, ii := range f.sw[f.out[port].sw].in {
					if ii < 0 {
						continue
					}
					for j := range a.in[ii].saqs {
						if s := &a.in[ii].saqs[j]; s.active && s.parent == port && s.parentSAQ == k {
							errs = append(errs, fmt.Sprintf("output SAQ %s freed before input SAQ %d/%d that drains into it", key, ii, j))
						}
					}
				}
			}
		}
	}
	const n = 150
	hotSpot(ep, n)
	for step := 0; step < 400 && len(ep.got) < 6*n; step++ {
		eng.RunUntil(eng.Now() + 5*des.Microsecond)
		if iv := f.CheckInvariants(); !iv.OK() {
			t.Fatalf("at %v: %v", eng.Now(), iv.Violations)
		}
		if bad := a.check(); bad != nil {
			t.Fatalf("at %v: %v", eng.Now(), bad)
		}
	}
	if len(ep.got) != 6*n {
		t.Fatalf("delivered %d of %d packets (deadlock: %v)", len(ep.got), 6*n, f.Deadlock)
	}
	if ep.ooo != 0 {
		t.Errorf("%d packets out of order", ep.ooo)
	}
	eng.RunUntil(eng.Now() + 50*des.Microsecond) // tokens travel
	r := f.RECN(0, 0)
	t.Logf("%+v", r.RECNStats)
	if r.Allocations == 0 || r.Notifications == 0 || r.Detections == 0 {
		t.Errorf("no congestion tree formed: %+v", r.RECNStats)
	}
	if r.MaxSAQsPerOutput == 0 {
		t.Errorf("notifications never crossed a link: %+v", r.RECNStats)
	}
	if r.MaxSAQsPerInput > cfg.RECN.MaxSAQs || r.MaxSAQsPerOutput > cfg.RECN.MaxSAQs {
		t.Errorf("SAQs per port %d/%d exceed max_saqs %d", r.MaxSAQsPerInput, r.MaxSAQsPerOutput, cfg.RECN.MaxSAQs)
	}
	if r.MeanSAQsPerPort <= 0 || r.MeanSAQsPerPort > float64(cfg.RECN.MaxSAQs) {
		t.Errorf("mean SAQs per port %g", r.MeanSAQsPerPort)
	}
	if r.SAQsAtEnd != 0 || r.Allocations != r.Deallocations {
		t.Errorf("after the drain %d SAQs are still in use (%d allocated, %d freed)", r.SAQsAtEnd, r.Allocations, r.Deallocations)
	}
	if r.NICAllocations == 0 || r.NICAllocations != r.NICDeallocations {
		t.Errorf("NIC SAQs: %d allocated, %d freed", r.NICAllocations, r.NICDeallocations)
	}
	if r.Xoff == 0 {
		t.Errorf("no Xoff: %+v", r.RECNStats)
	}
	for _, e := range errs {
		t.Error(e)
	}
}

// TestRECNExhaustion: with one SAQ per port, two congestion trees through
// the same input cannot both get one: the second notification is refused
// (counted), its packets stay in the normal queue, and the fabric stays
// lossless and in order.
func TestRECNExhaustion(t *testing.T) {
	cfg := recnConfig()
	cfg.RECN.MaxSAQs = 1
	eng, f, ep, _ := recnLine(t, cfg)
	seq := map[[2]int]uint64{}
	const n = 120
	for i := 0; i < n; i++ {
		for _, sd := range [][2]int{{0, 5}, {1, 5}, {2, 5}, {4, 5}, {0, 4}, {1, 4}, {3, 4}, {5, 4}} {
			ep.send(sd[0], sd[1], 256, seq[sd])
			seq[sd]++
		}
	}
	eng.RunUntil(2 * des.Millisecond)
	if len(ep.got) != 8*n {
		t.Fatalf("delivered %d of %d (deadlock: %v)", len(ep.got), 8*n, f.Deadlock)
	}
	if ep.ooo != 0 {
		t.Errorf("%d out of order", ep.ooo)
	}
	r := f.RECN(0, 0)
	t.Logf("%+v", r.RECNStats)
	if r.Exhausted == 0 {
		t.Errorf("no SAQ exhaustion with one SAQ per port and two trees: %+v", r.RECNStats)
	}
	if r.MaxSAQsPerInput > 1 || r.MaxSAQsPerOutput > 1 {
		t.Errorf("SAQs per port %d/%d exceed 1", r.MaxSAQsPerInput, r.MaxSAQsPerOutput)
	}
	if iv := f.CheckInvariants(); !iv.OK() {
		t.Error(iv.Violations)
	}
}

// TestRECNAdaptiveRefused: RECN needs deterministic routing.
func TestRECNAdaptiveRefused(t *testing.T) {
	tp := line(t, 2, 1)
	rc := route.DefaultConfig()
	rc.Mode = route.Adaptive
	r, err := route.New(tp, rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(des.New(), recnConfig(), tp, r, 282, &testEP{}); err == nil {
		t.Fatal("recn with adaptive routing was accepted")
	}
}

// TestRECNConfig: defaults, zero meaning default, and the Xon/Xoff order.
func TestRECNConfig(t *testing.T) {
	if err := DefaultRECNConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if (RECNConfig{}).resolved() != DefaultRECNConfig() {
		t.Error("a zero RECNConfig does not resolve to the defaults")
	}
	if err := (RECNConfig{XoffThreshold: 1024, XonThreshold: 1024}).Validate(); err == nil {
		t.Error("xon_threshold = xoff_threshold accepted")
	}
	if err := (RECNConfig{MaxSAQs: 65}).Validate(); err == nil {
		t.Error("65 SAQs accepted")
	}
	for _, n := range []int{-2, 65} {
		if err := (RECNConfig{NICSAQs: n}).Validate(); err == nil {
			t.Errorf("nic_saqs %d accepted", n)
		}
	}
	if err := (RECNConfig{NICSAQs: -1}).Validate(); err != nil {
		t.Errorf("nic_saqs -1 (none) refused: %v", err)
	}
}

// TestRECNRandomDrainsClean: on a torus, a MIN and an irregular network
// with deterministic routing, random traffic with a hot spot through
// switches with two SAQs per port (so that they run out): the RECN
// bookkeeping agrees with the queues at every step, credits are
// conserved, every stream arrives in order, and once the traffic has
// drained every SAQ has been freed.
func TestRECNRandomDrainsClean(t *testing.T) {
	torus := topo.DefaultConfig(topo.KindTorus)
	torus.K, torus.HostsPerSwitch = []int{3, 3}, 2
	min := topo.DefaultConfig(topo.KindMIN)
	min.Hosts, min.MINRadix = 16, 4
	irr := topo.DefaultConfig(topo.KindIrregular)
	irr.Switches, irr.Ports, irr.HostsPerSwitch, irr.Seed = 8, 6, 2, 3
	for _, tc := range []topo.Config{torus, min, irr} {
		tp, err := topo.Build(tc)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tp.Name, func(t *testing.T) {
			cfg := recnConfig()
			cfg.RECN.MaxSAQs = 2
			eng, f, ep := build(t, tp, cfg, route.DefaultConfig())
			a := f.arch.(*recnArch)
			hosts := tp.NumHosts()
			seq := map[[2]int]uint64{}
			sent := 0
			x := uint32(12345)
			rnd := func(n int) int { x = x*1664525 + 1013904223; return int(x>>8) % n }
			for step := 0; step < 150; step++ {
				for src := 0; src < hosts; src++ {
					dst := rnd(hosts)
					if src%3 == 0 && step < 80 {
						dst = 1 // hot spot
					}
					if dst == src {
						continue
					}
					ep.send(src, dst, 64+rnd(200), seq[[2]int{src, dst}])
					seq[[2]int{src, dst}]++
					sent++
				}
				eng.RunUntil(eng.Now() + 300*des.Nanosecond)
				if iv := f.CheckInvariants(); !iv.OK() {
					t.Fatalf("step %d: %v", step, iv.Violations)
				}
				if bad := a.check(); bad != nil {
					t.Fatalf("step %d: %v", step, bad)
				}
			}
			eng.RunUntil(eng.Now() + 5*des.Millisecond)
			if len(ep.got) != sent {
				t.Fatalf("delivered %d of %d (deadlock: %v)", len(ep.got), sent, f.Deadlock)
			}
			if ep.ooo != 0 {
				t.Errorf("%d out of order", ep.ooo)
			}
			r := f.RECN(0, 0)
			t.Logf("%+v", r.RECNStats)
			if r.Allocations == 0 {
				t.Errorf("no SAQ was allocated: %+v", r.RECNStats)
			}
			if r.SAQsAtEnd != 0 || r.NICAllocations != r.NICDeallocations {
				t.Errorf("after the drain %d switch SAQs are in use and %d of %d NIC SAQs were freed", r.SAQsAtEnd, r.NICDeallocations, r.NICAllocations)
			}
			if bad := a.check(); bad != nil {
				t.Error(bad)
			}
		})
	}
}

// TestRECNTreeByHand: the tree of hotSpot on the line, worked out by hand
// (ports: hosts on 0 and 1, left neighbour on 2, right on 3; a path is a
// list of output ports, all on lane 0).
//
//   - s1's port 3 carries six flows: it becomes a root and notifies the
//     inputs that send to it, s1/p0 and s1/p1 (hosts 2, 3) and s1/p2 (from
//     s0), which allocate input SAQs for [3]. s0's port 3 (three flows)
//     does the same for s0/p0 and s0/p1.
//   - The SAQ at s1/p2 fills past its threshold and notifies upstream: s0's
//     output port 3 allocates an output SAQ for [3] (the path after s0),
//     which in turn notifies s0/p0 and s0/p1: input SAQs for [3 3].
//   - Deallocation is leaf first (§3.5): s0's [3 3] input SAQs, then s0's
//     output SAQ [3], whose token lets s1/p2's [3] go.
func TestRECNTreeByHand(t *testing.T) {
	cfg := recnConfig()
	cfg.RECN.NICSAQs = -1 // the switches' tree only; TestRECNNICKeepsInjecting has the NICs
	eng, f, ep, a := recnLine(t, cfg)
	first := map[string]int{} // event -> index of its first occurrence
	last := map[string]int{}
	n := 0
	a.trace = func(ev string, port int32, k int, _ int32) {
		if ev[:4] != "allo" && ev[:4] != "free" {
			return
		}
		var sw, p int32
		var sq *saq
		if ev[len(ev)-3:] == "-in" {
			sw, p, sq = f.in[port].sw, f.in[port].port, &a.in[port].saqs[k]
		} else {
			sw, p, sq = f.out[port].sw, f.out[port].port, &a.out[port].saqs[k]
		}
		var turns []int
		for i := 0; i < len(sq.path); i += hopBytes {
			turns = append(turns, int(sq.path[i])<<8|int(sq.path[i+1]))
		}
		key := fmt.Sprintf("%s s%d/p%d %v", ev, sw, p, turns)
		if _, ok := first[key]; !ok {
			first[key] = n
		}
		last[key] = n
		n++
	}
	hotSpot(ep, 150)
	eng.RunUntil(3 * des.Millisecond)
	if len(ep.got) != 6*150 {
		t.Fatalf("delivered %d of %d", len(ep.got), 6*150)
	}
	want := []string{
		"alloc-in s1/p0 [3]", "alloc-in s1/p1 [3]", "alloc-in s1/p2 [3]",
		"alloc-in s0/p0 [3]", "alloc-in s0/p1 [3]",
		"alloc-out s0/p3 [3]", "alloc-in s0/p0 [3 3]", "alloc-in s0/p1 [3 3]",
	}
	for _, w := range want {
		if _, ok := first[w]; !ok {
			t.Errorf("no %q; events: %v", w, first)
		}
	}
	var allocs int
	for k := range first {
		if k[:5] == "alloc" {
			allocs++
		}
	}
	if allocs != len(want) {
		t.Errorf("%d distinct SAQs allocated, want the %d worked out by hand: %v", allocs, len(want), first)
	}
	// before: event a (its index in at) comes before event b (in at too).
	before := func(a, b string, at map[string]int) {
		t.Helper()
		_, okA := at[a]
		_, okB := at[b]
		if !okA || !okB || at[a] >= at[b] {
			t.Errorf("%q (event %d) should come before %q (event %d)", a, at[a], b, at[b])
		}
	}
	// growth: upstream SAQs after the SAQ that notified them
	before("alloc-in s1/p2 [3]", "alloc-out s0/p3 [3]", first)
	before("alloc-out s0/p3 [3]", "alloc-in s0/p0 [3 3]", first)
	before("alloc-out s0/p3 [3]", "alloc-in s0/p1 [3 3]", first)
	// tokens: the leaves go first
	before("free-in s0/p0 [3 3]", "free-out s0/p3 [3]", last)
	before("free-in s0/p1 [3 3]", "free-out s0/p3 [3]", last)
	before("free-out s0/p3 [3]", "free-in s1/p2 [3]", last)
}

// nicRun: on the line, hosts 0..4 send n packets each to host 5, all
// queued at time 0, so that the tree of TestRECNHotSpot forms and lasts;
// at 300 us, when the tree has formed, host 0 queues m packets for host 1
// behind its packets for host 5. s0's input from host 0 has a SAQ for the
// path to host 5 past its Xoff threshold. It returns, per sample every
// 2 us from 300 us on, whether host 0's injection port held an Xoff'd SAQ
// with packets and how many of host 0's packets for host 1 had arrived;
// and how long after 300 us the last of them arrived.
func nicRun(t *testing.T, nicSAQs, n, m int) (xoff []bool, toOne []int, lastOne des.Time, f *Fabric) {
	cfg := recnConfig()
	cfg.RECN.NICSAQs = nicSAQs
	eng, f, ep, a := recnLine(t, cfg)
	for src := 0; src <= 4; src++ {
		for i := 0; i < n; i++ {
			ep.send(src, 5, 256, uint64(i))
		}
	}
	const at = 300 * des.Microsecond
	eng.RunUntil(at)
	for i := 0; i < m; i++ {
		ep.send(0, 1, 256, uint64(i))
	}
	for step := 0; step < 2000 && len(ep.got) < 5*n+m; step++ {
		eng.RunUntil(eng.Now() + 2*des.Microsecond)
		if iv := f.CheckInvariants(); !iv.OK() {
			t.Fatalf("at %v: %v", eng.Now(), iv.Violations)
		}
		if bad := a.check(); bad != nil {
			t.Fatalf("at %v: %v", eng.Now(), bad)
		}
		off := false
		if a.nics != nil {
			for _, s := range a.out[f.hostOut[0]].saqs {
				off = off || (s.active && s.xoff && s.q.n > 0)
			}
		}
		one := 0
		for _, p := range ep.got {
			if p.Src == 0 && p.Dst == 1 {
				one++
			}
		}
		xoff, toOne = append(xoff, off), append(toOne, one)
	}
	if len(ep.got) != 5*n+m {
		t.Fatalf("delivered %d of %d (deadlock: %v)", len(ep.got), 5*n+m, f.Deadlock)
	}
	if ep.ooo != 0 {
		t.Errorf("%d packets out of order", ep.ooo)
	}
	for i, p := range ep.got {
		if p.Src == 0 && p.Dst == 1 {
			lastOne = ep.at[i] - at
		}
	}
	eng.RunUntil(eng.Now() + 50*des.Microsecond) // tokens travel
	return xoff, toOne, lastOne, f
}

// TestRECNNICKeepsInjecting: a host whose injection port holds a SAQ
// stopped by Xoff still injects its packets for other destinations
// (paper 000 §4.1: SAQs at the output side of the network interfaces).
// Host 0 has packets for the congested host 5 queued when it queues 40
// for host 1. With NIC SAQs, packets for host 1 are delivered while host
// 0's SAQ for the path to host 5 is Xoff'd and holds packets, and the 40
// take little more than their own serialization time; without them
// (nic_saqs -1) they wait behind the packets for host 5 in the NIC's
// queue, which wait for credits behind the Xoff'd SAQ filling the first
// switch's input buffer. Both runs are lossless, in order, and free every
// SAQ at the end.
func TestRECNNICKeepsInjecting(t *testing.T) {
	const n, m = 400, 40
	xoff, toOne, lastOne, f := nicRun(t, 4, n, m)
	sawXoff, progressed := false, false
	for i := 1; i < len(xoff); i++ {
		if xoff[i] {
			sawXoff = true
			if xoff[i-1] && toOne[i] > toOne[i-1] {
				progressed = true
			}
		}
	}
	if !sawXoff {
		t.Fatal("host 0's injection port never held an Xoff'd SAQ with packets")
	}
	if !progressed {
		t.Errorf("no packet for host 1 was delivered while host 0's SAQ was stopped: %v", toOne)
	}
	r := f.RECN(0, 0)
	t.Logf("%+v", r.RECNStats)
	if r.NICAllocations == 0 || r.NICSetAside == 0 || r.MaxSAQsPerNIC == 0 {
		t.Errorf("no SAQ at a NIC: %+v", r.RECNStats)
	}
	if r.NICAllocations != r.NICDeallocations || r.SAQsAtEnd != 0 {
		t.Errorf("after the drain SAQs remain: NIC %d allocated, %d freed; %d at switches", r.NICAllocations, r.NICDeallocations, r.SAQsAtEnd)
	}
	_, _, lastOneFIFO, f := nicRun(t, -1, n, m)
	t.Logf("the 40 packets for host 1 took %v with NIC SAQs, %v without", lastOne, lastOneFIFO)
	if own := 2 * m * f.Config().SerializationTime(256); lastOne > own {
		t.Errorf("with NIC SAQs the packets for host 1 took %v, more than twice their serialization time %v", lastOne, own/2)
	}
	if lastOne >= lastOneFIFO/4 {
		t.Errorf("the packets for host 1 took %v with NIC SAQs, %v without: the NIC SAQs did not let them pass", lastOne, lastOneFIFO)
	}
	if r := f.RECN(0, 0); r.NICAllocations != 0 {
		t.Errorf("nic_saqs -1 allocated %d NIC SAQs", r.NICAllocations)
	}
}

// TestRECNPortCountTracksBusiestPort: the most SAQs at any one port
// follows allocations and frees at several ports, as the per-port series
// of fabric.recn.port_series reports it.
func TestRECNPortCountTracksBusiestPort(t *testing.T) {
	c := &portCount{}
	c.with[0], c.with[1] = make([]int, 9), make([]int, 9)
	steps := []struct{ side, from, to, wantIn, wantOut int }{
		{0, 0, 1, 1, 0}, // input A: 1
		{0, 1, 2, 2, 0}, // input A: 2
		{0, 0, 1, 2, 0}, // input B: 1
		{1, 0, 1, 2, 1}, // output X: 1
		{0, 2, 1, 1, 1}, // input A: 1 (A and B hold one each)
		{0, 1, 0, 1, 1}, // input B: 0
		{0, 1, 0, 0, 1}, // input A: 0
		{1, 1, 0, 0, 0}, // output X: 0
	}
	for i, s := range steps {
		c.change(s.side, s.from, s.to)
		if c.most[0] != s.wantIn || c.most[1] != s.wantOut {
			t.Fatalf("step %d: most in/out %d/%d, want %d/%d", i, c.most[0], c.most[1], s.wantIn, s.wantOut)
		}
	}
}
