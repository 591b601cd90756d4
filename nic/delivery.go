package nic

import (
	"fmt"
	"slices"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/reorder"
)

// Packet kinds (fabric.Packet.Kind) of the NIC.
const (
	// KindData is a data packet of a message.
	KindData uint8 = iota
	// KindAck is an <ACK sn> control packet: PSN is sn (paper 004 §3.1).
	KindAck
	// KindNack is a <NACK sn> control packet: PSN is sn (paper 004 §3.1).
	KindNack
)

// End-to-end delivery control of adaptive-inorder (paper 004 §3): one
// connection per (source, destination) pair, created when its first
// message is sent. The source numbers the connection's packets from PSN 0
// (the first number both ends agree on, §3), keeps every packet until it
// is acknowledged, and resends a NACKed packet, as a new fabric packet with
// the same PSN, when its injection policy allows. The destination holds a
// reorder.Receiver per source; it hands packets to the host in order,
// answers every arrival that delivered with one cumulative <ACK sn> and
// every rejected packet with one <NACK sn>. ACKs and NACKs are fabric
// packets: they queue at the destination NIC ahead of its data, and cross
// the fabric back, taking link bandwidth like any other packet.
//
// Injection order. A NIC first sends its control packets, then data from
// its connections in round-robin order, skipping a connection its policy
// holds back; within a connection resends go first (oldest PSN first),
// then new packets in PSN order. Interleaving connections is what paper
// 004 §2 notes spaces the packets of one flow and lowers the chance that
// they overtake each other.
//
// A packet is staged (taken from its connection, its fabric packet made)
// when the fabric first asks for it and stays staged until it is sent;
// only control packets may pass it.
type delivery struct {
	nw     *Network
	space  reorder.Space
	half   uint64
	spec   reorder.MemorySpec
	policy injection.Policy
	cfg    DeliveryConfig
	header int32
	hosts  []dhost

	// Conservation counters (whole run).
	dataInjected, dataArrived uint64
	ackInjected, nackInjected uint64
	ackArrived, nackArrived   uint64
	acksQueued, nacksQueued   uint64
	hostDelivered             uint64
	staleAcks, staleNacks     uint64
	orderViolations           uint64
	resentPackets             uint64
	// Bytes on the wire (whole run): data sent for the first time, data
	// resent, ACKs, NACKs.
	firstBytes, resentBytes, ackBytes, nackBytes int64
	liTime                                       des.Time
	liEntries                                    uint64

	// deliver callback context (set around Receiver.Arrive).
	cbRC      *recvConn
	cbAt      des.Time
	cbDeliver func(reorder.PSN, *fabric.Packet)
}

// dhost is one NIC's connections, both ends.
type dhost struct {
	h      int
	ctrl   pktQueue
	conns  map[int32]*sendConn // by destination
	ready  ring[*sendConn]     // connections that may have a packet to send
	staged *fabric.Packet
	peeked *fabric.Packet
	queued int // data packets waiting at this NIC: never sent, or to resend
	mem    *reorder.Memory
	rx     map[int32]*recvConn // by source
	local  localView
}

// sendEntry is what a source keeps of a packet until it is acknowledged,
// enough to send it again.
type sendEntry struct {
	msg          *Message
	gen          des.Time
	payload      int32
	state        uint8
	rejectedOnce bool
}

const (
	entQueued   = iota // never injected
	entInFlight        // injected, no ACK or NACK back yet
	entRejected        // NACKed, waiting to be resent
)

// sendConn is the source end of a connection. Packets are numbered by an
// unwrapped 64-bit sequence (fabric.Packet.Seq); the PSN is its low
// psn_bits bits.
type sendConn struct {
	dst           int32
	base          uint64 // oldest unacknowledged packet
	next          uint64 // next packet never injected
	ents          ring[sendEntry]
	rejected      []uint64 // waiting to be resent, sorted
	inFlight      int
	inFlightBytes int64
	pol           injection.State
	inReady       bool
	liSince       des.Time
	// lastAck is the timestamp of the newest ACK processed.
	lastAck des.Time
}

// recvConn is the destination end of a connection.
type recvConn struct {
	src        int32
	rx         *reorder.Receiver[*fabric.Packet]
	want       uint64         // next sequence the host must get
	pendingAck *fabric.Packet // an ACK still in the control queue
	meters     *streamMeters  // nil if the stream is not metered
}

