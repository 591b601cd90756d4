package fabric

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// Hosts of the RECN-IQ example network (recnIQExample).
const (
	hostA, hostB, hostC, hostD, hostH, hostO = 0, 1, 2, 3, 4, 5
)

// arriveByHand puts a 64-byte packet of hostA for hostH with sequence
// number seq into input ii as an arrival would (the architecture picks
// its queue), without the link and the events around it, and returns the
// queue it joined.
func arriveByHand(f *Fabric, a *recnIQArch, ii int32, seq int) int {
	p := f.NewPacket()
	p.Src, p.Dst, p.Size, p.Seq = hostA, hostH, 64, uint64(seq)
	p.blocks = 1
	ip := &f.in[ii]
	qi := a.enqueue(ip, p)
	ip.pushQ(qi, p)
	ip.queued++
	return qi
}

// recnIQExample is the network of paper 003's RECN-IQ example (§3.3.7,
// Figs. 3.6-3.15): "switch 1" (s0) sends from its inputs 1 and 3 through
// its output 4 to input 0 of "switch 2" (s1), whose output 5 is
// oversubscribed. Hosts: A on s0 port 1, B on s0 port 3, C and D on s1
// ports 1 and 2, H (the hot one) on s1 port 5, O on s1 port 6. The thesis
// writes turns as offsets from the input port (+3+5 from input 1, +1+5
// from input 3); fabemu's turns are absolute output ports, so both are
// [4 5] here.
func recnIQExample(t *testing.T, cfg Config) (*des.Engine, *Fabric, *testEP, *recnIQArch) {
	tp := &topo.Topology{Name: "recn-iq-example", Kind: topo.KindGeneric}
	tp.Switches = []topo.Switch{{Ports: 8}, {Ports: 8}}
	for _, at := range [][2]int{{0, 1}, {0, 3}, {1, 1}, {1, 2}, {1, 5}, {1, 6}} {
		tp.Hosts = append(tp.Hosts, topo.Host{At: topo.PortRef{Switch: at[0], Port: at[1]}})
	}
	tp.Links = []topo.Link{{A: topo.PortRef{Switch: 0, Port: 4}, B: topo.PortRef{Switch: 1, Port: 0}}}
	if err := tp.Finish(); err != nil {
		t.Fatal(err)
	}
	eng, f, ep := build(t, tp, cfg, route.DefaultConfig())
	return eng, f, ep, f.arch.(interface{ recnIQ() *recnIQArch }).recnIQ()
}

// recnIQConfig is the thesis' setup (§4.2): 4 KB input memories (64
// packets of 64 bytes), Xon 2, Xoff 5, detection 4 packets (the defaults).
func recnIQConfig() Config {
	cfg := DefaultConfig()
	cfg.Switch, cfg.OutputBuffer = "recn-iq", 0
	cfg.InputBuffer = 4096
	return cfg
}

// exampleTraffic: C and D send n 64-byte packets each to H at once; A and
// B take turns on s0's output 4 at its link rate (so switch 1 itself is
// not congested), A's every fourth packet going to O instead of H.
func exampleTraffic(eng *des.Engine, f *Fabric, ep *testEP, n int) {
	seq := map[[2]int]uint64{}
	send := func(src, dst int) {
		ep.send(src, dst, 64, seq[[2]int{src, dst}])
		seq[[2]int{src, dst}]++
	}
	for i := 0; i < n; i++ {
		send(hostC, hostH)
		send(hostD, hostH)
	}
	gap := f.cfg.SerializationTime(64)
	for i := 0; i < 2*n; i++ {
		switch {
		case i%2 == 1:
			send(hostB, hostH)
		case i%8 == 0:
			send(hostA, hostO)
		default:
			send(hostA, hostH)
		}
		eng.RunUntil(eng.Now() + gap)
	}
}

