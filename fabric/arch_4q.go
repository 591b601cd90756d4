package fabric

// fourQArch is paper 000's 4Q scheme (§4.3): "virtual channels ... four
// queues at every input and output port ... packets are stored in the
// queue with lower occupancy". An arriving packet joins the least
// occupied of its lane's four queues (fewest packets, the lowest index on
// a tie), with one exception the paper does not need to state: while
// packets for the same destination wait at this input, it joins their
// queue, so that a flow cannot overtake itself (deterministic routing
// delivers in order, as the conformance suite checks). The four queues
// share the lane's memory and credits (arch_queues.go).
type fourQArch struct {
	schemeBase
	// waiting[in-port] maps destination and lane to the queue holding
	// that destination's packets and how many; made on first use.
	waiting []map[int32]fourQWait
}

type fourQWait struct{ q, n int32 }

const fourQueues = 4

// fourQPerLane: four queues per lane.
func fourQPerLane(_, _ int) int { return fourQueues }

func newFourQ(f *Fabric) switchArch {
	return &fourQArch{schemeBase: schemeBase{cioqArch{vlQueues{f}}, fourQPerLane(0, 0)}}
}

// fourQKey names a packet's flow at this input: its destination and the
// lane it arrived on. The lane is inVL, not VL: grant sets VL to the
// output lane before forward runs, and on a torus the dateline changes it.
func fourQKey(p *Packet) int32 { return p.Dst<<4 | int32(p.inVL) }

func (a *fourQArch) inIndex(ip *inPort) int { return int(a.f.sw[ip.sw].in[ip.port]) }

func (a *fourQArch) enqueue(ip *inPort, p *Packet) int {
	if a.waiting == nil {
		a.waiting = make([]map[int32]fourQWait, len(a.f.in))
	}
	ii := a.inIndex(ip)
	m := a.waiting[ii]
	if m == nil {
		m = map[int32]fourQWait{}
		a.waiting[ii] = m
	}
	key := fourQKey(p)
	if w, ok := m[key]; ok {
		w.n++
		m[key] = w
		return int(w.q)
	}
	best := a.laneQueue(p.VL, 0)
	for k := 1; k < fourQueues; k++ {
		if qi := a.laneQueue(p.VL, k); ip.queues[qi].n < ip.queues[best].n {
			best = qi
		}
	}
	m[key] = fourQWait{q: int32(best), n: 1}
	return best
}

// forward forgets the packet at its input, then crosses as cioq does.
func (a *fourQArch) forward(ii, oi int32, p *Packet, vl int) {
	m := a.waiting[ii]
	key := fourQKey(p)
	if w := m[key]; w.n > 1 {
		w.n--
		m[key] = w
	} else {
		delete(m, key)
	}
	a.cioqArch.forward(ii, oi, p, vl)
}
