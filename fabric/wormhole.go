package fabric

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// Wormhole switching (fabric.switching wormhole), as the routers of paper
// 001 work: a packet is a worm of flits (Config.Flits); every virtual
// channel (lane) of a switch input holds a few flits (fabric.lane_flits)
// of one packet at a time; credits count flits.
//
//   - A lane is owned by one packet from the time its head takes it until
//     its tail has left it. The sender learns that the lane is free when
//     the credit of the tail flit comes back, and only then gives the lane
//     of its channel to another head.
//   - A head that has arrived and been routed (fabric.routing_delay) takes
//     a free lane among its routing candidates (route.Select: adaptive
//     lanes with most credits first, the escape lane last). Heads that find
//     none wait at their switch and try again, first come first served,
//     whenever a lane of that switch frees.
//   - The flits behind a head follow it lane by lane; a packet holds every
//     lane it spans. When the head stops, the flits behind it stop as the
//     lanes fill (paper 001 §3: "the message header stops, preventing also
//     the advance of the remaining flits ... Channel buffers may allow data
//     flits to continue flowing for some time, until they become full").
//   - A physical channel sends one flit per flit time, multiplexed flit by
//     flit in round-robin order among its lanes that have a flit and a
//     credit, so a message sharing a channel with v-1 others advances up to
//     v times slower (paper 001 §3).
//   - Each lane of an input has its own crossbar input (a crossbar with a
//     port per lane): only the physical channels are multiplexed. A flit
//     takes one crossbar flit time (at fabric.crossbar_speedup) before the
//     link, then the link's flit time and the cable's propagation (a NIC
//     has no crossbar: its flits go straight onto the link). A flit
//     chosen at time t leaves its input lane at t (its credit goes back
//     upstream, arriving after the propagation delay: credits travel on a
//     sideband wire, not as packets on the link), and is in the next
//     lane's buffer at t + crossbar + flit time + propagation.
//   - A NIC is a source with every flit at hand: its injection link is a
//     channel like any other, and it starts its next packet (Endpoint Peek
//     and Pop) on a free lane of the link when the lanes already injecting
//     have no credit. Reception drains each flit on arrival and delivers
//     the packet when its tail arrives.
//
// The model is exact at flit level: one event per flit per hop for its
// arrival, one for the link's flit slot and one for its credit. Zero-load
// latency of a packet of L flits over h switches is
// (h+1)(flit time + propagation) + h(routing delay + crossbar flit time)
// + (L-1) flit times (TestWormholePipelineLatency).
type wormhole struct {
	f     *Fabric
	lanes []whLane // per in-port and lane: [in-port*nVL+vl]
	outs  []whOut  // per out-port
	// wait holds, per switch, the lanes (in lanes' index) whose routed head
	// waits for a free lane, in the order they started waiting.
	wait [][]int32
	// flit, xbar: a flit's time on a link and through the crossbar.
	flit, xbar des.Time
	// Flits counts flits sent on links (injection, switch and ejection).
	Flits uint64
	cands []route.Candidate
	room  whRoomer
	// sweeping: a txSweep is scheduled.
	sweeping bool
}

// whLane is one lane of an input buffer (switch input or NIC reception).
type whLane struct {
	pkt    *Packet  // owner, nil when free
	flits  int32    // flits of pkt
	in     int32    // flits of pkt that have arrived
	out    int32    // flits of pkt that have left
	stored int32    // NIC reception held: flits kept with their credits
	headAt des.Time // when the head arrived (Trans-t)
	to     int32    // out-port the head took, -1 before
	toVL   int8
	routed bool // the head's routing delay has passed
	wait   bool // in its switch's wait list
}

// lane states of a channel (whOut.state)
const (
	vcFree     = iota
	vcBound    // fed by a lane of this switch (or the NIC) until the tail leaves
	vcDraining // tail sent; free when its credit returns
)

// whOut is one physical channel's lanes as its sender sees them.
type whOut struct {
	state []uint8
	from  []int32   // vcBound: the in-lane (lanes' index) feeding it; -1 at a NIC
	nic   []*Packet // NIC: the packet being injected on the lane
	sent  []int32   // NIC: its flits sent
	slot  bool      // a flit is on the link (its opWhSlot is pending)
	rr    int       // round-robin position among the lanes
}

// wormhole event kinds (from opArch on: the only architecture wormhole
// runs on, iq, has no events of its own)
const (
	opWhFlit    = opArch + iota // A: in-port, vl; Ref: the packet for a head flit. A flit arrived.
	opWhRoute                   // A: in-port, vl. The head's routing delay passed.
	opWhSlot                    // A: out-port. The link finished a flit.
	opWhCredit                  // A: out-port, vl, blocks: flits; Ref non-nil for the tail's credit.
	opWhTxSweep                 // Trans-t's periodic transmission-time ratio (txSweep).
)

