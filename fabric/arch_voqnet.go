package fabric

import "github.com/fabemu/fabemu/fabric/des"

// voqNetArch is paper 000's VOQnet scheme (§4.3): "the VOQ mechanism at
// the network level ... as many queues as final destinations at every
// input and output port of every switch", the ideal the paper measures the
// others against. A packet joins the queue of its destination host, so
// packets for different hosts never block each other at an input.
// Its cost grows with the network: QueueState reports it (a queue is a
// few words: packets are linked through it and nothing is allocated per
// queue until its head is routed).
//
// As paper 000 §4.1 has it for its VOQ schemes, the queues own their
// memory and flow control works per queue:
//   - "the total memory size per port is equally divided among all the
//     established queues, resulting in a fixed maximum size for each
//     queue": every input and every output queue holds at most the lane's
//     memory divided by the queues per lane (128 KB / 64 = 2 KB on
//     paper000-min64), never less than one largest packet;
//   - the output buffers keep a queue per destination too, and the link
//     serves them round robin, so a destination whose next queue is full
//     does not hold up the others;
//   - "a credit-based flow control at the queue level has been implemented
//     for the VOQ mechanisms ... the maximum number of credits per queue
//     depends on the total memory size at the next input (or output) port,
//     and the total number of queues at this port": a switch output sends
//     a packet only with credits of the destination's queue at the next
//     switch's input, and the crossbar moves a packet into an output queue
//     only while that queue has room (the internal flow control).
//
// The lane's credits and memory accounting stay in force underneath (the
// queue shares add up to the lane's memory). A queue's credit returns
// when the packet's tail has left the downstream input, one credit packet
// and one cable's delay later; it rides in the lane's credit packets, so
// it costs no link bandwidth of its own. The NICs keep the fabric's one
// injection queue and lane credits (their first switch's input queues are
// not limited per queue).
type voqNetArch struct {
	schemeBase
	// Per global out-port, set up at the first packet (the ports are built
	// after the architecture): qcr are the credits (blocks) of each queue
	// of the downstream input, nil where it is a NIC; qused the blocks
	// stored in each output queue; sending the output queue of the packet
	// on the link; active the output queues holding packets, in
	// round-robin order (a queue that sends goes to the back), so that the
	// link looks only at queues with packets.
	qcr     [][]int32
	qused   [][]int32
	sending []int32
	active  [][]int32
	// inShare and outShare are the blocks one queue may hold, per lane.
	inShare, outShare []int32
	creditDelay       des.Time
}

// opQueueCredit: A: out-port; blocks field: queue<<8 | blocks. A queue
// credit reached the upstream end of the channel.
const opQueueCredit = opArch + 1

// voqNetPerLane: a queue per destination host.
func voqNetPerLane(_, hosts int) int { return max(1, hosts) }

func newVOQnet(f *Fabric) switchArch {
	return &voqNetArch{schemeBase: schemeBase{cioqArch{vlQueues{f}}, voqNetPerLane(0, f.topo.NumHosts())}}
}

// setup sizes the per-queue state once the ports exist.
func (a *voqNetArch) setup() {
	if a.qused != nil {
		return
	}
	f := a.f
	nq := f.nVL * a.perLane
	minBlocks := f.blocks(f.maxPacket)
	share := func(capBlocks int32) int32 { return max(capBlocks/int32(a.perLane), minBlocks) }
	a.qcr = make([][]int32, len(f.out))
	a.qused = make([][]int32, len(f.out))
	a.sending = make([]int32, len(f.out))
	a.active = make([][]int32, len(f.out))
	a.inShare = make([]int32, f.nVL)
	a.outShare = make([]int32, f.nVL)
	a.creditDelay = f.prop + serTime(int64(f.cfg.CreditPacket), f.dataRate)
	for oi := range f.out {
		o := &f.out[oi]
		if o.sw < 0 {
			continue
		}
		o.outq = make([]fifo, nq) // a queue per lane and destination
		a.qused[oi] = make([]int32, nq)
		for v := range o.lanes {
			a.outShare[v] = share(o.lanes[v].cap)
		}
		if di := o.down; f.in[di].sw >= 0 {
			c := make([]int32, nq)
			for k := range c {
				a.inShare[k/a.perLane] = share(f.in[di].lanes[k/a.perLane].cap)
				c[k] = a.inShare[k/a.perLane]
			}
			a.qcr[oi] = c
		}
	}
}

