package fabric

// Host-driven reception backpressure. A NIC normally drains its reception
// buffer the moment a packet's tail arrives and returns the credits at
// once (arrive). A host whose receive side cannot take more (the daemon's
// TAP writer queue is full) holds its NIC's reception instead: packets
// whose tail arrives stay in the NIC's input buffer with their credit
// blocks, the link into the NIC runs out of credits, and the fabric backs
// up behind it hop by hop as link-level flow control does on any other
// full buffer. Nothing is dropped; the sources eventually stop injecting.
// The hold state is allocated on the first hold, so runs that never hold
// pay one nil check per delivery.

// rxHold is one host's reception hold.
type rxHold struct {
	on   bool
	held fifo // packets whose tail arrived while on, in arrival order
}

// HoldReception stops host h's NIC from draining its reception buffer
// until ResumeReception. Holding a held host does nothing.
func (f *Fabric) HoldReception(h int) {
	if f.rxHold == nil {
		f.rxHold = make([]rxHold, len(f.hostIn))
	}
	if !f.rxHold[h].on {
		f.rxHold[h].on = true
		f.rxHeld++
	}
}

// ReceptionHeld reports whether host h's reception is held.
func (f *Fabric) ReceptionHeld(h int) bool { return f.rxHold != nil && f.rxHold[h].on }

// HeldPackets returns the packets waiting in host h's reception buffer
// because its reception is held.
func (f *Fabric) HeldPackets(h int) int {
	if f.rxHold == nil {
		return 0
	}
	return f.rxHold[h].held.n
}

// ResumeReception lets host h's NIC drain again: the packets it held are
// delivered in arrival order, now, each returning its credits. If a
// delivery holds the host again, the rest stay held.
func (f *Fabric) ResumeReception(h int) {
	if !f.ReceptionHeld(h) {
		return
	}
	r := &f.rxHold[h]
	r.on = false
	f.rxHeld--
	for r.held.n > 0 && !r.on {
		f.receive(f.hostIn[h], r.held.pop())
	}
	if f.wh != nil && !r.on {
		f.wh.resumed(h)
	}
}

// receive drains packet p from NIC in-port i: its credits go back and the
// endpoint gets it.
func (f *Fabric) receive(i int32, p *Packet) {
	if p.recover { // absorbed by the node (deadlock recovery, wormhole)
		f.dl.absorb(i, p)
		return
	}
	if f.wh != nil {
		f.wh.received(i, p)
	} else {
		f.freeInput(i, int(p.VL), p.blocks)
	}
	f.Stats.Delivered++
	f.progress++
	f.ep.Deliver(int(f.in[i].host), p, f.eng.Now())
}
