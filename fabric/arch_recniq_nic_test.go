package fabric

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
)

// nicTraffic: on the example network (recnIQExample) C sends n packets
// in the repeating order H, H, H, O and D sends n packets to H, all at
// once; A and B take turns towards H on switch 1 as in exampleTraffic.
// Output 5 of switch 2 (host H) is oversubscribed by C, D and switch 2's
// input 0; output 6 (host O) is used by C alone.
func nicTraffic(eng *des.Engine, f *Fabric, ep *testEP, n int) {
	seq := map[[2]int]uint64{}
	send := func(src, dst int) {
		ep.send(src, dst, 64, seq[[2]int{src, dst}])
		seq[[2]int{src, dst}]++
	}
	for i := 0; i < n; i++ {
		send(hostC, []int{hostH, hostH, hostH, hostO}[i%4])
		send(hostD, hostH)
	}
	gap := f.cfg.SerializationTime(64)
	for i := 0; i < n; i++ {
		send([]int{hostA, hostB}[i%2], hostH)
		eng.RunUntil(eng.Now() + gap)
	}
}

// TestRECNIQNICXoff plays, with SAQs at the NICs (nic_saqs 4), the
// example worked by hand from §3.3.5-§3.3.7 with the NIC as the upstream
// port of the first switch:
//  1. C's packets for H pile up in the cold queue of switch 2's input 1
//     (C's link): at 4 packets with one for output 5 at the head a SAQ
//     [5] is allocated there (§3.3.2), and at 5 packets in it (Xoff
//     threshold) the input sends Xoff upstream, to C's NIC (§3.3.5);
//  2. C's NIC allocates a SAQ for the path [5] (the turns from switch 2
//     on), lane 0, in Xoff;
//  3. while it is in Xoff no packet of C for H starts on C's link: the
//     NIC sets them aside (nic_set_aside), and it keeps injecting its
//     packets for O (path [6], no match) past them;
//  4. when switch 2's SAQ falls below 2 packets (Xon threshold) it sends
//     Xon; the NIC's SAQ leaves Xoff and sends again (§3.3.6);
//  5. a NIC SAQ is freed only empty and not in Xoff (§3.3.3).
//
// At every event the bookkeeping holds (SAQs within nic_saqs, the NIC
// SAQ memory within nic_saq_memory); at the end everything is delivered
// in order, every Xoff a NIC received is matched by an Xon and every SAQ
// is free. With nic_saqs -1 no Xoff ever goes to a host (the rule before
// NIC SAQs), and C's packets for O wait behind its packets for H.
func TestRECNIQNICXoff(t *testing.T) {
	const n = 48
	cfg := recnIQConfig()
	cfg.RECNIQ.NICSAQs = 4
	eng, f, ep, a := recnIQExample(t, cfg)
	cin := f.sw[1].in[1] // switch 2's input 1, fed by C
	hot := turn(5, 0)
	var xoffAt, xonAt []des.Time // C's NIC SAQ [5] in Xoff over these intervals
	xoffSent, xonSent := 0, 0    // by inputs fed by hosts
	step := map[int]bool{}
	a.trace = func(ev string, port int32, k int, cnt int) {
		if bad := a.check(); bad != nil {
			t.Fatalf("%v after %s: %s", eng.Now(), ev, strings.Join(bad, "; "))
		}
		hostFed := ev == "xoff-sent" || ev == "xon-sent"
		hostFed = hostFed && f.out[f.in[port].up].sw < 0
		switch {
		case ev == "detect" && port == cin && a.in[port].saqs[k].path == hot:
			step[1] = true
		case hostFed && ev == "xoff-sent":
			xoffSent++
			if port == cin {
				if cnt != a.xoff || a.in[port].saqs[k].path != hot {
					t.Errorf("step 1: Xoff to C's NIC at %d packets for [% x], want %d for [% x]", cnt, a.in[port].saqs[k].path, a.xoff, hot)
				}
			}
		case hostFed && ev == "xon-sent":
			xonSent++
			if cnt >= a.xon {
				t.Errorf("step 4: Xon to a NIC at %d packets, want below %d", cnt, a.xon)
			}
		case ev == "xoff-nic" && port == hostC:
			s := a.nics[hostC].saqs[k]
			if s.path != hot || s.vl != 0 || !s.xoff || !s.active {
				t.Errorf("step 2: C's NIC SAQ [% x] lane %d xoff %v, want [% x] lane 0 in Xoff", s.path, s.vl, s.xoff, hot)
			}
			step[2] = true
			xoffAt = append(xoffAt, eng.Now())
		case ev == "xon-nic" && port == hostC:
			if a.nics[hostC].saqs[k].xoff {
				t.Errorf("step 4: C's NIC SAQ still in Xoff after Xon")
			}
			if len(xonAt) < len(xoffAt) {
				xonAt = append(xonAt, eng.Now())
			}
			step[4] = true
		case ev == "free-nic":
			s := a.nics[port].saqs[k]
			if s.xoff || s.q.head != nil {
				t.Errorf("step 5: NIC %d freed a SAQ in Xoff %v holding packets %v", port, s.xoff, s.q.head != nil)
			}
			step[5] = true
		}
	}
	nicTraffic(eng, f, ep, n)
	eng.RunUntil(eng.Now() + 400*des.Microsecond)
	for s := 1; s <= 5; s++ {
		if s != 3 && !step[s] {
			t.Errorf("step %d never happened", s)
		}
	}
	if len(xonAt) < len(xoffAt) {
		xonAt = append(xonAt, eng.Now())
	}
	inXoff := func(at des.Time) bool {
		for i := range xoffAt {
			if at > xoffAt[i] && at < xonAt[i] {
				return true
			}
		}
		return false
	}
	hotDuring, oDuring := 0, 0
	for _, p := range ep.got {
		if p.Src != hostC || !inXoff(p.Inject) {
			continue
		}
		if p.Dst == hostH {
			hotDuring++
		} else {
			oDuring++
		}
	}
	if hotDuring != 0 {
		t.Errorf("step 3: %d packets of C for H started while C's SAQ was in Xoff", hotDuring)
	}
	if oDuring == 0 || a.stats.NICSetAside == 0 {
		t.Errorf("step 3: C injected %d packets for O during Xoff, set aside %d", oDuring, a.stats.NICSetAside)
	}
	if want := 3 * n; len(ep.got) != want || ep.ooo != 0 {
		t.Errorf("delivered %d packets (%d out of order), want %d in order", len(ep.got), ep.ooo, want)
	}
	st := a.stats
	if st.NICXoff != uint64(xoffSent) || st.NICXon != uint64(xonSent) || xoffSent != xonSent || xoffSent == 0 {
		t.Errorf("Xoff sent to NICs %d, received %d; Xon sent %d, received %d", xoffSent, st.NICXoff, xonSent, st.NICXon)
	}
	if st.NICAllocations == 0 || st.NICAllocations != st.NICDeallocations || st.MaxSAQsPerNIC > 4 {
		t.Errorf("NIC SAQs: %d allocated, %d freed, at most %d at once", st.NICAllocations, st.NICDeallocations, st.MaxSAQsPerNIC)
	}
	if a.total != 0 || f.NICSAQPackets(hostC) != 0 {
		t.Errorf("after the drain: %d switch SAQs, %d packets in C's NIC SAQs", a.total, f.NICSAQPackets(hostC))
	}
	t.Logf("Xoff intervals at C: %d; %+v", len(xoffAt), st.RECNIQNICStats)

	// Without NIC SAQs: no Xoff to a host, ever.
	cfg.RECNIQ.NICSAQs = -1
	eng, f, ep, a = recnIQExample(t, cfg)
	toHost := 0
	a.trace = func(ev string, port int32, k int, cnt int) {
		if ev == "xoff-sent" && f.out[f.in[port].up].sw < 0 {
			toHost++
		}
	}
	nicTraffic(eng, f, ep, n)
	eng.RunUntil(eng.Now() + 400*des.Microsecond)
	if toHost != 0 || a.stats.NICXoff != 0 || len(ep.got) != 3*n || ep.ooo != 0 {
		t.Errorf("nic_saqs -1: %d Xoff to hosts, %d received; delivered %d of %d, %d out of order", toHost, a.stats.NICXoff, len(ep.got), 3*n, ep.ooo)
	}
}

