package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
)

// Memory policies of the VOQ schemes (fabric.voq_memory), paper 000 §4.1:
// "When VOQ policies are used, the total memory size per port is equally
// divided among all the established queues, resulting in a fixed maximum
// size for each queue" and "a credit-based flow control at the queue
// level has been implemented for the VOQ mechanisms. In these cases, the
// maximum number of credits per queue depends on the total memory size
// at the next input (or output) port, and the total number of queues at
// this port."
const (
	// VOQShared: the queues of an input share the lane's memory and the
	// lane's credits (paper 000 §3.7's port-level credits).
	VOQShared = "shared"
	// VOQPartitioned: every queue owns an equal share of the port memory
	// and has credits of its own (paper 000 §4.1).
	VOQPartitioned = "partitioned"
)

// voqMemoryArchs are the architectures fabric.voq_memory applies to, with
// the policy each takes when it is not named: voqnet is the paper's ideal
// and was always partitioned; voqsw and 4q share by default so that runs
// of other papers keep their numbers.
var voqMemoryArchs = map[string]string{"voqnet": VOQPartitioned, "voqsw": VOQShared, "4q": VOQShared}

// voqMemory resolves fabric.voq_memory for the configured architecture.
// The other architectures ignore it (a preset names it for the VOQ rows
// of its experiments; recn and the RECN-IQ family keep their own memory
// policy, paper 000 §4.1: "the memory associated with a port is shared by
// all the queues").
func voqMemory(c Config) (string, error) {
	def, ok := voqMemoryArchs[c.Switch]
	switch {
	case c.VOQMemory == "":
		if ok {
			return def, nil
		}
		return VOQShared, nil
	case c.VOQMemory != VOQShared && c.VOQMemory != VOQPartitioned:
		return "", fmt.Errorf("fabric.voq_memory %q: want shared or partitioned", c.VOQMemory)
	case !ok:
		return VOQShared, nil // the policy of the VOQ schemes only
	}
	return c.VOQMemory, nil
}

// partitioned reports whether f's VOQ scheme has partitioned memory
// (Validate has checked fabric.voq_memory).
func partitioned(f *Fabric) bool {
	m, _ := voqMemory(f.cfg)
	return m == VOQPartitioned
}

// A voqKeys is what a queue scheme decides under partitioned memory:
// which of a lane's queues a packet joins. Queue k of an output holds the
// packets bound for queue k of the next switch's input, so the key the
// upstream output picks fixes both (as virtual channels do). A host's
// injection port is such an output when its NIC keys its injection
// queues by them (Fabric.KeyInjectionQueues, hostSend); otherwise the
// input a host feeds picks at arrival.
type voqKeys interface {
	// arrive is the queue (of the lane) a packet arriving at input ip
	// from a host whose NIC does not key its queues joins.
	arrive(ip *inPort, p *Packet) int
	// outKey is the queue (of lane vl) packet p takes at output oi and,
	// when a switch is downstream, at that switch's input. It must not
	// change state: the allocator asks (room) before it grants.
	outKey(oi int32, p *Packet, vl int) int
	// forwarded: p left input ii for queue k of output oi; ii is -1 when
	// oi is a host's injection port (the packet was sent from the NIC).
	forwarded(ii, oi int32, p *Packet, vl, k int)
	// hostKey is hostKeyer's (inject_queues.go).
	hostKey(oi int32, p *Packet, vl int, nicLoad func(k int) int) int
}