func newDelivery(nw *Network, cfg DeliveryConfig) (*delivery, error) {
	cfg = cfg.resolved()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	spec, err := cfg.Memory()
	if err != nil {
		return nil, err
	}
	pol, err := injection.New(cfg.Injection)
	if err != nil {
		return nil, err
	}
	if pol.Kind() == injection.LW && spec.Kind == reorder.Dynamic {
		return nil, fmt.Errorf("nic.delivery.injection.policy lw needs static reorder memory, not %s (paper 004 §4.3)", spec)
	}
	sp := reorder.Space{Bits: cfg.PSNBits}
	d := &delivery{nw: nw, space: sp, half: uint64(sp.Half()), spec: spec, policy: pol, cfg: cfg,
		header: int32(nw.cfg.HeaderBytes), hosts: make([]dhost, len(nw.hosts))}
	for h := range d.hosts {
		dh := &d.hosts[h]
		dh.h = h
		dh.conns = map[int32]*sendConn{}
		dh.rx = map[int32]*recvConn{}
		dh.mem = reorder.NewMemory(spec)
		dh.local = localView{d: d, h: dh}
	}
	d.cbDeliver = d.hostDeliver
	return d, nil
}

func (d *delivery) psn(seq uint64) reorder.PSN { return d.space.Wrap(reorder.PSN(uint32(seq))) }

// send packetizes a message onto its connection.
func (d *delivery) send(m *Message, n int32) {
	dh := &d.hosts[m.Src]
	c := dh.conns[int32(m.Dst)]
	if c == nil {
		c = &sendConn{dst: int32(m.Dst), pol: d.policy.NewConn()}
		dh.conns[int32(m.Dst)] = c
	}
	mtu := int64(d.nw.cfg.MTU)
	left := m.Bytes
	for i := int32(0); i < n; i++ {
		pay := min(left, mtu)
		left -= pay
		c.ents.push(sendEntry{msg: m, gen: m.Gen, payload: int32(pay)})
	}
	dh.queued += int(n)
	d.nw.Queued += int(n)
	d.makeReady(dh, c)
	d.kickData(dh)
}

// kickData tells the fabric that host dh may have data to inject. With a
// packet already staged it is waiting for the link or for credits, and the
// fabric asks again when either frees.
func (d *delivery) kickData(dh *dhost) {
	if dh.staged == nil {
		d.nw.fab.Kick(dh.h)
	}
}

func (d *delivery) makeReady(dh *dhost, c *sendConn) {
	if !c.inReady {
		c.inReady = true
		dh.ready.push(c)
	}
}

// candidate returns the packet connection c would send next.
func (d *delivery) candidate(c *sendConn) (seq uint64, cand injection.Candidate, ok bool) {
	if len(c.rejected) > 0 {
		seq = c.rejected[0]
		cand.Resend = true
		cand.HeadOfLine = seq == c.base
	} else {
		seq = c.next
		if seq-c.base >= uint64(c.ents.size) {
			return 0, cand, false // nothing new
		}
		// Never half the PSN space or more unacknowledged, or the
		// destination could not tell early packets from old ones.
		if seq-c.base >= d.half {
			return 0, cand, false
		}
	}
	cand.Size = int(c.ents.at(int(seq-c.base)).payload + d.header)
	cand.InFlight, cand.InFlightBytes = c.inFlight, c.inFlightBytes
	return seq, cand, true
}

// peek is fabric.Endpoint.Peek in adaptive-inorder.
func (d *delivery) peek(h int) *fabric.Packet {
	dh := &d.hosts[h]
	if p := dh.ctrl.peek(); p != nil {
		dh.peeked = p
		return p
	}
	if dh.staged == nil {
		dh.staged = d.stage(dh)
	}
	dh.peeked = dh.staged
	return dh.staged
}

// stage picks the next data packet, round robin over the connections
// with something to send that their policy lets go.
func (d *delivery) stage(dh *dhost) *fabric.Packet {
	for k, n := 0, dh.ready.size; k < n; k++ {
		c := dh.ready.pop()
		seq, cand, ok := d.candidate(c)
		if !ok {
			c.inReady = false
			continue
		}
		if !c.pol.MayInject(cand, &dh.local) {
			dh.ready.push(c)
			continue
		}
		e := c.ents.at(int(seq - c.base))
		if cand.Resend {
			c.rejected = c.rejected[1:]
			d.resentPackets++
			d.resentBytes += int64(cand.Size)
		} else {
			c.next++
			d.firstBytes += int64(cand.Size)
		}
		e.state = entInFlight
		c.inFlight++
		c.inFlightBytes += int64(cand.Size)
		c.pol.Injected(cand)
		dh.queued--
		d.nw.Queued--
		dh.ready.push(c)
		p := d.nw.fab.NewPacket()
		p.Src, p.Dst = int32(dh.h), c.dst
		p.Kind = KindData
		p.Payload = e.payload
		p.Size = int32(cand.Size)
		p.Gen = e.gen
		p.Seq = seq
		p.PSN = uint32(d.psn(seq))
		p.Ref = e.msg
		return p
	}
	return nil
}

