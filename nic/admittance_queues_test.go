package nic_test

import (
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
)

// admSession is paper000-min64 (partitioned VOQ memory, admittance end
// node) with switch sw and 8 KB port memories, so that a blocked
// destination fills the queues of its path within microseconds; via, when
// set, sits between the fabric and the NICs.
func admSession(t *testing.T, sw string, via func(*nic.Network) fabric.Endpoint) *model.Session {
	t.Helper()
	c, err := model.LookupPreset("paper000-min64")
	if err != nil {
		t.Fatal(err)
	}
	c.Fabric.Switch = sw
	c.Fabric.InputBuffer, c.Fabric.OutputBuffer = 8*1024, 8*1024
	s, err := model.NewSessionVia(c.Topology, c.Routing, c.Fabric, c.NIC, 0, des.Millisecond, 0, via)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// send queues one message of n packets (of the 256-byte MTU, no header
// bytes in the preset) from src to dst and returns a pointer to its
// delivery time (0 until delivered).
func send(s *model.Session, src, dst, n int) *des.Time {
	done := new(des.Time)
	m := s.Net.NewMessage()
	m.Src, m.Dst, m.Bytes = src, dst, int64(256*n)
	m.Done = func(_ *nic.Message, at des.Time) { *done = at }
	s.Net.Send(m)
	return done
}

func checkInvariants(t *testing.T, s *model.Session, when string) {
	t.Helper()
	if iv := s.Invariants(); !iv.OK {
		t.Fatalf("%s: invariants: %v", when, iv.Violations)
	}
}

// TestAdmittanceNoHOLAtSource: host 0 sends a long message to host 40,
// whose reception is held, and then a short one to host 1 (on its own
// switch). Host 40's packets fill their queues back to host 0's first
// switch, whose queue for them (per destination for voqnet, per output for
// voqsw, one of four for 4q) runs out of credits, and then host 0's
// injection queue for them. With the injection queues following the
// first switch's queues (paper 000 §4.1) the message to host 1 goes from
// its own injection queue into its own queue there and is delivered while
// host 40 is still held; with one queue per input (1q) it waits behind
// host 40's packets, so the test can tell the two apart. Afterwards
// reception resumes and everything is delivered; the invariants (packets
// and credits, per queue on every channel, the NICs' own books) hold
// throughout.
func TestAdmittanceNoHOLAtSource(t *testing.T) {
	for _, tc := range []struct {
		sw    string
		noHOL bool
	}{{"voqnet", true}, {"voqsw", true}, {"4q", true}, {"1q", false}} {
		t.Run(tc.sw, func(t *testing.T) {
			s := admSession(t, tc.sw, nil)
			s.Fabric.HoldReception(40)
			// 600 packets: 154 us of link time at 1 byte/ns, beyond what
			// the path's queues and host 40's reception buffer hold (about
			// 56 KB with 8 KB memories)
			blocked := send(s, 0, 40, 600)
			if err := s.RunUntil(150*des.Microsecond, nil); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s, "blocked")
			if s.Net.Queued == 0 {
				t.Fatal("host 0 holds none of host 40's packets: nothing is blocked")
			}
			other := send(s, 0, 1, 8)
			if err := s.RunUntil(200*des.Microsecond, nil); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, s, "while held")
			if *blocked != 0 {
				t.Fatal("the held destination's message was delivered")
			}
			if got := *other != 0; got != tc.noHOL {
				t.Fatalf("message to host 1 delivered while host 40 is held: %v, want %v", got, tc.noHOL)
			}
			s.Fabric.ResumeReception(40)
			if _, all, err := s.Drain(des.Millisecond, 10*des.Microsecond); err != nil || !all {
				t.Fatalf("drain: all delivered %v, %v", all, err)
			}
			checkInvariants(t, s, "drained")
			if *blocked == 0 || *other == 0 {
				t.Fatal("a message was not delivered after reception resumed")
			}
			if s.Net.Queued != 0 || s.Fabric.InFabric() != 0 {
				t.Fatalf("%d packets queued, %d in the fabric after the drain", s.Net.Queued, s.Fabric.InFabric())
			}
		})
	}
}

