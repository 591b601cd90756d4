package fabric

import (
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// RECN at the network interfaces (paper 000 §4.1): "a variable number of
// injection queues, following the same scheme used at switch output
// ports. So, SAQs can be dynamically allocated at the output side of
// network interfaces". With fabric.recn.nic_saqs > 0 every host's
// injection port is such an output side, owned by the recn architecture
// (it is the fabric's injector), so that the nic package needs to know
// nothing of RECN:
//   - Notification: an input SAQ of the first switch past its
//     notification threshold notifies the host's injection port over the
//     reverse channel, as it notifies an upstream switch; the port
//     allocates a SAQ for the path (the turns from the first switch on),
//     or refuses with the token when all are in use. A NIC SAQ notifies no
//     further: the host is the leaf, it owns the token.
//   - Setting aside: when the link is free the port looks at the NIC's
//     head packet (Endpoint.Peek); while the head's path matches a SAQ
//     (longest prefix, §3.6) the port takes it (Endpoint.Pop) into that
//     SAQ, if the NIC SAQ memory (nic_saq_memory) has room for it, and
//     looks at the next. A head that does not fit waits at the head of
//     the NIC's queue: the NIC's queue holds everything else in order.
//   - Injection: round robin among all the queues, the NIC's head (the
//     normal queue) and the SAQs that are enabled and not stopped by Xoff
//     (§4.1: "a round robin scheme among all the queues"), each only with
//     credits for it (credits per port and lane, shared by all queues,
//     §3.7).
//   - Order: a flow's packets all have one path, so they go to one SAQ or
//     stay in the NIC's queue. A packet is set aside only from the head of
//     the NIC's queue, so every packet of its flow taken before it has
//     been sent or set aside; a new SAQ is blocked by a marker behind the
//     last packet of each SAQ whose path is a prefix of its own (§3.8) and
//     enabled when those have left. Nothing of the NIC's queue is ever
//     ahead of a set-aside packet of the same flow.
//   - Deallocation (§3.5): an empty enabled NIC SAQ is freed and its token
//     goes to the first switch's input SAQ; one that took no packet is
//     freed after the idle time, as at the switches.
//
// Packets set aside count as injected (Stats.Injected: the fabric took
// them from the NIC) and so as in the fabric; their Inject time is when
// they start on the link.

// nicStage is the NIC-side state of one host's injection port besides its
// SAQs (which live in recnArch.out of the injection out-port).
type nicStage struct {
	held int32 // blocks held in the NIC's SAQs
	rr   int   // round robin: SAQ index, or len(saqs) for the NIC's queue
	full bool  // the head is waiting for NIC SAQ memory (counted once per wait)
}

// setAside takes head, the head of host h's NIC queue, into SAQ s when
// the NIC SAQ memory (mem blocks) has room for it, and reports whether it
// did; full is true when it did not fit and this is the first time the
// head waits for memory (the caller counts it once per wait). The same
// for recn's and recn-iq's NIC SAQs: a packet leaves the NIC's queue only
// from its head, so its flow stays in order.
func (f *Fabric) setAside(h int, ns *nicStage, s *saq, head *Packet, mem int32, start des.Time) (taken, full bool) {
	b := f.blocks(head.Size)
	if ns.held+b > mem {
		full = !ns.full
		ns.full = true
		return false, full
	}
	ns.full = false
	f.ep.Pop(h, start)
	f.Stats.Injected++
	head.blocks = b
	s.q.push(head)
	s.blocks += b
	s.used = true
	ns.held += b
	return true, false
}

// serveNIC sends the next packet of host injection port oi, whose link is
// free from start on: round robin from ns.rr among the SAQs (slots 0 to
// len(saqs)-1) that are active, not gated (markers, Xoff) and hold a
// packet the link's credits cover, and the NIC's own queue (slot
// len(saqs)) when headFree and routing finds its head a lane with room
// (paper 000 §4.1: "a round robin scheme among all the queues"; credits
// per port and lane are shared by all of them, §3.7). It returns the SAQ
// slot the packet left and the packet, -1 and the packet for the NIC's
// queue, or -2 and nil when nothing could go (then it has asked to be
// woken when credits return).
func (f *Fabric) serveNIC(oi int32, o *outPort, ns *nicStage, saqs []saq, head *Packet, headFree bool, start des.Time) (int, *Packet) {
	n := len(saqs)
	waits := false
	for j, pos := 0, ns.rr; j <= n; j++ {
		if pos < n {
			s := &saqs[pos]
			if s.active && !s.gated() && s.q.head != nil {
				p := s.q.head
				if o.credits[s.vl] >= p.blocks {
					s.q.pop()
					s.blocks -= p.blocks
					ns.held -= p.blocks
					ns.rr = pos + 1
					p.Inject, p.tailAt = start, start
					f.send(oi, p, int(s.vl), start)
					return pos, p
				}
				waits = true
			}
		} else if headFree {
			head.blocks = f.blocks(head.Size)
			f.room.sw, f.room.blocks = nil, head.blocks
			f.room.host = o
			c := route.Select(f.injCands, &f.room)
			f.room.host = nil
			if c >= 0 {
				ns.rr = 0
				f.ep.Pop(int(o.host), start)
				f.Stats.Injected++
				head.Inject, head.tailAt = start, start
				f.send(oi, head, int(f.injCands[c].VL), start)
				return -1, head
			}
			waits = true
		}
		if pos++; pos > n {
			pos = 0
		}
	}
	if waits {
		f.wakeForCredits(oi, o)
	}
	return -2, nil
}

// hostTurns returns the path from the first switch of a packet host h
// injects for dst: the turns the first switch's CAM looks up.
func (a *recnArch) hostTurns(o *outPort, vl int32, dst int32) string {
	d := &a.f.in[o.down]
	return a.turns(int(d.sw), int(d.port), int(vl), int(dst))
}

// inject runs host injection port oi, whose link is free from start on.
func (a *recnArch) inject(oi int32, o *outPort, start des.Time) {
	a.setup()
	f := a.f
	h := int(o.host)
	rp := &a.out[oi]
	ns := &a.nics[h]
	// Deterministic routing injects on the escape lane only (recn refuses
	// adaptive routing): the lane of every SAQ here.
	vl := f.injCands[len(f.injCands)-1].VL
	head := f.ep.Peek(h)
	headFree := head != nil // the head may go from the NIC's queue
	for head != nil && rp.inUse > 0 {
		k := longestMatch(rp.saqs, int8(vl), a.hostTurns(o, vl, head.Dst))
		if k < 0 {
			break
		}
		taken, full := f.setAside(h, ns, &rp.saqs[k], head, a.nicMem, start)
		if full {
			a.stats.NICMemoryFull++
		}
		if !taken {
			headFree = false
			break
		}
		a.stats.NICSetAside++
		a.stats.MaxNICSAQBytes = max(a.stats.MaxNICSAQBytes, int64(ns.held)*int64(f.blockBytes))
		head = f.ep.Peek(h)
		headFree = head != nil
	}
	if k, p := f.serveNIC(oi, o, ns, rp.saqs, head, headFree, start); k >= 0 {
		a.nicLeft(oi, p, k)
	}
}

// nicLeft: packet p left SAQ k of host port oi for the link.
func (a *recnArch) nicLeft(oi int32, p *Packet, k int) {
	rp := &a.out[oi]
	rp.passMarkers(p, func(j int) { a.maybeFreeOutput(oi, j) })
	a.maybeFreeOutput(oi, k)
}

// nicNotify: the first switch's input SAQ for (vl, path) notified host
// port oi (§3.4, §4.1). The port allocates a SAQ, blocked behind markers
// in the SAQs whose paths are prefixes of path (§3.8), or returns the
// token when it has one for the path already or none free.
func (a *recnArch) nicNotify(oi int32, vl int8, path string) {
	rp := &a.out[oi]
	if findExact(rp.saqs, vl, path) >= 0 {
		a.sendDown(oi, ctlToken, vl, path)
		return
	}
	k := a.allocate(rp, vl, path, a.f.out[oi].down, -1)
	if k < 0 {
		a.stats.Exhausted++
		a.stats.ExhaustedNIC++
		a.sendDown(oi, ctlToken, vl, path)
		return
	}
	a.stats.MaxSAQsPerNIC = max(a.stats.MaxSAQsPerNIC, rp.inUse)
	a.note("alloc-nic", oi, k, 0)
	s := &rp.saqs[k]
	for j := range rp.saqs {
		x := &rp.saqs[j]
		if j != k && x.active && x.vl == vl && strings.HasPrefix(path, x.path) && x.q.tail != nil {
			rp.markers = append(rp.markers, marker{x.q.tail, k})
			s.markers++
		}
	}
	a.stats.Markers += uint64(s.markers)
}
