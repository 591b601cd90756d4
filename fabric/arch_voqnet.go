package fabric

// voqNetArch is paper 000's VOQnet scheme (§4.3): "the VOQ mechanism at
// the network level ... as many queues as final destinations at every
// input ... port of every switch", the ideal the paper measures the
// others against. A packet joins the queue of its destination host, so
// packets for different hosts never block each other at an input.
// Its cost grows with the network: QueueState reports it (a queue is a
// few words: packets are linked through it and nothing is allocated per
// queue until its head is routed).
type voqNetArch struct{ schemeBase }

// voqNetPerLane: a queue per destination host.
func voqNetPerLane(_, hosts int) int { return max(1, hosts) }

func newVOQnet(f *Fabric) switchArch {
	return &voqNetArch{schemeBase{cioqArch{vlQueues{f}}, voqNetPerLane(0, f.topo.NumHosts())}}
}

func (a *voqNetArch) enqueue(_ *inPort, p *Packet) int { return a.laneQueue(p.VL, int(p.Dst)) }