func newWormhole(f *Fabric) *wormhole {
	w := &wormhole{f: f, lanes: make([]whLane, len(f.in)*f.nVL), outs: make([]whOut, len(f.out)),
		wait: make([][]int32, len(f.sw)), flit: f.flitTime(),
		xbar: serTime(int64(f.cfg.Flit()), f.xbarRate)}
	for i := range w.lanes {
		w.lanes[i].to = -1
	}
	for oi := range w.outs {
		o := &w.outs[oi]
		o.state, o.from = make([]uint8, f.nVL), make([]int32, f.nVL)
		if f.out[oi].host >= 0 {
			o.nic, o.sent = make([]*Packet, f.nVL), make([]int32, f.nVL)
		}
	}
	w.room.w = w
	return w
}

// kick: host h may have a packet to inject.
func (w *wormhole) kick(h int) {
	f := w.f
	if f.injp == nil {
		w.try(f.hostOut[h])
		return
	}
	for _, oi := range f.injp.outs[h] {
		w.try(oi)
	}
}

func (w *wormhole) handle(kind int, a int32, vl, n int, ref any) {
	switch kind {
	case opWhFlit:
		var p *Packet
		if ref != nil {
			p = ref.(*Packet)
		}
		w.arrive(a, vl, p)
	case opWhRoute:
		l := &w.lanes[int(a)*w.f.nVL+vl]
		l.routed = true
		w.allocate(int32(int(a)*w.f.nVL + vl))
	case opWhSlot:
		o := &w.f.out[a]
		w.outs[a].slot, o.busy = false, false
		o.epoch++
		w.try(a)
	case opWhCredit:
		w.credit(a, vl, int32(n), ref != nil)
	case opWhTxSweep:
		w.txSweep()
	}
}

// arrive: a flit of lane vl reached in-port ii; p is set for a head.
func (w *wormhole) arrive(ii int32, vl int, p *Packet) {
	f := w.f
	ip := &f.in[ii]
	li := int32(int(ii)*f.nVL + vl)
	l := &w.lanes[li]
	if p != nil {
		*l = whLane{pkt: p, flits: int32(f.cfg.Flits(int(p.Size))), headAt: f.eng.Now(), to: -1}
		p.inVL = int8(vl)
	}
	l.in++
	if ip.sw < 0 {
		w.eject(ii, vl, l)
		return
	}
	switch {
	case p != nil:
		f.eng.After(f.cfg.RoutingDelay, f, packOp(opWhRoute, vl, 0), ii, nil)
	case l.to >= 0:
		w.try(l.to)
	}
}

// eject: a flit reached a NIC, which drains it at once (its credit goes
// back) unless its host holds reception (reception.go), and takes the
// packet when its tail is in.
func (w *wormhole) eject(ii int32, vl int, l *whLane) {
	f := w.f
	h := f.in[ii].host
	held := f.rxHold != nil && f.rxHold[h].on
	if held {
		l.stored++
	} else {
		w.returnCredits(ii, vl, 1, l.in == l.flits) // the tail's credit frees the lane
	}
	if l.in < l.flits {
		return
	}
	p, stored := l.pkt, l.stored
	*l = whLane{to: -1}
	if held {
		p.blocks = stored // its flits here, the tail among them, go back when it is taken
		f.rxHold[h].held.push(p)
		return
	}
	p.blocks = 0
	f.receive(ii, p)
}

// received is receive's wormhole part: a held packet's stored flits go
// back as credits.
func (w *wormhole) received(ii int32, p *Packet) {
	if p.blocks > 0 { // its tail was among them: that credit frees the lane
		w.returnCredits(ii, int(p.VL), p.blocks, true)
		p.blocks = 0
	}
}

// resumed: host h's reception resumed; the flits of packets whose tail has
// not arrived yet go back as credits too.
func (w *wormhole) resumed(h int) {
	ii := w.f.hostIn[h]
	for v := 0; v < w.f.nVL; v++ {
		l := &w.lanes[int(ii)*w.f.nVL+v]
		if l.stored > 0 {
			w.returnCredits(ii, v, l.stored, false)
			l.stored = 0
		}
	}
}

