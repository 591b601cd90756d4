package fabric

import "github.com/fabemu/fabemu/fabric/route"

// voqSwArch is paper 000's VOQsw scheme (§4.3): "VOQ at the switch level
// ... at every input port it uses as many queues as ports in the switch,
// and packets are mapped to queues according to the output port they
// will use at the current switch". The packet is routed when it arrives
// and joins the queue of its output. Under deterministic routing (the
// paper's) that is the output it will take. Under adaptive routing the
// output is the one the selection function picks at arrival (the first
// candidate if none has room then); the allocator may still grant the
// head any of its legal candidates when it competes, so the queue is the
// output chosen at arrival and HOL blocking is reduced, not removed.
//
// With partitioned memory (fabric.voq_memory, paper 000 §4.1) see
// voqSwKeys.
type voqSwArch struct {
	schemeBase
	keys voqSwKeys
}

// voqSwPerLane: a queue per switch output.
func voqSwPerLane(ports, _ int) int { return max(1, ports) }

func newVOQsw(f *Fabric) switchArch {
	per := voqSwPerLane(widestSwitch(f), 0)
	if partitioned(f) {
		return newVOQPart(f, per, &voqSwKeys{f: f})
	}
	return &voqSwArch{schemeBase: schemeBase{cioqArch{vlQueues{f}}, per}, keys: voqSwKeys{f: f}}
}

func (a *voqSwArch) enqueue(ip *inPort, p *Packet) int {
	if k, ok := hostChosen(a.f, ip, p); ok {
		return a.laneQueue(p.VL, k)
	}
	return a.laneQueue(p.VL, a.keys.arrive(ip, p))
}

func (a *voqSwArch) hostQueues() int { return a.perLane }
func (a *voqSwArch) hostKey(oi int32, p *Packet, vl int, _ func(int) int) int {
	return a.keys.outKey(oi, p, vl)
}

// voqSwKeys is VOQsw with partitioned memory: the output ports keep a
// queue per output of the next switch (the queue the packet will join
// there), each with its share of the memory and credits of its own. The
// upstream output picks the next switch's queue before the packet
// arrives, by the route it takes there: the only candidate under
// deterministic routing, the first under adaptive routing. The queue
// towards a host is one.
type voqSwKeys struct {
	f     *Fabric
	cands []route.Candidate
}

func (k *voqSwKeys) arrive(ip *inPort, p *Packet) int {
	var port int32
	port, k.cands = k.f.selectAtArrival(ip, p, k.cands)
	return int(port)
}

func (k *voqSwKeys) outKey(oi int32, p *Packet, vl int) int {
	f := k.f
	d := &f.in[f.out[oi].down]
	if d.sw < 0 {
		return 0
	}
	s := &f.sw[d.sw]
	k.cands = f.router.Candidates(s.ID, s.routePort(int(d.port)), vl, int(p.Dst), k.cands[:0])
	return int(k.cands[0].Port)
}

func (*voqSwKeys) forwarded(_, _ int32, _ *Packet, _, _ int) {}

// hostKey: the output of the first switch the packet takes (outKey's
// question asked of the host's port).
func (k *voqSwKeys) hostKey(oi int32, p *Packet, vl int, _ func(int) int) int {
	return k.outKey(oi, p, vl)
}
