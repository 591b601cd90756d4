package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// hcArch is the hierarchical crossbar (HC) of paper 003 §1.4 (Fig. 1.12),
// the costly reference PCIQ is compared with in §2.7: an N x N switch
// made of (N/p)^2 sub-switches of p x p with the CIOQ memory organisation.
// Here p = ceil(N/2), as in §2.7 ("four 12x12 sub-switches are used (p =
// 12)" for 24 ports) and Fig. 2.8(e): input port i is in row i / p,
// output port o in column o / p, and sub-switch (row, column) joins them.
//
// An input has one memory per column (the thesis' p(N/p)^2 input
// memories), each with its own read port into its sub-switch, so an input
// can send to both columns at once; a packet is routed when it arrives
// and joins the queue of its output's column, per lane. Every sub-switch
// output has a memory of its own (fabric.output_buffer, per lane), so an
// output link is fed by one output memory per row: two sub-switches may
// write into one output at the same time (HC's internal speedup, §2.7),
// and the link sends from its memories in round-robin order when the next
// switch has credits. Crossbars carry a packet at crossbar_speedup times
// the link rate.
//
// The thesis flow-controls every input memory on its own (§2.2.2: HC
// needs the output port computed upstream); here an input's memories
// share the lane's credits, as the queue schemes do (arch_queues.go).
//
// Out-port state: o.lanes and o.outq hold rows x lanes entries (row r,
// lane v at r*lanes+v), so the invariants and the occupancy count see
// every output memory.
type hcArch struct {
	vlQueues
	readPorts
	rows  int
	ready bool
	cands []route.Candidate
	// xfer[ii*rows+g]: out-port the transfer through read port g of
	// in-port ii goes to. rowBusy[oi*rows+r]: sub-switch output (r, oi)
	// is receiving. sending[oi]: row of the packet on the link.
	xfer    []int32
	rowBusy []bool
	sending []int8
	// src[oi*rows*lanes+i] are the input ports of the packets in
	// o.outq[i], in order; linkPtr[oi] is the link's round-robin pointer
	// over input ports.
	src     [][]int16
	linkPtr []int16
}

const hcRows = 2

// hcHalf is the sub-switch size p of a switch of n ports.
func hcHalf(n int) int { return (n + 1) / 2 }

func newHC(f *Fabric) switchArch {
	a := &hcArch{vlQueues: vlQueues{f}, rows: hcRows}
	a.readPorts = readPorts{fab: f, nPorts: hcRows, group: func(s *Switch, po int) int { return po / hcHalf(len(s.out)) }}
	return a
}

func (a *hcArch) queuesPerInput() int { return a.f.nVL * a.rows }

// setup widens every switch output to one memory per row (the ports do
// not exist yet when the architecture is built).
func (a *hcArch) setup() {
	if a.ready {
		return
	}
	a.ready = true
	f := a.f
	for oi := range f.out {
		o := &f.out[oi]
		if o.sw < 0 {
			continue
		}
		lanes := make([]lane, 0, a.rows*f.nVL)
		for range a.rows {
			lanes = append(lanes, o.lanes[:f.nVL]...)
		}
		o.lanes, o.outq = lanes, make([]fifo, a.rows*f.nVL)
	}
	a.xfer = make([]int32, len(f.in)*a.rows)
	a.rowBusy = make([]bool, len(f.out)*a.rows)
	a.sending = make([]int8, len(f.out))
	a.src = make([][]int16, len(f.out)*a.rows*f.nVL)
	a.linkPtr = make([]int16, len(f.out))
}

// inputRows and inputRow tell the hrr allocator that an output has one
// sub-switch output (and arbiter) per row.
func (a *hcArch) inputRows() int                 { return a.rows }
func (a *hcArch) inputRow(s *Switch, pi int) int { return pi / hcHalf(len(s.in)) }

func (a *hcArch) enqueue(ip *inPort, p *Packet) int {
	a.setup()
	return a.queueOf(ip, p, &a.cands)
}

// row is the row of the input being tried (the sub-switch row it feeds).
func (a *hcArch) row(ii int32) int {
	ip := &a.f.in[ii]
	return int(ip.port) / hcHalf(len(a.f.sw[ip.sw].in))
}

// room: the read port of the input into the output's column is idle, the
// sub-switch output of the input's row is not receiving, and its memory
// has room for the packet.
func (a *hcArch) room(o *outPort, vl, blocks int32) (bool, int) {
	f := a.f
	a.setup()
	if o.creditH < len(o.creditQ) {
		f.absorb(o)
	}
	ii := f.room.in
	s := &f.sw[o.sw]
	if ii < 0 || !a.free(s, ii, int(o.port)) {
		return false, 0
	}
	r := a.row(ii)
	oi := s.out[o.port]
	if a.rowBusy[int(oi)*a.rows+r] {
		return false, 0
	}
	l := &o.lanes[r*f.nVL+int(vl)]
	free := l.cap - l.used
	return free >= blocks, int(free + o.credits[vl])
}

