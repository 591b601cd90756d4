package fabric

// fourQArch is paper 000's 4Q scheme (§4.3): "virtual channels ... four
// queues at every input and output port ... packets are stored in the
// queue with lower occupancy". An arriving packet joins the least
// occupied of its lane's four queues (fewest packets, the lowest index on
// a tie), with one exception the paper does not need to state: while
// packets for the same destination wait at this input, it joins their
// queue, so that a flow cannot overtake itself (deterministic routing
// delivers in order, as the conformance suite checks), unless
// fabric.four_q_choice=occupancy asks for the paper's rule alone. With shared memory
// (the default) the four queues share the lane's memory and credits
// (arch_queues.go); with partitioned memory (fabric.voq_memory, paper 000
// §4.1) see fourQKeys.
type fourQArch struct {
	schemeBase
	order fourQOrder
}

// fourQOrder keeps 4Q's flows in order: waiting[in-port] maps destination
// and lane to the queue holding that destination's packets at the input
// (or, with partitioned memory, bound for it) and how many; made on first
// use.
type fourQOrder struct {
	f       *Fabric
	waiting []map[int32]fourQWait
	// byOccupancy: fabric.four_q_choice=occupancy, the least occupied
	// queue for every packet (the paper's rule; flows may be reordered).
	byOccupancy bool
}

type fourQWait struct{ q, n int32 }

const fourQueues = 4

// fourQPerLane: four queues per lane.
func fourQPerLane(_, _ int) int { return fourQueues }

func newFourQ(f *Fabric) switchArch {
	order := fourQOrder{f: f, byOccupancy: f.cfg.FourQChoice == "occupancy"}
	if partitioned(f) {
		k := &fourQKeys{fourQOrder: order}
		k.part = newVOQPart(f, fourQueues, k)
		return k.part
	}
	return &fourQArch{schemeBase: schemeBase{cioqArch{vlQueues{f}}, fourQPerLane(0, 0)}, order: order}
}

// fourQKey names a packet's flow at an input: its destination and the
// lane it arrives on. At the input that is inVL, not VL: grant sets VL to
// the output lane before forward runs, and on a torus the dateline
// changes it.
func fourQKey(p *Packet, vl int8) int32 { return p.Dst<<4 | int32(vl) }

// at returns the wait map of in-port ii.
func (o *fourQOrder) at(ii int32) map[int32]fourQWait {
	if o.waiting == nil {
		o.waiting = make([]map[int32]fourQWait, len(o.f.in))
	}
	m := o.waiting[ii]
	if m == nil {
		m = map[int32]fourQWait{}
		o.waiting[ii] = m
	}
	return m
}

// add counts a packet of flow key for queue q of in-port ii, and returns
// the queue the flow is in, or q for a flow not waiting there (always q
// with fabric.four_q_choice=occupancy, which keeps no count).
func (o *fourQOrder) add(ii int32, key int32, q int) int {
	if o.byOccupancy {
		return q
	}
	m := o.at(ii)
	if w, ok := m[key]; ok {
		w.n++
		m[key] = w
		return int(w.q)
	}
	m[key] = fourQWait{q: int32(q), n: 1}
	return q
}

// queueOf returns the queue flow key waits in at in-port ii, or -1 (also
// always with fabric.four_q_choice=occupancy).
func (o *fourQOrder) queueOf(ii int32, key int32) int {
	if o.byOccupancy {
		return -1
	}
	if w, ok := o.at(ii)[key]; ok {
		return int(w.q)
	}
	return -1
}

// left forgets a packet of flow key at in-port ii.
func (o *fourQOrder) left(ii int32, key int32) {
	if o.byOccupancy {
		return
	}
	m := o.waiting[ii]
	if w := m[key]; w.n > 1 {
		w.n--
		m[key] = w
	} else {
		delete(m, key)
	}
}

func inIndex(f *Fabric, ip *inPort) int32 { return f.sw[ip.sw].in[ip.port] }

// leastOccupied is the queue of lane vl at input ip holding the fewest
// packets (the lowest index on a tie).
func leastOccupied(s *schemeBase, ip *inPort, vl int8) int {
	best := s.laneQueue(vl, 0)
	for k := 1; k < fourQueues; k++ {
		if qi := s.laneQueue(vl, k); ip.queues[qi].n < ip.queues[best].n {
			best = qi
		}
	}
	return best
}