// pop is fabric.Endpoint.Pop in adaptive-inorder.
func (d *delivery) pop(h int) {
	dh := &d.hosts[h]
	p := dh.peeked
	dh.peeked = nil
	if p != nil && p == dh.ctrl.peek() {
		dh.ctrl.pop()
		if p.Kind == KindAck {
			d.ackInjected++
			d.ackBytes += int64(p.Size)
			if rc := dh.rx[p.Dst]; rc != nil && rc.pendingAck == p {
				rc.pendingAck = nil
			}
		} else {
			d.nackInjected++
			d.nackBytes += int64(p.Size)
		}
		return
	}
	dh.staged = nil
	d.dataInjected++
}

// deliver is fabric.Endpoint.Deliver in adaptive-inorder.
func (d *delivery) deliver(h int, p *fabric.Packet, at des.Time) {
	switch p.Kind {
	case KindAck:
		d.ackArrived++
		d.onAck(&d.hosts[h], p)
		d.nw.fab.FreePacket(p)
	case KindNack:
		d.nackArrived++
		d.onNack(&d.hosts[h], p)
		d.nw.fab.FreePacket(p)
	default:
		d.onData(&d.hosts[h], p, at)
	}
}

// onData runs the rearrangement of paper 004 §3.2 on an arriving data packet.
func (d *delivery) onData(dh *dhost, p *fabric.Packet, at des.Time) {
	d.dataArrived++
	rc := dh.rx[p.Src]
	if rc == nil {
		rc = &recvConn{src: p.Src, rx: reorder.NewReceiver[*fabric.Packet](dh.mem, d.space, 0)}
		rc.meters = d.nw.order.get(p)
		dh.rx[p.Src] = rc
	}
	d.nw.order.arriveAt(rc.meters, p, at)
	psn := reorder.PSN(p.PSN)
	d.cbRC, d.cbAt = rc, at
	ack, acked, nacks := rc.rx.Arrive(psn, int(p.Size), p, d.cbDeliver)
	d.cbRC = nil
	// p may have been delivered and freed by now (and even reused by a
	// send the delivery triggered); only psn is used below.
	room, limited := rc.rx.Room()
	roomSeq := uint64(0)
	if limited {
		roomSeq = uint64(max(room, 0)) + 1
	}
	kick := false
	if acked {
		if a := rc.pendingAck; a != nil {
			// A cumulative ACK still waiting in the control queue is
			// superseded by this one: update it in place.
			a.PSN, a.Seq, a.Gen = uint32(ack), roomSeq, at
		} else {
			a := d.ctrlPacket(dh, rc.src, KindAck, ack, roomSeq, at)
			rc.pendingAck = a
			d.acksQueued++
		}
		kick = true
	}
	for _, n := range nacks {
		d.ctrlPacket(dh, rc.src, KindNack, n, roomSeq, at)
		d.nacksQueued++
		kick = true
		if n == psn {
			d.nw.fab.FreePacket(p) // the arriving packet itself was rejected
		}
	}
	if kick {
		d.nw.fab.Kick(dh.h)
	}
}

func (d *delivery) ctrlPacket(dh *dhost, to int32, kind uint8, psn reorder.PSN, roomSeq uint64, at des.Time) *fabric.Packet {
	p := d.nw.fab.NewPacket()
	p.Src, p.Dst, p.Kind = int32(dh.h), to, kind
	if kind == KindAck {
		p.Size = int32(d.cfg.AckBytes)
	} else {
		p.Size = int32(d.cfg.NackBytes)
	}
	p.PSN = uint32(psn)
	p.Seq = roomSeq // control packets: advertised free space + 1, 0 if unknown
	p.Gen = at
	dh.ctrl.push(p)
	return p
}

// hostDeliver hands a packet to the destination host, in order.
func (d *delivery) hostDeliver(_ reorder.PSN, q *fabric.Packet) {
	rc := d.cbRC
	if q.Seq != rc.want {
		d.orderViolations++
	}
	rc.want = q.Seq + 1
	d.hostDelivered++
	rc.meters.releaseAt(q, d.cbAt)
	d.nw.hostDelivered(q, d.cbAt, true)
}

