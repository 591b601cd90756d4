package fabric

// Ground truth for deadlock detection under wormhole switching: which of
// the heads waiting for a lane can never move again without recovery.
// Detection (deadlock.go) presumes a message deadlocked from local
// information only, as ref. [10] of paper 001 does; this is what a
// simulator can add and a router cannot: a look at the whole network
// when a detection fires, to count the detection as true or false.
//
// A routed head that waits for a lane (wormhole.allocate found none of its
// candidates free) waits for the packets that hold those lanes: a lane of
// a channel stays taken until the tail of the worm feeding it has left,
// and that worm moves on only when its own head does. So a waiting head
// is deadlocked when every lane it may take is held by a worm whose head
// is itself deadlocked (an OR-wait over its candidates: one holder that
// will move frees it). A lane is held by the worm whose flits are in its
// buffer downstream, or, before its head has crossed, by the worm this
// switch feeds into it; a lane whose tail has crossed stays held until
// that tail leaves the buffer downstream and its credit is back. The
// deadlocked set is the greatest fixed point: start from every waiting
// head and drop, until nothing changes, each one that has a candidate
// lane that is free, empty with its tail's credit on the way back, or
// held by a worm whose head is not in the set (moving, in its routing
// delay, or at its destination: an ejection channel always drains). What stays waits forever: the
// messages of a cycle of waits and those blocked behind one. With an
// acyclic routing function that set is empty, and every detection is
// false.

// whDeadlocked reports, for the waiting heads of the wormhole fabric,
// which ones are deadlocked: a set of packets (by the in-lane index of
// their head) returned in d.dead, true for the deadlocked ones.
func (d *detector) whDeadlocked() {
	f := d.f
	w := f.wh
	if d.dead == nil {
		d.dead = make([]bool, len(w.lanes))
		d.headOf = make(map[*Packet]int32)
	}
	clear(d.dead)
	clear(d.headOf)
	d.heads = d.heads[:0]
	for s := range w.wait {
		for _, li := range w.wait[s] {
			d.heads = append(d.heads, li)
			d.headOf[w.lanes[li].pkt] = li
			d.dead[li] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, li := range d.heads {
			if d.dead[li] && !d.waitsOnDead(li) {
				d.dead[li], changed = false, true
			}
		}
	}
}

// waitsOnDead reports whether every lane the waiting head of in-lane li
// may take is held by a worm whose head is in the deadlocked set.
func (d *detector) waitsOnDead(li int32) bool {
	f := d.f
	w := f.wh
	l := &w.lanes[li]
	p := l.pkt
	ii := li / int32(f.nVL)
	ip := &f.in[ii]
	s := &f.sw[ip.sw]
	if p.recover {
		return false // routed to its local node's ejection channel, which drains
	}
	escOnly := w.inEscape(s, ip, p)
	d.truthCands = f.router.Candidates(s.ID, s.routePort(int(ip.port)), int(p.inVL), int(p.Dst), d.truthCands[:0])
	for _, c := range d.truthCands {
		if escOnly && !f.router.IsEscape(int(c.VL)) {
			continue
		}
		oi := s.out[c.Port]
		if f.in[f.out[oi].down].sw < 0 {
			return false // an ejection channel: its worms drain
		}
		wo := &w.outs[oi]
		var holder *Packet
		switch wo.state[c.VL] {
		case vcFree:
			return false
		case vcBound: // the worm this switch feeds into it
			if from := wo.from[c.VL]; from >= 0 {
				holder = w.lanes[from].pkt
			}
		}
		if down := &w.lanes[int(f.out[oi].down)*f.nVL+int(c.VL)]; down.pkt != nil {
			holder = down.pkt // the worm whose flits fill it downstream (its tail may have passed: draining)
		}
		if holder == nil {
			return false // draining, and its buffer is empty: the tail's credit is on the way
		}
		hl, waiting := d.headOf[holder]
		if !waiting || !d.dead[hl] {
			return false
		}
	}
	return true
}