// forward moves the packet through its sub-switch into the output memory
// of the input's row; the link starts it at once if it is idle.
func (a *hcArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	o := &f.out[oi]
	g := a.group(&f.sw[o.sw], int(o.port))
	r := a.row(ii)
	now := f.eng.Now()
	end := max(now+serTime(int64(p.Size), f.xbarRate), p.tailAt)
	a.rowBusy[int(oi)*a.rows+r] = true
	a.xfer[int(ii)*a.rows+g] = oi
	idx := r*f.nVL + vl
	o.lanes[idx].used += p.blocks
	o.outq[idx].push(p)
	sq := int(oi)*len(o.outq) + idx
	a.src[sq] = append(a.src[sq], int16(f.in[ii].port))
	p.tailAt = end
	f.eng.Schedule(end, f, packOp(opReadPortDone, int(p.inVL), g|int(p.blocks)<<4), ii, nil)
	f.transmit(oi)
	a.took(ii, g)
}

func (a *hcArch) handle(kind int, x int32, inVL, rest int, _ any) {
	f := a.f
	switch kind {
	case opReadPortDone:
		g := rest & 15
		oi := a.xfer[int(x)*a.rows+g]
		a.rowBusy[int(oi)*a.rows+a.row(x)] = false
		f.out[oi].epoch++
		s := a.released(x, g, inVL, int32(rest>>4))
		f.alloc.arbitrate(s)
	case opRearbitrate:
		a.rearb[x] = false
		f.alloc.arbitrate(&f.sw[x])
	}
}

func (a *hcArch) crossbarDone(*outPort) {}

// next sends, among the heads of the output memories whose downstream
// lane has credits, the one whose input port comes first from the link's
// round-robin pointer over input ports (the N x 1 round robin at every
// output link of §2.10), so that inputs share the link equally whatever
// row they are in; the pointer then moves one past that input port.
func (a *hcArch) next(oi int32, o *outPort, start des.Time) {
	f := a.f
	a.setup()
	queued := false
	n := len(o.outq)
	ports := int16(len(f.sw[o.sw].in))
	best, bestDist := -1, ports
	for i := 0; i < n; i++ {
		p := o.outq[i].head
		if p == nil {
			continue
		}
		queued = true
		if o.credits[i%f.nVL] < p.blocks {
			continue
		}
		if d := (a.src[int(oi)*n+i][0] - a.linkPtr[oi] + ports) % ports; d < bestDist {
			best, bestDist = i, d
		}
	}
	if best < 0 {
		if queued {
			f.wakeForCredits(oi, o)
		}
		return
	}
	p := o.outq[best].pop()
	sq := int(oi)*n + best
	a.linkPtr[oi] = (a.src[sq][0] + 1) % ports
	a.src[sq] = a.src[sq][1:]
	a.sending[oi] = int8(best / f.nVL)
	f.send(oi, p, best%f.nVL, start)
}

// linkDone: the packet's tail has left its output memory.
func (a *hcArch) linkDone(o *outPort, vl int, blocks int32) {
	oi := a.f.sw[o.sw].out[o.port]
	o.lanes[int(a.sending[oi])*a.f.nVL+vl].used -= blocks
}

func (a *hcArch) waitsFor(o *outPort, vl int, need int32) string {
	free := ""
	for r := 0; r*a.f.nVL < len(o.lanes); r++ {
		l := &o.lanes[r*a.f.nVL+vl]
		free += fmt.Sprintf(" row %d: %d of %d blocks free;", r, l.cap-l.used, l.cap)
	}
	return fmt.Sprintf("s%d/p%d/vl%d (output memories%s need %d)", o.sw, o.port, vl, free, need)
}

// cioq2QArch is the CIOQ switch with two queues per input of paper 003
// §2.7 ("CIOQ with 2Q", the fair comparison for PCIQ-2): cioq's single
// read port, crossbar and output buffers, and at every input one queue
// for packets to even output ports and one for odd ones (per lane); the
// packet is routed when it arrives. Both queues share the lane's memory
// and credits (arch_queues.go).
type cioq2QArch struct {
	schemeBase
	cands []route.Candidate
}

// twoQPerLane: an even and an odd queue per lane.
func twoQPerLane(_, _ int) int { return 2 }

func newCIOQ2Q(f *Fabric) switchArch {
	return &cioq2QArch{schemeBase: schemeBase{cioqArch{vlQueues{f}}, twoQPerLane(0, 0)}}
}

func (a *cioq2QArch) enqueue(ip *inPort, p *Packet) int {
	var port int32
	port, a.cands = a.f.selectAtArrival(ip, p, a.cands)
	return a.laneQueue(p.VL, int(port%2))
}