// returnCredits frees n flits of lane vl of in-port ii and sends their
// credits to the channel's sender.
func (w *wormhole) returnCredits(ii int32, vl int, n int32, tail bool) {
	f := w.f
	ip := &f.in[ii]
	ip.lanes[vl].used -= n
	ip.creditsInFlight[vl] += n
	var ref any
	if tail {
		ref = w // any non-nil Ref marks the tail's credit
	}
	f.eng.After(f.prop, f, packOp(opWhCredit, vl, int(n)), ip.up, ref)
}

// credit: credits for n flits of lane vl reached out-port oi; the tail's
// credit frees the lane for another packet.
func (w *wormhole) credit(oi int32, vl int, n int32, tail bool) {
	f := w.f
	o := &f.out[oi]
	o.credits[vl] += n
	f.in[o.down].creditsInFlight[vl] -= n
	o.epoch++
	if tail {
		w.outs[oi].state[vl] = vcFree
		if o.sw >= 0 {
			w.retry(int(o.sw))
		}
	}
	w.try(oi)
}

// allocate gives the routed head of lane li a free lane among its routing
// candidates, or puts it in its switch's wait list.
func (w *wormhole) allocate(li int32) bool {
	f := w.f
	l := &w.lanes[li]
	ii := li / int32(f.nVL)
	ip := &f.in[ii]
	s := &f.sw[ip.sw]
	p := l.pkt
	if p.recover { // presumed deadlocked: out to the local node (deadlock.go)
		w.cands = f.dl.ejectCandidate(s, w.cands)
	} else {
		w.cands = f.router.Candidates(s.ID, s.routePort(int(ip.port)), int(p.inVL), int(p.Dst), w.cands[:0])
	}
	w.room.sw = s
	w.room.escapeOnly = w.inEscape(s, ip, p)
	c := route.Select(w.cands, &w.room)
	w.room.escapeOnly = false
	if c < 0 {
		if !l.wait {
			l.wait = true
			w.wait[ip.sw] = append(w.wait[ip.sw], li)
		}
		return false
	}
	cand := w.cands[c]
	oi := s.out[cand.Port]
	wo := &w.outs[oi]
	wo.state[cand.VL], wo.from[cand.VL] = vcBound, li
	l.to, l.toVL = oi, int8(cand.VL)
	f.granted(p, cand)
	w.try(oi)
	return true
}

// retry lets the waiting heads of switch s try again, in the order they
// started waiting. A head that still finds no lane keeps its place
// (allocate does not queue a head already waiting).
func (w *wormhole) retry(s int) {
	q := w.wait[s]
	kept := q[:0]
	for _, li := range q {
		if w.allocate(li) {
			w.lanes[li].wait = false
		} else {
			kept = append(kept, li)
		}
	}
	w.wait[s] = kept
}

// inEscape reports whether head p at input ip of switch s came from
// another switch on an escape lane. Under wormhole such a packet stays on
// escape lanes to its destination. Virtual cut-through lets it return to
// the adaptive lanes (the escape network's direct dependencies are all
// Duato's condition needs there), but a worm that leaves the escape
// network holds its escape lanes behind it while it moves on adaptive
// lanes and waits for the next escape lane: an indirect dependency between
// escape lanes (Duato's extended channel dependency graph for wormhole),
// and on a torus chains of them close around the rings. Without this rule
// the dateline escape with one adaptive lane deadlocked a 16x16 torus at
// 0.3 of the link (TestWormholeEscapeStays). Heads injected by a host
// enter afresh on any lane, as the router's candidates say.
func (w *wormhole) inEscape(s *Switch, ip *inPort, p *Packet) bool {
	if !w.f.router.IsEscape(int(p.inVL)) {
		return false
	}
	_, fromSwitch := w.f.topo.Peer(s.ID, s.routePort(int(ip.port)))
	return fromSwitch
}

// whRoomer answers route.Select for a head: a lane is available when its
// sender holds it free; its room is its credits (all of them, as a free
// lane's credits have all come back).
type whRoomer struct {
	w    *wormhole
	sw   *Switch
	host int32 // NIC out-port when choosing an injection lane, else -1
	// escapeOnly: the head is on an escape lane and may take only escape
	// lanes (wormhole.inEscape).
	escapeOnly bool
}

func (r *whRoomer) Room(port, vl int32) (bool, int) {
	if r.escapeOnly && !r.w.f.router.IsEscape(int(vl)) {
		return false, 0
	}
	oi := r.host
	if r.sw != nil {
		oi = r.sw.out[port]
	}
	if r.w.outs[oi].state[vl] != vcFree {
		return false, 0
	}
	return true, int(r.w.f.out[oi].credits[vl])
}

// Bubble is never asked: wormholeCheck refuses bubble escape routing.
func (r *whRoomer) Bubble(int32, int32, int) bool { return false }