// voqPartArch is a queue scheme of paper 000 with partitioned memory
// (fabric.voq_memory=partitioned): the CIOQ switch whose input and output
// ports keep the scheme's queues (a queue per destination for voqnet, per
// output of the next switch for voqsw, four for 4q), each with a fixed
// share of the port's lane memory, and credits per queue on every link
// between switches:
//   - every input and every output queue holds at most the lane's memory
//     divided by the queues per lane (128 KB / 64 = 2 KB for voqnet on
//     paper000-min64), never less than one largest packet;
//   - the link serves an output's queues round robin, so a queue whose
//     next-switch queue is full does not hold up the others;
//   - a switch output sends a packet only with credits of its queue at
//     the next switch's input, and the crossbar moves a packet into an
//     output queue only while that queue has room (the internal flow
//     control, §4.1: "a similar flow control scheme has been implemented
//     for the internal switch (input-output) packet forwarding").
//
// The lane's credits and memory accounting stay in force underneath (the
// queue shares add up to the lane's memory). A queue's credit returns
// when the packet's tail has left the downstream input, one credit packet
// and one cable's delay later; it rides in the lane's credit packets, so
// it costs no link bandwidth of its own. The hosts' injection links keep
// lane credits, unless the NICs key their injection queues by the first
// switch's queues (Fabric.KeyInjectionQueues, the admittance end node):
// a host's injection port is then the output upstream of its first
// switch's input and sends into a queue there only with that queue's
// credits (inject_queues.go). A NIC with one FIFO (nic.model fifo) sends
// on the lane's credits and its packet joins the queue the scheme picks
// at arrival, so the first switch's queues are not limited per queue for
// it.
type voqPartArch struct {
	schemeBase
	keys voqKeys
	// Per global out-port, set up at the first packet (the ports are built
	// after the architecture): qcr are the credits (blocks) of each queue
	// of the downstream input, nil where it is a NIC; qheld the blocks
	// sent into each downstream queue and not yet out of it; qback the
	// credits on their way back; qused the blocks stored in each output
	// queue; sending the output queue of the packet on the link; active
	// the output queues holding packets, in round-robin order (a queue
	// that sends goes to the back), so that the link looks only at queues
	// with packets. For every queue k, qcr + qheld + qback is the queue's
	// share (CheckInvariants).
	qcr, qheld, qback, qused [][]int32
	sending                  []int32
	active                   [][]int32
	// inShare and outShare are the blocks one queue may hold, per lane.
	inShare, outShare []int32
	creditDelay       des.Time
}

// opQueueCredit: A: out-port; blocks field: queue<<8 | blocks. A queue
// credit reached the upstream end of the channel.
const opQueueCredit = opArch + 1

func newVOQPart(f *Fabric, perLane int, keys voqKeys) *voqPartArch {
	return &voqPartArch{schemeBase: schemeBase{cioqArch{vlQueues{f}}, perLane}, keys: keys}
}

// setup sizes the per-queue state once the ports exist.
func (a *voqPartArch) setup() {
	if a.qused != nil {
		return
	}
	f := a.f
	nq := f.nVL * a.perLane
	minBlocks := f.blocks(f.maxPacket)
	share := func(capBlocks int32) int32 { return max(capBlocks/int32(a.perLane), minBlocks) }
	a.qcr = make([][]int32, len(f.out))
	a.qheld = make([][]int32, len(f.out))
	a.qback = make([][]int32, len(f.out))
	a.qused = make([][]int32, len(f.out))
	a.sending = make([]int32, len(f.out))
	a.active = make([][]int32, len(f.out))
	a.inShare = make([]int32, f.nVL)
	a.outShare = make([]int32, f.nVL)
	a.creditDelay = f.prop + serTime(int64(f.cfg.CreditPacket), f.dataRate)
	for oi := range f.out {
		o := &f.out[oi]
		if o.sw >= 0 {
			o.outq = make([]fifo, nq) // a queue per lane and key
			a.qused[oi] = make([]int32, nq)
			for v := range o.lanes {
				a.outShare[v] = share(o.lanes[v].cap)
			}
		}
		if di := o.down; f.in[di].sw >= 0 && (o.sw >= 0 || f.keyedInjection) {
			c := make([]int32, nq)
			for k := range c {
				a.inShare[k/a.perLane] = share(f.in[di].lanes[k/a.perLane].cap)
				c[k] = a.inShare[k/a.perLane]
			}
			a.qcr[oi] = c
			a.qheld[oi] = make([]int32, nq)
			a.qback[oi] = make([]int32, nq)
		}
	}
}

