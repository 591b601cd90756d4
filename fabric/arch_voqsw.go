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
type voqSwArch struct {
	schemeBase
	cands []route.Candidate
}

// voqSwPerLane: a queue per switch output.
func voqSwPerLane(ports, _ int) int { return max(1, ports) }

func newVOQsw(f *Fabric) switchArch {
	return &voqSwArch{schemeBase: schemeBase{cioqArch{vlQueues{f}}, voqSwPerLane(widestSwitch(f), 0)}}
}

func (a *voqSwArch) enqueue(ip *inPort, p *Packet) int {
	var port int32
	port, a.cands = a.f.selectAtArrival(ip, p, a.cands)
	return a.laneQueue(p.VL, int(port))
}