// try sends the next flit on out-port oi if its link is free: round robin
// among its bound lanes that have a flit and a credit; at a NIC, when
// none has, a new packet on a free lane.
func (w *wormhole) try(oi int32) {
	wo := &w.outs[oi]
	if wo.slot {
		return
	}
	f := w.f
	o := &f.out[oi]
	n := f.nVL
	for k := 0; k < n; k++ {
		v := wo.rr + k
		if v >= n {
			v -= n
		}
		if wo.state[v] != vcBound || o.credits[v] <= 0 {
			continue
		}
		if wo.nic == nil {
			if l := &w.lanes[wo.from[v]]; l.in <= l.out {
				continue
			}
		}
		w.send(oi, v)
		if wo.rr = v + 1; wo.rr == n {
			wo.rr = 0
		}
		return
	}
	if wo.nic != nil {
		w.inject(oi)
	}
}

// inject starts host port oi's next packet on a free lane of its link.
func (w *wormhole) inject(oi int32) {
	f := w.f
	o := &f.out[oi]
	p, reinject := f.nextInjection(o)
	if p == nil {
		return
	}
	w.room.sw, w.room.host = nil, oi
	c := route.Select(f.injCands, &w.room)
	w.room.host = -1
	if c < 0 {
		return // every lane is busy: a tail's credit brings it back here
	}
	vl := int(f.injCands[c].VL)
	now := f.eng.Now()
	switch {
	case reinject: // the source's figures stay the first injection's
		f.dl.reinjected(o, now)
	case f.injp == nil:
		f.ep.Pop(int(o.host), now)
	default:
		f.popHost(o, now)
	}
	if !reinject {
		p.Inject = now
		f.Stats.Injected++
	}
	p.VL = int8(vl)
	p.blocks = int32(f.cfg.Flits(int(p.Size)))
	wo := &w.outs[oi]
	wo.state[vl], wo.from[vl], wo.nic[vl], wo.sent[vl] = vcBound, -1, p, 0
	w.send(oi, vl)
}

// send puts the next flit of lane vl of out-port oi on the link now.
func (w *wormhole) send(oi int32, vl int) {
	f := w.f
	o := &f.out[oi]
	wo := &w.outs[oi]
	now := f.eng.Now()
	o.credits[vl]--
	f.in[o.down].lanes[vl].used++
	wo.slot, o.busy = true, true
	f.eng.After(w.flit, f, packOp(opWhSlot, 0, 0), oi, nil)
	o.busyTime += w.flit
	o.sentBytes += int64(f.cfg.Flit())
	if f.dl != nil {
		f.dl.sent(oi, now+w.flit)
	}
	w.Flits++
	f.progress++
	if f.tt != nil && o.sw >= 0 {
		if !w.sweeping {
			w.sweeping = true
			f.eng.After(txWindowFlits*w.flit, f, packOp(opWhTxSweep, 0, 0), 0, nil)
		}
	}
	if f.lanes != nil {
		f.lanes.record(oi, vl, now, now+w.flit)
	}
	var p *Packet
	var k, flits int32
	if wo.nic != nil {
		p, k = wo.nic[vl], wo.sent[vl]
		flits = p.blocks
		wo.sent[vl]++
	} else {
		li := wo.from[vl]
		l := &w.lanes[li]
		p, k, flits = l.pkt, l.out, l.flits
		l.out++
		ii := li / int32(f.nVL)
		tail := k == flits-1
		w.returnCredits(ii, int(li)-int(ii)*f.nVL, 1, tail)
		if tail {
			if f.tt != nil {
				w.recordTx(oi, o, l, now)
			}
			*l = whLane{to: -1}
		}
	}
	var head any
	if k == 0 {
		head = p
		f.Stats.Transmissions++
	}
	at := w.flit + f.prop
	if wo.nic == nil {
		at += w.xbar // a NIC has no crossbar before its link
	}
	f.eng.After(at, f, packOp(opWhFlit, vl, 0), o.down, head)
	if k == flits-1 {
		wo.state[vl] = vcDraining
		if wo.nic != nil {
			wo.nic[vl] = nil
		}
	}
}

// recordTx is the transmission-time measurement of paper 001 §3 under
// wormhole: when lane l's tail flit is sent on out-port oi at now, the
// time from its head's arrival at this switch to its tail leaving the
// link, over the minimum, the packet's flits times the flit time (Figure
// 1's quantity and the channel's last ratio; the congestion mark comes
// from the periodic txSweep).
func (w *wormhole) recordTx(oi int32, o *outPort, l *whLane, now des.Time) {
	t := w.f.tt
	if o.sw < 0 {
		return
	}
	tailLeave := now + w.xbar + w.flit
	r := float64(tailLeave-l.headAt) / float64(des.Time(l.flits)*w.flit)
	t.ratio[oi] = float32(r)
	t.at[oi] = now
	t.mean.add(now, r)
}

