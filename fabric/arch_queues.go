package fabric

import (
	"unsafe"

	"github.com/fabemu/fabemu/fabric/route"
)

// The queue schemes of paper 000 (§4.3: IQ, 4Q, VOQsw, VOQnet) are the
// CIOQ switch of paper 000 §3 and §4.1 (input and output memories, a
// multiplexed crossbar with speedup) with different input queues: they
// change only where an arriving packet is queued and so which heads
// compete in the allocator. With fabric.voq_memory=shared every queue of
// an input lives in the memory of the lane the packet arrived on and
// shares it with the lane's other queues; credits count blocks per lane,
// as for cioq (paper 000 §3.7: "credits are global, that is, they refer
// to all the space available for buffers in the data RAM for each
// port"), and the output stage is cioq's (one FIFO per lane). With
// fabric.voq_memory=partitioned (paper 000 §4.1: "the total memory size
// per port is equally divided among all the established queues", "a
// credit-based flow control at the queue level") every queue has a fixed
// share and credits of its own, and the outputs keep the scheme's queues
// too (arch_voqmem.go); the paper000 presets use it, and it is voqnet's
// default. Queue k of lane v is queues[v*perLane+k], so a scheme with one
// queue per lane is the cioq switch.

// queueScheme is implemented by the architectures whose input queues are
// a queue scheme of paper 000; the summary reports their queue state.
type queueScheme interface {
	schemeQueuesPerLane() int
}

// QueueState is how much queue state the switches keep: the figure paper
// 000 §2 and §4.3 use against VOQ at the network level ("the number of
// buffers required at every switch port ... increases linearly with the
// number of endpoints").
type QueueState struct {
	// Scheme is the switch architecture (fabric.switch).
	Scheme string `json:"scheme"`
	// QueuesPerLane and QueuesPerInput count the queues of a switch input
	// port (every lane has QueuesPerLane of them).
	QueuesPerLane  int `json:"queues_per_lane"`
	QueuesPerInput int `json:"queues_per_input"`
	// QueuesPerSwitch counts the input queues of the widest switch.
	QueuesPerSwitch int `json:"queues_per_switch"`
	// BytesPerQueue is the simulator's state for one empty queue (head,
	// tail, count, cached routing candidates of its head, blocked mark);
	// packets are linked through the queue, so a queue holds no slice of
	// its own until its head is first routed.
	BytesPerQueue int `json:"bytes_per_queue"`
	// StateBytesPerSwitch is QueuesPerSwitch x BytesPerQueue, and
	// StateBytesTotal that over every switch input of the fabric.
	StateBytesPerSwitch int64 `json:"state_bytes_per_switch"`
	StateBytesTotal     int64 `json:"state_bytes_total"`
}

// QueueState returns the queue state of a queue-scheme architecture, and
// false for the others (cioq and iq: one FIFO per lane).
func (f *Fabric) QueueState() (QueueState, bool) {
	qs, ok := f.arch.(queueScheme)
	if !ok {
		return QueueState{}, false
	}
	per := f.arch.queuesPerInput()
	st := QueueState{Scheme: f.cfg.Switch, QueuesPerLane: qs.schemeQueuesPerLane(), QueuesPerInput: per,
		BytesPerQueue: int(unsafe.Sizeof(queue{}))}
	var inputs int64
	for s := range f.sw {
		n := 0
		for _, i := range f.sw[s].in {
			if i >= 0 {
				n++
			}
		}
		inputs += int64(n)
		st.QueuesPerSwitch = max(st.QueuesPerSwitch, n*per)
	}
	st.StateBytesPerSwitch = int64(st.QueuesPerSwitch) * int64(st.BytesPerQueue)
	st.StateBytesTotal = inputs * int64(per) * int64(st.BytesPerQueue)
	return st, true
}

// schemeBase is the part every queue scheme shares: cioq's crossbar and
// output stage, perLane queues per lane at every input.
type schemeBase struct {
	cioqArch
	perLane int
}

func (a *schemeBase) queuesPerInput() int          { return a.f.nVL * a.perLane }
func (a *schemeBase) schemeQueuesPerLane() int     { return a.perLane }
func (a *schemeBase) laneQueue(vl int8, k int) int { return int(vl)*a.perLane + k }

// widestSwitch is the most ports any switch of the topology has (the
// architecture is built before the fabric's ports).
func widestSwitch(f *Fabric) int {
	w := 1
	for _, s := range f.topo.Switches {
		w = max(w, s.Ports)
	}
	return w
}

// selectAtArrival returns the output port a packet arriving at input ip
// would take if it were granted now: the only candidate under
// deterministic routing; under adaptive routing the one the selection
// function picks with the room the outputs have now (the first candidate
// if none has room). cands is scratch space.
func (f *Fabric) selectAtArrival(ip *inPort, p *Packet, cands []route.Candidate) (int32, []route.Candidate) {
	s := &f.sw[ip.sw]
	cands = f.router.Candidates(s.ID, s.routePort(int(ip.port)), int(p.VL), int(p.Dst), cands[:0])
	if len(cands) == 1 {
		return cands[0].Port, cands
	}
	saved := f.room
	f.room.sw, f.room.blocks, f.room.host, f.room.taken, f.room.in, f.room.pkt = s, p.blocks, nil, nil, s.in[ip.port], p
	c := route.Select(cands, &f.room)
	f.room = saved
	if c < 0 {
		c = 0
	}
	return cands[c].Port, cands
}