// TestRECNIQTenSteps plays the RECN-IQ example of paper 003 §3.3.7 and
// checks, at every event of the mechanism, the state the figures show:
//  1. (Fig. 3.6) the cold queue of switch 2's input 0 reaches the
//     detection threshold (4) with a packet for output 5 at its head;
//  2. (Fig. 3.7) a SAQ is allocated there for turn [5], Valid, Xoff and
//     SentXoff clear, and the post-processing moves the head into it;
//  3. (Fig. 3.8) at 5 packets (Xoff threshold) it sends Xoff upstream;
//  4. (Fig. 3.9) switch 1's output 4 takes a CAM line [5] in Xoff, the
//     contents of the downstream line;
//  5. (Fig. 3.10) inputs 1 and 3 of switch 1, sending matching packets
//     through output 4, allocate SAQs [4 5] in Xoff;
//  6. (Fig. 3.11) only packets whose turns start with [4 5] go into them:
//     A's packets for O ([4 6]) stay in the cold queue; a SAQ in Xoff
//     offers nothing to the allocator;
//  7. (Fig. 3.12) congestion vanishes: switch 2's SAQ falls below the Xon
//     threshold (2) and sends Xon;
//  8. (Fig. 3.13) the line at switch 1's output 4 leaves Xoff and
//     broadcasts an internal Xon (and, holding nothing, is freed);
//  9. (Fig. 3.14) the SAQs [4 5] of inputs 1 and 3 leave Xoff;
//  10. (Fig. 3.15) each SAQ is freed when empty and not in Xoff.
//
// The Xoff/Xon rounds of steps 3-9 may repeat, as the thesis says.
func TestRECNIQTenSteps(t *testing.T) {
	eng, f, ep, a := recnIQExample(t, recnIQConfig())
	in := func(s, p int) int32 { return f.sw[s].in[p] }
	s2in0, s1in1, s1in3, s1out4 := in(1, 0), in(0, 1), in(0, 3), f.sw[0].out[4]
	root, branch := turn(5, 0), turn(4, 0)+turn(5, 0)
	done := map[int]bool{}
	reached := func(step int, what string) {
		for s := 1; s < step; s++ {
			if !done[s] {
				t.Errorf("step %d (%s) before step %d", step, what, s)
			}
		}
		done[step] = true
	}
	a.trace = func(ev string, port int32, k int, n int) {
		if bad := a.check(); bad != nil {
			t.Fatalf("%v after %s: %s", eng.Now(), ev, strings.Join(bad, "; "))
		}
		// Step 6 at every event: no packet for O in a SAQ of switch 1.
		for _, ii := range []int32{s1in1, s1in3} {
			for k := range a.in[ii].saqs {
				for p := f.in[ii].queues[f.nVL+k].head; p != nil; p = p.next {
					if p.Dst == hostO {
						t.Fatalf("%v: packet for O in SAQ %d [% x] of in-port %d", eng.Now(), k, a.in[ii].saqs[k].path, ii)
					}
					if a.in[ii].saqs[k].path == branch && !done[6] {
						reached(6, "packets set aside upstream")
					}
				}
			}
		}
		switch {
		case ev == "detect" && port == s2in0:
			s := a.in[port].saqs[k]
			if s.path != root || s.xoff || s.xoffSent || !s.active {
				t.Errorf("step 2: switch 2 input 0 allocated [% x] xoff %v sentXoff %v, want [% x] with both clear", s.path, s.xoff, s.xoffSent, root)
			}
			if q := &f.in[port].queues[0]; q.n+1 < a.detect {
				t.Errorf("step 1: detection with %d packets in the cold queue", q.n+1)
			}
			reached(1, "detection")
			reached(2, "SAQ allocation")
		case ev == "move" && port == s2in0 && !done[3]:
			if p := f.in[port].queues[f.nVL+k].tail; p.Dst != hostH {
				t.Errorf("step 2: moved a packet for host %d into SAQ [5]", p.Dst)
			}
		case ev == "xoff-sent" && port == s2in0:
			if n != a.xoff || !a.in[port].saqs[k].xoffSent {
				t.Errorf("step 3: Xoff at %d packets, want %d", n, a.xoff)
			}
			reached(3, "Xoff upstream")
		case ev == "xoff-out" && port == s1out4:
			s := a.out[port].saqs[k]
			if s.path != root || s.vl != 0 || !s.xoff {
				t.Errorf("step 4: output 4 line [% x] vl %d xoff %v, want [% x] in Xoff", s.path, s.vl, s.xoff, root)
			}
			reached(4, "output CAM line")
		case ev == "xoff-in" && (port == s1in1 || port == s1in3):
			s := a.in[port].saqs[k]
			if s.path != branch || !s.xoff {
				t.Errorf("step 5: in-port %d SAQ [% x] xoff %v, want [% x] in Xoff", port, s.path, s.xoff, branch)
			}
			if port == s1in1 {
				done[51] = true
			} else {
				done[53] = true
			}
			if done[51] && done[53] {
				reached(5, "SAQs in Xoff upstream")
			}
		case ev == "xon-sent" && port == s2in0:
			if n >= a.xon || a.in[port].saqs[k].xoffSent {
				t.Errorf("step 7: Xon at %d packets, want below %d", n, a.xon)
			}
			reached(7, "Xon upstream")
		case ev == "xon-out" && port == s1out4:
			reached(8, "output line leaves Xoff")
		case ev == "xon-in" && (port == s1in1 || port == s1in3):
			if a.in[port].saqs[k].xoff {
				t.Errorf("step 9: in-port %d SAQ still in Xoff", port)
			}
			if a.out[s1out4].inUse != 0 {
				t.Errorf("step 8: output 4 keeps %d CAM lines after Xon", a.out[s1out4].inUse)
			}
			reached(9, "internal Xon")
		case ev == "free-in":
			s := a.in[port].saqs[k]
			if f.in[port].queues[f.nVL+k].n != 0 || s.xoff {
				t.Errorf("step 10: in-port %d freed SAQ [% x] holding %d packets, xoff %v", port, s.path, f.in[port].queues[f.nVL+k].n, s.xoff)
			}
			if s.path == branch {
				reached(10, "deallocation")
			}
		}
	}
	exampleTraffic(eng, f, ep, 24)
	eng.RunUntil(eng.Now() + 200*des.Microsecond)
	for s := 1; s <= 10; s++ {
		if !done[s] {
			t.Errorf("step %d never happened", s)
		}
	}
	if want := 24 * 4; len(ep.got) != want || ep.ooo != 0 {
		t.Errorf("delivered %d packets (%d out of order), want %d in order", len(ep.got), ep.ooo, want)
	}
	if a.total != 0 || a.out[s1out4].inUse != 0 {
		t.Errorf("after the drain: %d SAQs, %d CAM lines at output 4", a.total, a.out[s1out4].inUse)
	}
	t.Logf("%+v", a.stats)
}

