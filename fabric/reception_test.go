package fabric

import (
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// TestReceptionHold: while host 1 holds its reception, packets to it stay
// in the fabric (credits stop, the source's injection backs up, the
// watchdog does not call it a deadlock, the conservation laws hold); on
// resume every packet arrives, in order, and the credits are conserved.
func TestReceptionHold(t *testing.T) {
	tp := line(t, 2, 1)
	eng, f, ep := build(t, tp, DefaultConfig(), route.DefaultConfig())
	f.HoldReception(1)
	const n = 200
	for i := range n {
		ep.send(0, 1, 282, uint64(i))
	}
	eng.RunUntil(100 * des.Millisecond)
	if f.Deadlock != nil {
		t.Fatalf("a held reception was reported as a deadlock: %v", f.Deadlock.Blocked)
	}
	if len(ep.got) != 0 {
		t.Fatalf("%d packets delivered while reception was held", len(ep.got))
	}
	if f.HeldPackets(1) == 0 || len(ep.q[0]) == 0 {
		t.Fatalf("held %d packets, source still queues %d: the hold did not back up to the source", f.HeldPackets(1), len(ep.q[0]))
	}
	if iv := f.CheckInvariants(); !iv.OK() {
		t.Fatalf("invariants while held: %v", iv.Violations)
	}
	if got := f.InFabric() + uint64(len(ep.q[0])); got != n {
		t.Fatalf("in fabric %d + queued at the source %d != %d sent", f.InFabric(), len(ep.q[0]), n)
	}
	// Resume, hold again after 10 deliveries, then resume for good.
	f.ResumeReception(1)
	eng.RunUntil(eng.Now() + 100*des.Millisecond)
	if len(ep.got) != n || ep.ooo != 0 {
		t.Fatalf("after resume: %d of %d delivered, %d out of order", len(ep.got), n, ep.ooo)
	}
	if f.ReceptionHeld(1) || f.HeldPackets(1) != 0 || f.InFabric() != 0 {
		t.Fatalf("after resume: held %v, %d packets, %d in fabric", f.ReceptionHeld(1), f.HeldPackets(1), f.InFabric())
	}
	if iv := f.CheckInvariants(); !iv.OK() {
		t.Fatalf("invariants after resume: %v", iv.Violations)
	}
}

// TestReceptionHoldInDelivery: a host that holds again from inside a
// delivery keeps the packets behind it held, in order.
func TestReceptionHoldInDelivery(t *testing.T) {
	tp := line(t, 2, 1)
	eng, f, ep := build(t, tp, DefaultConfig(), route.DefaultConfig())
	f.HoldReception(1)
	for i := range 20 {
		ep.send(0, 1, 282, uint64(i))
	}
	eng.RunUntil(10 * des.Millisecond)
	held := f.HeldPackets(1)
	rec := &reholdEP{testEP: ep, f: f, after: 3}
	f.ep = rec
	f.ResumeReception(1)
	if len(ep.got) != 3 || f.HeldPackets(1) != held-3 || !f.ReceptionHeld(1) {
		t.Fatalf("delivered %d, held %d of %d, held=%v: want 3 delivered and the rest held", len(ep.got), f.HeldPackets(1), held, f.ReceptionHeld(1))
	}
	rec.after = -1
	f.ResumeReception(1)
	eng.RunUntil(eng.Now() + 10*des.Millisecond)
	if len(ep.got) != 20 || ep.ooo != 0 {
		t.Fatalf("%d of 20 delivered, %d out of order", len(ep.got), ep.ooo)
	}
}

type reholdEP struct {
	*testEP
	f     *Fabric
	after int
}

func (e *reholdEP) Deliver(h int, p *Packet, at des.Time) {
	e.testEP.Deliver(h, p, at)
	if e.after >= 0 && len(e.got) == e.after {
		e.f.HoldReception(h)
	}
}