// popRecorder passes everything to the NICs and records the destination
// of every packet the fabric takes from host 0 (the last one Peek
// offered).
type popRecorder struct {
	*nic.Network
	peeked *fabric.Packet
	dsts   []int32
}

func (r *popRecorder) Peek(h int) *fabric.Packet {
	p := r.Network.Peek(h)
	if h == 0 {
		r.peeked = p
	}
	return p
}

func (r *popRecorder) Pop(h int, at des.Time) {
	if h == 0 {
		r.dsts = append(r.dsts, r.peeked.Dst)
	}
	r.Network.Pop(h, at)
}

// TestAdmittanceInjectionRoundRobin: host 0 sends 16 packets to each of
// three hosts reached through different queues of its first switch, and
// nothing blocks them; the injection arbiter serves the ready injection
// queues round robin (paper 000 §4.1: "a round robin scheme among all the
// queues"), so once all three have packets (the first packet leaves
// before the other messages exist) every three packets in a row go to
// the three destinations, until the destinations run out, and each
// destination's packets take a third of the injections.
func TestAdmittanceInjectionRoundRobin(t *testing.T) {
	for _, sw := range []string{"voqnet", "voqsw"} {
		t.Run(sw, func(t *testing.T) {
			var rec *popRecorder
			s := admSession(t, sw, func(nw *nic.Network) fabric.Endpoint {
				rec = &popRecorder{Network: nw}
				return rec
			})
			dsts := []int{1, 9, 40} // host 0's switch, then two others: three outputs of switch 0
			for _, d := range dsts {
				send(s, 0, d, 16)
			}
			if _, all, err := s.Drain(des.Millisecond, 10*des.Microsecond); err != nil || !all {
				t.Fatalf("drain: all delivered %v, %v", all, err)
			}
			checkInvariants(t, s, "drained")
			if len(rec.dsts) != 48 {
				t.Fatalf("host 0 injected %d packets, want 48", len(rec.dsts))
			}
			for i := 4; i < 42; i++ {
				w := rec.dsts[i-2 : i+1]
				if w[0] == w[1] || w[1] == w[2] || w[0] == w[2] {
					t.Fatalf("packets %d to %d go to %v: not round robin (order %v)", i-1, i+1, w, rec.dsts)
				}
			}
			count := map[int32]int{}
			for _, d := range rec.dsts[:42] {
				count[d]++
			}
			for _, d := range dsts {
				if n := count[int32(d)]; n < 13 || n > 15 {
					t.Errorf("host %d has %d of the first 42 injections, want 14 +- 1 (order %v)", d, n, rec.dsts)
				}
			}
		})
	}
}

// TestAdmittance4QOrder: 4Q with partitioned memory and the admittance
// end node keeps every flow in order under deterministic routing (paper
// 000's corner case 2 at a tenth of its time scale, the paper's 128 KB
// memories). A flow's next packet chooses its queue at the first switch
// when it enters an injection queue, which the NIC does as the previous
// one is sent: that one must already count as bound for its queue there,
// or the next may take another queue and overtake it (the order this
// run caught).
func TestAdmittance4QOrder(t *testing.T) {
	c, err := model.LookupPreset("paper000-min64")
	if err != nil {
		t.Fatal(err)
	}
	c.Fabric.Switch = "4q"
	c.Traffic.Pattern = "corner2:0.1,sources=stride"
	c.Run.Warmup, c.Run.Duration = 10*des.Microsecond, 140*des.Microsecond
	s := runOK(t, c)
	if s.Invariants.InOrder == nil || !*s.Invariants.InOrder {
		t.Fatal("deterministic routing delivered out of order")
	}
}
