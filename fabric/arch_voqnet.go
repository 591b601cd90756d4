package fabric

// voqNet is paper 000's VOQnet scheme (§4.3): "the VOQ mechanism at the
// network level ... as many queues as final destinations at every input
// and output port of every switch", the ideal the paper measures the
// others against. A packet joins the queue of its destination host, so
// packets for different hosts never block each other at an input. Its
// cost grows with the network: QueueState reports it (a queue is a few
// words: packets are linked through it and nothing is allocated per
// queue until its head is routed).
//
// With partitioned memory (its default, paper 000 §4.1; arch_voqmem.go)
// the output ports keep a queue per destination too, every queue has an
// equal share of the port's memory and credits of its own. With shared
// memory the input queues share the lane's memory and credits and the
// output stage is cioq's.
type voqNet struct{}

// voqNetPerLane: a queue per destination host.
func voqNetPerLane(_, hosts int) int { return max(1, hosts) }

func newVOQnet(f *Fabric) switchArch {
	per := voqNetPerLane(0, f.topo.NumHosts())
	if partitioned(f) {
		return newVOQPart(f, per, voqNet{})
	}
	return &voqNetShared{schemeBase{cioqArch{vlQueues{f}}, per}}
}

func (voqNet) arrive(_ *inPort, p *Packet) int           { return int(p.Dst) }
func (voqNet) outKey(_ int32, p *Packet, _ int) int      { return int(p.Dst) }
func (voqNet) forwarded(_, _ int32, _ *Packet, _, _ int) {}
func (voqNet) hostKey(_ int32, p *Packet, _ int, _ func(int) int) int {
	return int(p.Dst)
}

// voqNetShared is voqnet with shared memory: a queue per destination at
// every input, in the lane's memory with the lane's credits.
type voqNetShared struct{ schemeBase }

func (a *voqNetShared) enqueue(_ *inPort, p *Packet) int { return a.laneQueue(p.VL, int(p.Dst)) }

func (a *voqNetShared) hostQueues() int { return a.perLane }
func (a *voqNetShared) hostKey(_ int32, p *Packet, _ int, _ func(int) int) int {
	return int(p.Dst)
}