// TestRECNIQNICMemoryAndExhaustion: with one SAQ per NIC and a NIC SAQ
// memory of 64 bytes (raised to one largest packet, so that a head that
// belongs in a SAQ can always leave), C's NIC runs out of both (C's packets for H and
// for O both congest: H by D, O by B below): an Xoff for a second path
// finds no free SAQ and is dropped (saq_exhausted_nic), and a head that
// belongs in the full SAQ waits at the head of the NIC's queue
// (nic_memory_full). Nothing is lost or reordered, and the SAQs and the
// memory never exceed their limits (a.check at every event).
func TestRECNIQNICMemoryAndExhaustion(t *testing.T) {
	cfg := recnIQConfig()
	cfg.RECNIQ.NICSAQs, cfg.RECNIQ.NICMemory = 1, 64
	eng, f, ep, a := recnIQExample(t, cfg)
	a.trace = func(ev string, port int32, k int, cnt int) {
		if bad := a.check(); bad != nil {
			t.Fatalf("%v after %s: %s", eng.Now(), ev, strings.Join(bad, "; "))
		}
	}
	seq := map[[2]int]uint64{}
	send := func(src, dst int) {
		ep.send(src, dst, 64, seq[[2]int{src, dst}])
		seq[[2]int{src, dst}]++
	}
	for i := 0; i < 60; i++ {
		send(hostC, []int{hostH, hostO}[i%2])
		send(hostD, hostH)
		send(hostB, hostO)
	}
	eng.RunUntil(eng.Now() + 500*des.Microsecond)
	st := a.stats
	if st.ExhaustedNIC == 0 || st.NICMemoryFull == 0 || st.MaxSAQsPerNIC != 1 || st.MaxNICSAQBytes > int64(a.nicMem)*int64(f.blockBytes) {
		t.Errorf("exhausted %d, memory full %d, at most %d SAQs and %d bytes at a NIC", st.ExhaustedNIC, st.NICMemoryFull, st.MaxSAQsPerNIC, st.MaxNICSAQBytes)
	}
	if len(ep.got) != 180 || ep.ooo != 0 {
		t.Errorf("delivered %d of 180, %d out of order", len(ep.got), ep.ooo)
	}
	for h := range a.nics {
		if a.nics[h].inUse != 0 || a.nics[h].held != 0 {
			t.Errorf("host %d: %d SAQs, %d blocks left", h, a.nics[h].inUse, a.nics[h].held)
		}
	}
	t.Logf("%+v", st.RECNIQNICStats)
}