// TestRECNIQSAQLimitAndExhaustion: with one SAQ per port, input 1 of
// switch 2 (host C, sending to H and O, both oversubscribed) and input 0
// (A's O traffic and B's H traffic) see two congested points. The SAQs in
// use never exceed the maximum at any event; a detection that finds no
// free SAQ allocates nothing and leaves the packet in the cold queue,
// which then behaves as a plain input-queued switch (the fallback of
// paper 000 §3.8; the thesis does not cover exhaustion), and nothing is
// lost or reordered.
func TestRECNIQSAQLimitAndExhaustion(t *testing.T) {
	for _, max := range []int{1, 2} {
		cfg := recnIQConfig()
		cfg.RECNIQ.MaxSAQs = max
		eng, _, ep, a := recnIQExample(t, cfg)
		most := 0
		a.trace = func(ev string, port int32, k int, n int) {
			if bad := a.check(); bad != nil {
				t.Fatalf("max %d, %v after %s: %s", max, eng.Now(), ev, strings.Join(bad, "; "))
			}
			for i := range a.in {
				most = maxInt(most, a.in[i].inUse)
			}
			if ev == "exhausted-in" {
				if a.in[port].inUse != max {
					t.Errorf("max %d: exhaustion at in-port %d with %d SAQs in use", max, port, a.in[port].inUse)
				}
			}
		}
		seq := map[[2]int]uint64{}
		send := func(src, dst int) {
			ep.send(src, dst, 64, seq[[2]int{src, dst}])
			seq[[2]int{src, dst}]++
		}
		for i := 0; i < 40; i++ {
			send(hostC, []int{hostH, hostO}[i%2])
			send(hostD, hostH)
			send(hostA, hostO)
			send(hostB, hostH)
		}
		eng.RunUntil(500 * des.Microsecond)
		if most > max || a.stats.MaxSAQsPerInput > max || a.stats.MaxCAMLinesPerOutput > max {
			t.Errorf("max %d: %d SAQs at one input (stats %d, output lines %d)", max, most, a.stats.MaxSAQsPerInput, a.stats.MaxCAMLinesPerOutput)
		}
		if max == 1 && a.stats.ExhaustedInput == 0 {
			t.Errorf("max 1: no exhaustion (%+v)", a.stats)
		}
		if len(ep.got) != 160 || ep.ooo != 0 {
			t.Errorf("max %d: delivered %d of 160, %d out of order", max, len(ep.got), ep.ooo)
		}
		if a.total != 0 {
			t.Errorf("max %d: %d SAQs left after the drain", max, a.total)
		}
		t.Logf("max %d: %+v", max, a.stats)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// TestRECNIQXonXoffHysteresis: every input SAQ alternates Xoff and Xon,
// starting with Xoff; Xoff goes out when it reaches xoff_threshold
// packets and Xon only once it falls below xon_threshold (§3.3.6,
// §4.1.6), for the thesis' 2/5 and for 3/7.
func TestRECNIQXonXoffHysteresis(t *testing.T) {
	for _, th := range [][2]int{{2, 5}, {3, 7}} {
		cfg := recnIQConfig()
		cfg.RECNIQ.XonThreshold, cfg.RECNIQ.XoffThreshold = th[0], th[1]
		eng, f, ep, a := recnIQExample(t, cfg)
		sent := map[[2]int]bool{} // (port, SAQ) has an Xoff outstanding
		xoffs, xons := 0, 0
		a.trace = func(ev string, port int32, k int, n int) {
			key := [2]int{int(port), k}
			switch ev {
			case "xoff-sent":
				if sent[key] || n != th[1] {
					t.Errorf("xon %d xoff %d: Xoff at %d packets, outstanding %v", th[0], th[1], n, sent[key])
				}
				sent[key] = true
				xoffs++
			case "xon-sent":
				if !sent[key] || n >= th[0] {
					t.Errorf("xon %d xoff %d: Xon at %d packets, outstanding %v", th[0], th[1], n, sent[key])
				}
				sent[key] = false
				xons++
			case "free-in":
				if sent[key] {
					t.Errorf("xon %d xoff %d: SAQ freed with an Xoff outstanding", th[0], th[1])
				}
			}
		}
		exampleTraffic(eng, f, ep, 24)
		eng.RunUntil(eng.Now() + 200*des.Microsecond)
		if xoffs == 0 || xoffs != xons {
			t.Errorf("xon %d xoff %d: %d Xoff, %d Xon", th[0], th[1], xoffs, xons)
		}
	}
	bad := RECNIQConfig{XonThreshold: 5, XoffThreshold: 5}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "hysteresis") {
		t.Errorf("xon = xoff accepted: %v", err)
	}
}

// TestRECNIQFalsePositive: §3.3.8. C sends to H (oversubscribed by D)
// with every third packet for O, which only C uses. With a detection
// threshold of one packet every packet reaching the head of C's empty
// cold queue is taken as congested: the SAQs allocated for output 6 take
// a packet for O, empty at once (O is free) and are freed without ever
// filling to the Xoff threshold: false positives, each counted, while
// the packets for H keep their SAQ and nothing is lost or reordered.
func TestRECNIQFalsePositive(t *testing.T) {
	cfg := recnIQConfig()
	cfg.RECNIQ.DetectionThreshold = 1
	eng, f, ep, a := recnIQExample(t, cfg)
	cin := f.sw[1].in[1]
	falseAt := 0
	a.trace = func(ev string, port int32, k int, n int) {
		if ev == "detect" && port == cin && a.in[port].saqs[k].path == turn(6, 0) {
			falseAt++
		}
	}
	seq := map[[2]int]uint64{}
	send := func(src, dst int) {
		ep.send(src, dst, 64, seq[[2]int{src, dst}])
		seq[[2]int{src, dst}]++
	}
	for i := 0; i < 30; i++ {
		send(hostC, []int{hostH, hostH, hostO}[i%3])
		send(hostD, hostH)
	}
	eng.RunUntil(200 * des.Microsecond)
	if falseAt == 0 || a.stats.FalsePositives < uint64(falseAt) || a.stats.FalsePositives > a.stats.Detections {
		t.Errorf("%d detections for O; false positives %d of %d detections", falseAt, a.stats.FalsePositives, a.stats.Detections)
	}
	if len(ep.got) != 60 || ep.ooo != 0 {
		t.Errorf("delivered %d of 60, %d out of order", len(ep.got), ep.ooo)
	}
}

// TestRECNIQArrivalFollowsItsFlow: a packet arriving at an empty cold
// queue is post-processed into the shortest matching SAQ and, heading it,
// on to the longest, where the earlier packets of its flow wait (here in
// Xoff): arriving packets never overtake them through a shorter SAQ.
func TestRECNIQArrivalFollowsItsFlow(t *testing.T) {
	_, f, _, a := recnIQExample(t, recnIQConfig())
	a.setup()
	ii := f.sw[0].in[1]
	short := a.allocate(ii, 0, turn(4, 0))
	long := a.allocate(ii, 0, turn(4, 0)+turn(5, 0))
	a.in[ii].saqs[long].xoff = true
	for i := 0; i < 3; i++ {
		if qi := arriveByHand(f, a, ii, i); qi != f.nVL+long {
			t.Fatalf("packet %d joined queue %d, want the long SAQ (%d; short %d)", i, qi, f.nVL+long, f.nVL+short)
		}
	}
	if bad := a.check(); bad != nil {
		t.Error(strings.Join(bad, "; "))
	}
}
