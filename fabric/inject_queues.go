package fabric

import "github.com/fabemu/fabemu/fabric/route"

// Injection queues that follow the first switch's input queues (paper 000
// §4.1: "a variable number of injection queues, following the same
// scheme used at switch output ports ... The injection of packets from
// injection queues to the network is also controlled by an arbiter that
// selects the next packet to be transmitted, using a round robin scheme
// among all the queues"). A host's NIC is the output port upstream of its
// first switch's input, so its injection queues are keyed as a switch
// output's queues are under the same scheme: by the queue the packet
// will join at the next input. The fabric names that queue
// (InjectionQueue), honours the NIC's choice (Packet.FirstQueue), and
// says whether a packet could start now (InjectionReady): the link's
// lane credits and, with partitioned VOQ memory, the credits of its
// queue at the first switch. The NIC keeps the queues and the round robin
// (nic/admittance.go).

// hostKeyer is implemented by the queue schemes whose inputs keep
// several queues per lane (voqnet, voqsw, 4q, either memory policy).
type hostKeyer interface {
	// hostQueues is the queues per lane of a switch input.
	hostQueues() int
	// hostKey is the queue (within lane vl) of the input behind host
	// out-port oi that p would join; nicLoad(k) is the packets the NIC
	// holds for queue k (4Q's "queue with lower occupancy" counts both).
	hostKey(oi int32, p *Packet, vl int, nicLoad func(k int) int) int
}

// hostQueuer is implemented by the architectures with credits per queue
// on the hosts' injection links (fabric.voq_memory=partitioned).
type hostQueuer interface {
	// hostRoom reports whether p's queue at the input behind host
	// out-port oi has credits for it on lane vl.
	hostRoom(oi int32, p *Packet, vl int) bool
	// hostSend takes those credits: p starts on lane vl.
	hostSend(oi int32, p *Packet, vl int)
}

// hostChosen returns the queue of lane vl a packet arriving at input ip
// from a host joins when its NIC chose it (Packet.FirstQueue).
func hostChosen(f *Fabric, ip *inPort, p *Packet) (int, bool) {
	if p.FirstQueue == 0 || f.out[ip.up].sw >= 0 {
		return 0, false
	}
	return int(p.FirstQueue - 1), true
}

// KeyInjectionQueues tells the fabric that its NICs keep an injection
// queue per queue of the first switch's input and mark each packet with
// the one it joins (InjectionQueue, Packet.FirstQueue). With
// partitioned VOQ memory the injection links then carry credits per
// queue, as the links between switches do (paper 000 §4.1: "a
// credit-based flow control at the queue level has been implemented for
// the VOQ mechanisms"); without it a NIC's one FIFO sends on the lane's
// credits. Call it before the first packet.
func (f *Fabric) KeyInjectionQueues() { f.keyedInjection = true }

// InjectionQueues returns how many queues per lane a host's first switch
// keeps at its input, which a NIC's injection queues may follow: 1 for
// the architectures with one FIFO per lane (iq, cioq, 1q), for those that
// run the injection links themselves (recn, the RECN-IQ family: their NIC
// SAQs), with several injection ports per host, and under wormhole
// switching.
func (f *Fabric) InjectionQueues() int {
	hk, ok := f.arch.(hostKeyer)
	if !ok || f.wh != nil || f.inj != nil || f.injp != nil {
		return 1
	}
	return hk.hostQueues()
}

// InjectionQueue returns the queue (within its lane) of host h's first
// switch input that packet p would join if sent now: its destination's
// for voqnet, the first switch's output it takes for voqsw, for 4q the
// queue its flow waits in there or else the least occupied counting
// nicLoad, the packets the NIC holds for each queue. It is 0 when
// InjectionQueues is 1.
func (f *Fabric) InjectionQueue(h int, p *Packet, nicLoad func(k int) int) int {
	if f.InjectionQueues() == 1 {
		return 0
	}
	return f.arch.(hostKeyer).hostKey(f.hostOut[h], p, int(f.injCands[len(f.injCands)-1].VL), nicLoad)
}

// InjectionReady reports whether host h's injection link could start p
// now if it were free: a lane with credits for it and, with partitioned
// VOQ memory, credits of its queue at the first switch. When it could
// not, the port is woken when the next lane credit arrives (a queue
// credit wakes it on arrival).
func (f *Fabric) InjectionReady(h int, p *Packet) bool {
	oi := f.hostOut[h]
	o := &f.out[oi]
	if o.lazy && o.creditH < len(o.creditQ) {
		f.absorb(o)
	}
	if f.selectInjection(oi, o, p) >= 0 {
		return true
	}
	f.wakeForCredits(oi, o)
	return false
}

// selectInjection picks the lane host port oi sends p on (the same
// selection as on any channel: an adaptive lane with most credits, else
// the escape lane), or -1 when none can take it now.
func (f *Fabric) selectInjection(oi int32, o *outPort, p *Packet) int {
	p.blocks = f.packetBlocks(p.Size)
	f.room.sw, f.room.blocks, f.room.pkt = nil, p.blocks, p
	f.room.host, f.room.hostOI = o, oi
	c := route.Select(f.injCands, &f.room)
	f.room.host = nil
	return c
}