// enqueue: a packet joins the queue its upstream output (a switch's, or
// a keyed host's injection port, hostSend) picked: the one whose credits
// it used; one from a host without queue credits the queue the scheme
// picks at arrival.
func (a *voqPartArch) enqueue(ip *inPort, p *Packet) int {
	a.setup()
	if a.qcr[ip.up] == nil {
		p.voq = int32(a.laneQueue(p.VL, a.keys.arrive(ip, p)))
	}
	return int(p.voq)
}

func (a *voqPartArch) outIndex(o *outPort) int32 { return a.f.sw[o.sw].out[o.port] }

// outQueue is the output queue (lane and key) p takes at output oi. room
// and forward ask in the same allocation, when nothing has entered oi
// since, so both get the same answer.
func (a *voqPartArch) outQueue(oi int32, p *Packet, vl int) int {
	return a.laneQueue(int8(vl), a.keys.outKey(oi, p, vl))
}

// room adds the output queue's share to cioq's check: the crossbar moves
// the head being allocated (roomer.pkt) only into an output queue with
// room for it. blocks may ask for more than the packet (bubble flow
// control wants room for two packets in the lane, paper 002 §3): the lane
// answers that, the queue only for the packet itself.
func (a *voqPartArch) room(o *outPort, vl, blocks int32) (bool, int) {
	ok, free := a.cioqArch.room(o, vl, blocks)
	p := a.f.room.pkt
	if !ok || p == nil {
		return ok, free
	}
	a.setup()
	oi := a.outIndex(o)
	if a.qused[oi][a.outQueue(oi, p, int(vl))]+p.blocks > a.outShare[vl] {
		return false, 0
	}
	return ok, free
}

// forward is cioq's, into the packet's output queue, and returns the
// queue credit of the input the packet leaves to the output that sent it.
func (a *voqPartArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	a.setup()
	o := &f.out[oi]
	now := f.eng.Now()
	blocks := p.blocks
	end := max(now+serTime(int64(p.Size), f.xbarRate), p.tailAt)
	k := a.outQueue(oi, p, vl)
	o.xbar = true
	o.lanes[vl].used += blocks
	a.qused[oi][k] += blocks
	if o.outq[k].n == 0 {
		a.active[oi] = append(a.active[oi], int32(k))
	}
	o.outq[k].push(p)
	if up := f.in[ii].up; a.qcr[up] != nil {
		qi := p.voq
		a.qheld[up][qi] -= blocks
		a.qback[up][qi] += blocks
		f.eng.Schedule(end+a.creditDelay, f, packOp(opQueueCredit, 0, int(qi)<<8|int(blocks)), up, nil)
	}
	a.keys.forwarded(ii, oi, p, vl, k-vl*a.perLane)
	p.voq = int32(k)
	f.crossed(ii, oi, p, blocks, end)
}