// txWindowFlits is the period of Trans-t's ratio under wormhole, in flit
// times: paper 001 §3, "this ratio is computed periodically, every time
// the time required to transfer a given number of flits (for instance 8
// flits) has elapsed".
const txWindowFlits = 8

// txSweep is the periodic transmission-time ratio of paper 001 §3 under
// wormhole. The actual transmission time is "the elapsed time between the
// arrival of a message header to the node and the transmission of its
// tail flit", the minimum "the product of message size and the time
// required to transfer one flit", and "to make the mechanism independent
// on message length, this ratio is computed periodically". Every
// txWindowFlits flit times, each lane of a switch channel that carries a
// worm has the ratio of the time since the worm's header arrived at this
// switch to the minimum time of the flits it has sent on so far (one, if
// none yet): a worm moving at the link's rate stays near 1, one sharing
// the channel with v-1 others near v, a blocked one grows with the time
// it is blocked. A channel one of whose lanes exceeds u1 is marked
// congested. The tail-time ratio (recordTx) no longer marks: a blocked
// worm's tail may not leave for a long time. The sweep re-arms itself
// while any switch lane carries a worm.
func (w *wormhole) txSweep() {
	f := w.f
	t := f.tt
	now := f.eng.Now()
	busy := false
	for oi := range w.outs {
		wo := &w.outs[oi]
		if f.out[oi].sw < 0 {
			continue
		}
		worst := 0.0
		for vl, st := range wo.state {
			li := wo.from[vl]
			if st != vcBound || li < 0 || w.lanes[li].pkt == nil {
				continue
			}
			busy = true
			l := &w.lanes[li]
			r := float64(now-l.headAt) / float64(des.Time(max(l.out, 1))*w.flit)
			worst = max(worst, r)
		}
		if t.threshold > 0 && worst > t.threshold {
			t.markedAt[oi] = now
		}
	}
	w.sweeping = busy
	if busy {
		f.eng.After(txWindowFlits*w.flit, f, packOp(opWhTxSweep, 0, 0), 0, nil)
	}
}

// occupancy counts the packets whose head flit is in a switch lane.
func (w *wormhole) occupancy() int {
	n := 0
	for i := range w.lanes {
		l := &w.lanes[i]
		if l.pkt != nil && l.out == 0 && w.f.in[i/w.f.nVL].sw >= 0 {
			n++
		}
	}
	return n
}

// fullLanes counts the switch lanes whose buffer is full (credits all
// used), and the switch lanes there are: the full buffers Self-Tuned
// counts (paper 001 §4.2).
func (w *wormhole) fullLanes() (full, total int) {
	f := w.f
	for i := range f.in {
		if f.in[i].sw < 0 {
			continue
		}
		for _, l := range f.in[i].lanes {
			total++
			if l.used >= l.cap {
				full++
			}
		}
	}
	return full, total
}

// blocked describes, for a deadlock report, every head that waits for a
// lane and every lane whose flits wait for credits.
func (w *wormhole) blocked() []string {
	f := w.f
	var out []string
	for s := range w.wait {
		for _, li := range w.wait[s] {
			l := &w.lanes[li]
			ii := li / int32(f.nVL)
			ip := &f.in[ii]
			p := l.pkt
			sw := &f.sw[s]
			cands := f.router.Candidates(s, sw.routePort(int(ip.port)), int(p.inVL), int(p.Dst), nil)
			var waits []string
			for _, c := range cands {
				oi := sw.out[c.Port]
				owner := "draining"
				if w.outs[oi].state[c.VL] == vcBound {
					if from := w.outs[oi].from[c.VL]; from >= 0 && w.lanes[from].pkt != nil {
						owner = fmt.Sprintf("packet %d", w.lanes[from].pkt.ID)
					}
				}
				waits = append(waits, fmt.Sprintf("s%d/p%d/vl%d (held by %s)", s, c.Port, c.VL, owner))
			}
			out = append(out, fmt.Sprintf("s%d in-port %d vl%d: head of packet %d (host %d -> host %d, %d of %d flits here) waits for a lane: %s",
				s, ip.port, p.inVL, p.ID, p.Src, p.Dst, l.in-l.out, l.flits, strings.Join(waits, " or ")))
		}
	}
	return out
}