func roomOf(seq uint64) (int64, bool) {
	if seq == 0 {
		return 0, false
	}
	return int64(seq - 1), true
}

// onAck releases every packet up to sn (paper 004 §3.1: "<ACK sn>
// acknowledges that all packets whose sequence number is lower than or
// equal to sn have been correctly delivered").
func (d *delivery) onAck(dh *dhost, p *fabric.Packet) {
	c := dh.conns[p.Src]
	if c == nil {
		d.staleAcks++
		return
	}
	// An ACK older than one already processed acknowledges nothing new:
	// adaptive paths let it arrive late. It is recognised by the
	// destination's timestamp it carries (Gen), not by its PSN, which may
	// have wrapped into the window since (the protection against wrapped
	// sequence numbers of RFC 7323 §5, PAWS).
	if p.Gen < c.lastAck {
		d.staleAcks++
		return
	}
	c.lastAck = p.Gen
	dist := uint64(d.space.Distance(d.psn(c.base), reorder.PSN(p.PSN)))
	if dist >= c.next-c.base {
		d.staleAcks++ // a re-ACK, or one overtaken by a newer ACK
		return
	}
	k := int(dist + 1)
	rej := 0
	for i := 0; i < k; i++ {
		e := c.ents.front()
		size := int64(e.payload + d.header)
		switch e.state {
		case entInFlight:
			c.inFlight--
			c.inFlightBytes -= size
		default:
			d.orderViolations++ // an ACK covering a packet not delivered
		}
		if e.rejectedOnce {
			rej++
		}
		c.ents.pop()
	}
	c.base += uint64(k)
	room, known := roomOf(p.Seq)
	was := c.pol.Limited()
	c.pol.Acked(injection.Ack{Packets: k, Rejected: rej, Room: room, RoomKnown: known, InFlightBytes: c.inFlightBytes})
	d.liChange(c, was)
	d.makeReady(dh, c)
	d.kickData(dh)
}

// onNack marks the packet for resending (paper 004 §3.1).
func (d *delivery) onNack(dh *dhost, p *fabric.Packet) {
	c := dh.conns[p.Src]
	if c == nil {
		d.staleNacks++
		return
	}
	dist := uint64(d.space.Distance(d.psn(c.base), reorder.PSN(p.PSN)))
	if dist >= c.next-c.base || c.ents.at(int(dist)).state != entInFlight {
		d.staleNacks++
		return
	}
	e := c.ents.at(int(dist))
	seq := c.base + dist
	e.state = entRejected
	first := !e.rejectedOnce
	e.rejectedOnce = true
	size := int64(e.payload + d.header)
	c.inFlight--
	c.inFlightBytes -= size
	i, _ := slices.BinarySearch(c.rejected, seq)
	c.rejected = slices.Insert(c.rejected, i, seq)
	dh.queued++
	d.nw.Queued++
	room, known := roomOf(p.Seq)
	was := c.pol.Limited()
	c.pol.Nacked(injection.Nack{First: first, Room: room, RoomKnown: known, InFlightBytes: c.inFlightBytes})
	d.liChange(c, was)
	d.makeReady(dh, c)
	d.kickData(dh)
}

func (d *delivery) liChange(c *sendConn, was bool) {
	now := d.nw.eng.Now()
	switch is := c.pol.Limited(); {
	case is && !was:
		c.liSince = now
		d.liEntries++
	case was && !is:
		d.liTime += now - c.liSince
	}
}

// localView answers injection.Local for one NIC from the fabric's view of
// its injection link. Free switch buffers and channel transmission-time
// ratios (for restrictive injection and Trans-t) are not modelled yet, so
// those answers are unknown.
type localView struct {
	d *delivery
	h *dhost
}

func (l *localView) Now() int64                  { return int64(l.d.nw.eng.Now()) }
func (l *localView) InjectionBusy() (bool, bool) { return l.d.nw.fab.InjectionBusy(l.h.h), true }
func (l *localView) InjectionCredits(vl int) (int, bool) {
	if vl < 0 || vl >= l.d.nw.fab.Router().NumVLs() {
		return 0, false
	}
	return l.d.nw.fab.InjectionCredits(l.h.h, vl), true
}
func (l *localView) FreeBuffers() (int, bool) { return 0, false }
func (l *localView) ChannelRatio(ch int) (float64, bool) {
	r, _, ok := l.d.nw.fab.ChannelRatio(l.h.h, ch)
	return r, ok
}
func (l *localView) QueuedPackets() int { return l.h.queued }