// next sends the head of the first output queue, in round-robin order,
// that has both the lane's credits and its queue's credits at the next
// switch; that queue goes to the back of the order.
func (a *voqPartArch) next(oi int32, o *outPort, start des.Time) {
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
				a.qheld[oi][k] += p.blocks
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
func (a *voqPartArch) linkDone(o *outPort, vl int, blocks int32) {
	oi := a.outIndex(o)
	a.qused[oi][a.sending[oi]] -= blocks
	a.cioqArch.linkDone(o, vl, blocks)
}

// handle: a queue credit arrived (opQueueCredit), or a cut-through packet
// left its output queue with its crossbar transfer (opCutThrough).
func (a *voqPartArch) handle(kind int, ai int32, vl, rest int, ref any) {
	f := a.f
	switch kind {
	case opQueueCredit:
		k, b := rest>>8, int32(rest&255)
		a.qback[ai][k] -= b
		a.qcr[ai][k] += b
		f.out[ai].epoch++
		f.transmit(ai)
		return
	case opCutThrough:
		oi := f.in[ai].xbarTo
		a.qused[oi][a.sending[oi]] -= int32(rest >> 4)
	}
	a.cioqArch.handle(kind, ai, vl, rest, ref)
}

// waitsFor adds the queue shares to cioq's answer.
func (a *voqPartArch) waitsFor(o *outPort, vl int, need int32) string {
	return a.cioqArch.waitsFor(o, vl, need) + fmt.Sprintf(", queue share %d blocks (fabric.voq_memory=partitioned)", a.outShare[vl])
}

// checkQueues is the queue-level part of CheckInvariants: for every link
// between switches and every queue, credits + blocks held downstream +
// credits on their way back = the queue's share, none negative, and no
// input or output queue beyond its share.
func (a *voqPartArch) checkQueues(bad func(format string, args ...any)) {
	if a.qused == nil {
		return
	}
	f := a.f
	for oi := range f.out {
		if a.qused[oi] != nil {
			for k, u := range a.qused[oi] {
				if u < 0 || u > a.outShare[k/a.perLane] {
					bad("%s queue %d holds %d blocks, share %d", f.outName(int32(oi)), k, u, a.outShare[k/a.perLane])
				}
			}
		}
		if a.qcr[oi] == nil {
			continue
		}
		ip := &f.in[f.out[oi].down]
		for k := range ip.queues {
			var b int32
			for p := ip.queues[k].head; p != nil; p = p.next {
				b += p.blocks
			}
			if b > a.inShare[k/a.perLane] {
				bad("input queue %d behind %s holds %d blocks, share %d", k, f.outName(int32(oi)), b, a.inShare[k/a.perLane])
			}
		}
		for k, c := range a.qcr[oi] {
			share := a.inShare[k/a.perLane]
			if c < 0 || a.qheld[oi][k] < 0 || a.qback[oi][k] < 0 {
				bad("%s queue %d: credits %d, held %d, returning %d (negative)", f.outName(int32(oi)), k, c, a.qheld[oi][k], a.qback[oi][k])
			}
			if sum := c + a.qheld[oi][k] + a.qback[oi][k]; sum != share {
				bad("%s queue %d: credits %d + held %d + returning %d = %d, share %d", f.outName(int32(oi)), k, c, a.qheld[oi][k], a.qback[oi][k], sum, share)
			}
		}
	}
}

func (a *voqPartArch) hostQueues() int { return a.perLane }

func (a *voqPartArch) hostKey(oi int32, p *Packet, vl int, nicLoad func(k int) int) int {
	a.setup()
	return a.keys.hostKey(oi, p, vl, nicLoad)
}

// hostQueue is the queue (lane and key) p takes at the input behind host
// port oi: the one its NIC chose, else the scheme's pick.
func (a *voqPartArch) hostQueue(oi int32, p *Packet, vl int) int {
	if p.FirstQueue > 0 {
		return a.laneQueue(int8(vl), int(p.FirstQueue-1))
	}
	return a.outQueue(oi, p, vl)
}

// hostRoom: p's queue at the first switch has credits for it.
func (a *voqPartArch) hostRoom(oi int32, p *Packet, vl int) bool {
	a.setup()
	c := a.qcr[oi]
	return c == nil || c[a.hostQueue(oi, p, vl)] >= p.blocks
}

// hostSend takes p's queue credits; p joins that queue at the first
// switch (enqueue).
func (a *voqPartArch) hostSend(oi int32, p *Packet, vl int) {
	a.setup()
	if a.qcr[oi] == nil {
		return
	}
	k := a.hostQueue(oi, p, vl)
	a.qcr[oi][k] -= p.blocks
	a.qheld[oi][k] += p.blocks
	p.voq = int32(k)
	a.keys.forwarded(-1, oi, p, vl, k-vl*a.perLane)
}