// TestRECNIQPerCycleDetection: with one SAQ per input, input 1 of switch
// 1 (A's link) holds a SAQ for [6] when its cold queue reaches 4 packets
// for H (route [4 5]): the detection finds no free SAQ (exhaustion). When
// the SAQ [6] is freed with the cold queue still at 4, the thesis'
// detection unit, which compares the cold queue with the threshold every
// cycle (§4.1.4), allocates a SAQ [4] for the head's output at once;
// detection "events" waits for the next arrival or departure.
func TestRECNIQPerCycleDetection(t *testing.T) {
	for _, mode := range []string{DetectPerCycle, DetectAtEvents} {
		cfg := recnIQConfig()
		cfg.RECNIQ.MaxSAQs, cfg.RECNIQ.Detection = 1, mode
		eng, f, _, a := recnIQExample(t, cfg)
		a.setup()
		ii := f.sw[0].in[1]
		other := a.allocate(ii, 0, turn(6, 0))
		for i := range 4 {
			arriveByHand(f, a, ii, i)
		}
		if a.stats.ExhaustedInput != 1 || a.stats.Detections != 0 {
			t.Fatalf("%s: exhausted %d, detections %d before the SAQ is freed", mode, a.stats.ExhaustedInput, a.stats.Detections)
		}
		a.maybeFree(ii, other)
		eng.RunUntil(eng.Now())
		want := uint64(0)
		if mode == DetectPerCycle {
			want = 1
		}
		if a.stats.Detections != want {
			t.Errorf("%s: %d detections after the SAQ was freed, want %d", mode, a.stats.Detections, want)
		}
		if want == 1 && findExact(a.in[ii].saqs, 0, turn(4, 0)) < 0 {
			t.Errorf("%s: no SAQ [4] for the head's output", mode)
		}
	}
}

// TestRECNIQPostProcessingDelay: at zero load a packet crossing h
// recn-iq switches takes the iq latency plus, with post_processing timed,
// one post_processing_delay per switch (§4.2.3: 10 ns per packet); with
// bypass (the enhanced RECN-IQ, no SAQ and a short cold queue) and
// instant, exactly the iq latency.
func TestRECNIQPostProcessingDelay(t *testing.T) {
	for _, mode := range []string{PPTimed, PPBypass, PPInstant} {
		cfg := recnIQConfig()
		cfg.RECNIQ.PostProcessing = mode
		eng, f, ep, _ := recnIQExample(t, cfg)
		ep.send(hostA, hostO, 64, 0)
		eng.RunUntil(10 * des.Microsecond)
		if len(ep.got) != 1 {
			t.Fatalf("%s: delivered %d", mode, len(ep.got))
		}
		c := f.cfg
		want := 2*c.RoutingDelay + 3*c.PropagationDelay() + c.SerializationTime(64)
		if mode == PPTimed {
			want += 2 * 10 * des.Nanosecond
		}
		if got := ep.at[0] - ep.got[0].Gen; got != want {
			t.Errorf("%s: latency %v, want %v", mode, got, want)
		}
	}
}