func (a *voqNetArch) enqueue(_ *inPort, p *Packet) int {
	a.setup()
	return a.laneQueue(p.VL, int(p.Dst))
}

func (a *voqNetArch) outIndex(o *outPort) int32 { return a.f.sw[o.sw].out[o.port] }

// room adds the output queue's share to cioq's check: the crossbar moves
// the head being allocated (roomer.pkt) only into an output queue with
// room for it. blocks may ask for more than the packet (bubble flow
// control wants room for two packets in the lane, paper 002 §3): the lane
// answers that, the queue only for the packet itself.
func (a *voqNetArch) room(o *outPort, vl, blocks int32) (bool, int) {
	ok, free := a.cioqArch.room(o, vl, blocks)
	p := a.f.room.pkt
	if !ok || p == nil {
		return ok, free
	}
	a.setup()
	k := a.laneQueue(int8(vl), int(p.Dst))
	if a.qused[a.outIndex(o)][k]+p.blocks > a.outShare[vl] {
		return false, 0
	}
	return ok, free
}

// forward is cioq's, into the destination's output queue, and returns the
// queue credit of the input the packet leaves to the output that sent it.
func (a *voqNetArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	a.setup()
	o := &f.out[oi]
	now := f.eng.Now()
	blocks := p.blocks
	end := max(now+serTime(int64(p.Size), f.xbarRate), p.tailAt)
	k := a.laneQueue(int8(vl), int(p.Dst))
	o.xbar = true
	o.lanes[vl].used += blocks
	a.qused[oi][k] += blocks
	if o.outq[k].n == 0 {
		a.active[oi] = append(a.active[oi], int32(k))
	}
	o.outq[k].push(p)
	if up := f.in[ii].up; a.qcr[up] != nil {
		qi := a.laneQueue(p.inVL, int(p.Dst))
		f.eng.Schedule(end+a.creditDelay, f, packOp(opQueueCredit, 0, qi<<8|int(blocks)), up, nil)
	}
	f.crossed(ii, oi, p, blocks, end)
}

// next sends the head of the first output queue, in round-robin order,
// that has both the lane's credits and its queue's credits at the next
// switch; that queue goes to the back of the order.
func (a *voqNetArch) next(oi int32, o *outPort, start des.Time) {
	f := a.f
	a.setup()
	qcr := a.qcr[oi]
	act := a.active[oi]
	waitLane := false
	for j, k := range act {
		p := o.outq[k].head
		v := int(k) / a.perLane
		laneOK := o.credits[v] >= p.blocks
		if laneOK && (qcr == nil || qcr[k] >= p.blocks) {
			o.outq[k].pop()
			if qcr != nil {
				qcr[k] -= p.blocks
			}
			copy(act[j:], act[j+1:])
			act = act[:len(act)-1]
			if o.outq[k].n > 0 {
				act = append(act, k)
			}
			a.active[oi] = act
			a.sending[oi] = k
			f.send(oi, p, v, start)
			return
		}
		waitLane = waitLane || !laneOK
	}
	if waitLane {
		f.wakeForCredits(oi, o)
	}
}

// linkDone: the packet's tail has left its output queue.
func (a *voqNetArch) linkDone(o *outPort, vl int, blocks int32) {
	oi := a.outIndex(o)
	a.qused[oi][a.sending[oi]] -= blocks
	a.cioqArch.linkDone(o, vl, blocks)
}

// handle: a queue credit arrived (opQueueCredit), or a cut-through packet
// left its output queue with its crossbar transfer (opCutThrough).
func (a *voqNetArch) handle(kind int, ai int32, vl, rest int, ref any) {
	f := a.f
	switch kind {
	case opQueueCredit:
		a.qcr[ai][rest>>8] += int32(rest & 255)
		f.out[ai].epoch++
		f.transmit(ai)
		return
	case opCutThrough:
		oi := f.in[ai].xbarTo
		a.qused[oi][a.sending[oi]] -= int32(rest >> 4)
	}
	a.cioqArch.handle(kind, ai, vl, rest, ref)
}