func (a *fourQArch) enqueue(ip *inPort, p *Packet) int {
	ii := inIndex(a.f, ip)
	key := fourQKey(p, p.VL)
	if q := a.order.queueOf(ii, key); q >= 0 {
		return a.order.add(ii, key, q)
	}
	if k, ok := hostChosen(a.f, ip, p); ok {
		return a.order.add(ii, key, a.laneQueue(p.VL, k))
	}
	return a.order.add(ii, key, leastOccupied(&a.schemeBase, ip, p.VL))
}

func (a *fourQArch) hostQueues() int { return fourQueues }
func (a *fourQArch) hostKey(oi int32, p *Packet, vl int, nicLoad func(int) int) int {
	return a.order.hostKey(&a.schemeBase, oi, p, vl, nicLoad)
}

// hostKey is the queue of lane vl a host's packet p takes at the first
// switch's input behind host port oi: the one its flow waits in there,
// else the one with the fewest packets counting those at the input and
// those the NIC holds for it (nicLoad; the lowest index on a tie).
func (o *fourQOrder) hostKey(s *schemeBase, oi int32, p *Packet, vl int, nicLoad func(int) int) int {
	di := o.f.out[oi].down
	if q := o.queueOf(di, fourQKey(p, int8(vl))); q >= 0 {
		return q - vl*fourQueues
	}
	ip := &o.f.in[di]
	best, load := 0, -1
	for k := range fourQueues {
		l := ip.queues[s.laneQueue(int8(vl), k)].n
		if nicLoad != nil {
			l += nicLoad(k)
		}
		if load < 0 || l < load {
			best, load = k, l
		}
	}
	return best
}

// forward forgets the packet at its input, then crosses as cioq does.
func (a *fourQArch) forward(ii, oi int32, p *Packet, vl int) {
	a.order.left(ii, fourQKey(p, p.inVL))
	a.cioqArch.forward(ii, oi, p, vl)
}

// fourQKeys is 4Q with partitioned memory: the four queues are virtual
// channels of the link, queue k of an output feeding queue k of the next
// switch's input, each with its share of the memory and its credits. The
// output picks the queue when the crossbar moves the packet into it: the
// one its flow is in, up to the next input (order), else the one with
// the lowest occupancy the output knows of (its own blocks in that queue
// plus the blocks the next input holds or has not yet returned credits
// for). A keyed host's injection port picks so too, unless its NIC
// chose (fourQOrder.hostKey); a packet from any other host chooses at the
// first switch's input, as with shared memory.
type fourQKeys struct {
	fourQOrder
	part *voqPartArch
}

func (k *fourQKeys) arrive(ip *inPort, p *Packet) int {
	ii := inIndex(k.f, ip)
	key := fourQKey(p, p.VL)
	q := k.queueOf(ii, key)
	if q < 0 {
		q = leastOccupied(&k.part.schemeBase, ip, p.VL)
	}
	return k.add(ii, key, q) - int(p.VL)*fourQueues
}

func (k *fourQKeys) hostKey(oi int32, p *Packet, vl int, nicLoad func(int) int) int {
	return k.fourQOrder.hostKey(&k.part.schemeBase, oi, p, vl, nicLoad)
}

func (k *fourQKeys) outKey(oi int32, p *Packet, vl int) int {
	f, a := k.f, k.part
	di := f.out[oi].down
	if f.in[di].sw < 0 {
		return 0 // a NIC: one queue, in order
	}
	if q := k.queueOf(di, fourQKey(p, int8(vl))); q >= 0 {
		return q - vl*fourQueues
	}
	best, load := 0, int32(-1)
	for j := range fourQueues {
		q := a.laneQueue(int8(vl), j)
		var used int32 // a host's port keeps no output queue
		if a.qused[oi] != nil {
			used = a.qused[oi][q]
		}
		if l := used + a.inShare[vl] - a.qcr[oi][q]; load < 0 || l < load {
			best, load = j, l
		}
	}
	return best
}

func (k *fourQKeys) forwarded(ii, oi int32, p *Packet, vl, q int) {
	if ii >= 0 {
		k.left(ii, fourQKey(p, p.inVL))
	}
	if di := k.f.out[oi].down; k.f.in[di].sw >= 0 {
		k.add(di, fourQKey(p, int8(vl)), k.part.laneQueue(int8(vl), q))
	}
}
