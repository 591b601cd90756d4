package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// The switch organisations of paper 003 chapter 2: PCIQ (partitioned
// crossbar input queued, §2.2-§2.3) with K sub-crossbars, and the
// hierarchical crossbar (HC, §1.4) it is compared with (§2.7). Both give
// every input memory several read ports, each feeding a sub-crossbar of
// its own, so one input may send up to one packet per read port at the
// same time; the fabric's allocators grant one packet per input and per
// pass, so these architectures free the input again after a grant while a
// read port is left and ask for another allocation at once (readPorts).
//
// The names carry the parameter: pciq-2 and pciq-4 are PCIQ with K = 2 and
// K = 4 sub-crossbars (the two of §2.7); hc is the hierarchical crossbar
// with two rows and two columns of N/2 x N/2 sub-switches (p = N/2, the
// §2.7 24-port switch with p = 12, and Fig. 2.8(e)). The thesis' CIOQ with
// one queue is cioq with crossbar_speedup 1; its CIOQ with two queues
// (§2.7, "2Q") is cioq-2q.

// readPorter is implemented by the architectures whose input memories
// have several read ports (pciq-K, hc): readPort says which read port (and
// sub-crossbar) of an input reaches output port po of switch s. The
// hierarchical round-robin allocator lets an input request once per read
// port.
type readPorter interface {
	readPort(s *Switch, po int) int
}

// opReadPortDone: A: in-port; lane bits: the input lane; blocks field:
// read port | blocks<<4. The transfer through one read port of an input
// ended: its blocks leave the input memory and the read port is free.
// opRearbitrate: A: switch. A grant left read ports of an input free:
// allocate the switch again (deferred, so that no allocator re-enters).
// opLinkReadPortDone (pciq-K): A: in-port; lane bits: the input lane;
// blocks field: read port | output lane<<2 | output port<<6 |
// blocks<<14. The packet's tail left the link and, at the same instant,
// the read port it crossed through: the opLinkFree and the
// opReadPortDone of that packet in one event, handled in that order, as
// the two were scheduled one after the other.
const (
	opReadPortDone = opArch + iota
	opRearbitrate
	opLinkReadPortDone
)

// readPorts is the input side shared by pciq-K and hc: nPorts read ports
// per input memory, a mask of the busy ones per in-port, and the
// deferred re-allocation.
type readPorts struct {
	fab    *Fabric
	nPorts int
	group  func(s *Switch, po int) int // read port of output po
	busy   []uint8                     // per global in-port
	// rearb[s]: an opRearbitrate for switch s is pending.
	rearb []bool
}

func (r *readPorts) readPort(s *Switch, po int) int { return r.group(s, po) }

func (r *readPorts) setup() {
	if r.busy == nil {
		r.busy = make([]uint8, len(r.fab.in))
		r.rearb = make([]bool, len(r.fab.sw))
	}
}

// free reports whether the read port input ii needs to reach output port
// po of switch s is idle.
func (r *readPorts) free(s *Switch, ii int32, po int) bool {
	r.setup()
	return ii < 0 || r.busy[ii]&(1<<uint(r.group(s, po))) == 0
}

// took marks read port k of input ii busy; if another is left the input
// may be granted again, and the switch is allocated again now.
func (r *readPorts) took(ii int32, k int) {
	f := r.fab
	r.setup()
	r.busy[ii] |= 1 << uint(k)
	if r.busy[ii] == 1<<uint(r.nPorts)-1 {
		return
	}
	ip := &f.in[ii]
	ip.xbarBusy = false
	f.markReady(ip)
	if ip.queued > 0 && !r.rearb[ip.sw] {
		r.rearb[ip.sw] = true
		f.eng.Schedule(f.eng.Now(), f, packOp(opRearbitrate, 0, 0), ip.sw, nil)
	}
}

// released frees read port k of input ii and the blocks of the packet
// that went through it. The outputs the read port reaches gain room for
// the input's heads (their epochs grow).
func (r *readPorts) released(ii int32, k, inVL int, blocks int32) *Switch {
	f := r.fab
	r.busy[ii] &^= 1 << uint(k)
	ip := &f.in[ii]
	ip.xbarBusy = false
	f.markReady(ip)
	f.freeInput(ii, inVL, blocks)
	s := &f.sw[ip.sw]
	for po, oi := range s.out {
		if oi >= 0 && r.group(s, po) == k {
			f.out[oi].epoch++
		}
	}
	return s
}

// queueOf routes a packet arriving at ip (the output it would take now)
// and returns the queue of its lane for that output's read port.
func (r *readPorts) queueOf(ip *inPort, p *Packet, cands *[]route.Candidate) int {
	var port int32
	port, *cands = r.fab.selectAtArrival(ip, p, *cands)
	return int(p.VL)*r.nPorts + r.group(&r.fab.sw[ip.sw], int(port))
}

// pciqArch is PCIQ with K sub-crossbars (paper 003 §2.2-§2.3): an input
// memory per port with K read ports, each attached to one N x N/K
// sub-crossbar that reaches the output links po with po mod K = k (§2.2.1:
// "the first crossbar could connect to odd output links and the other
// crossbar to even ones"); no output memories (§2.2.3), so a granted
// packet goes through its sub-crossbar straight onto the link, as in iq.
// The queues of an input memory are split by sub-crossbar (§2.2.1: "one
// for packets addressed to odd links and another one for packets
// addressed to even links"): the packet is routed when it arrives and
// joins the queue of its output's sub-crossbar, per lane (K queues per
// lane). The queues share the memory and its credits (§2.2.2: "a single
// credit counter" per memory); the thesis adds Xon/Xoff per queue, which
// matters only once a queue could fill the memory and is not modelled.
// Arbitration is per packet (§2.2.4); the hierarchical round-robin
// arbiter of Fig. 2.4 is the hrr allocator, and rr and islip(N) work too.
type pciqArch struct {
	vlQueues
	readPorts
	k     int
	cands []route.Candidate
}

func newPCIQ(k int) func(f *Fabric) switchArch {
	return func(f *Fabric) switchArch {
		a := &pciqArch{vlQueues: vlQueues{f}, k: k}
		a.readPorts = readPorts{fab: f, nPorts: k, group: func(_ *Switch, po int) int { return po % k }}
		return a
	}
}

func (a *pciqArch) queuesPerInput() int { return a.f.nVL * a.k }

func (a *pciqArch) enqueue(ip *inPort, p *Packet) int { return a.queueOf(ip, p, &a.cands) }

// room: the output link is free, the next switch has credits for the
// packet, and the read port of the input being tried that reaches the
// output's sub-crossbar is idle.
func (a *pciqArch) room(o *outPort, vl, blocks int32) (bool, int) {
	if o.busy || !a.free(&a.f.sw[o.sw], a.f.room.in, int(o.port)) {
		return false, 0
	}
	return o.credits[vl] >= blocks, int(o.credits[vl])
}

// forward starts the packet on the link at once (after control packets
// already on it) through read port k; its tail leaves the input when it
// leaves the link.
func (a *pciqArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	o := &f.out[oi]
	k := a.group(&f.sw[o.sw], int(o.port))
	f.cutOut = -1
	if k < 4 && o.port < 256 && p.blocks < 512 { // what opLinkReadPortDone's fields hold
		f.withInput = p
	}
	end := f.send(oi, p, vl, max(f.eng.Now(), o.idleAt))
	f.withInput = nil
	if f.cutOut >= 0 {
		f.eng.Schedule(end, f, packOp(opLinkReadPortDone, int(p.inVL), k|int(f.cutOut)<<2|int(o.port)<<6|int(p.blocks)<<14), ii, p)
	} else {
		f.eng.Schedule(end, f, packOp(opReadPortDone, int(p.inVL), k|int(p.blocks)<<4), ii, p)
	}
	a.took(ii, k)
}

func (a *pciqArch) handle(kind int, x int32, inVL, rest int, _ any) {
	f := a.f
	switch kind {
	case opReadPortDone:
		s := a.released(x, rest&15, inVL, int32(rest>>4))
		f.alloc.arbitrate(s)
	case opRearbitrate:
		a.rearb[x] = false
		f.alloc.arbitrate(&f.sw[x])
	case opLinkReadPortDone:
		po, outVL, blocks := rest>>6&255, rest>>2&15, int32(rest>>14)
		f.linkFree(f.sw[f.in[x].sw].out[po], outVL, blocks)
		s := a.released(x, rest&3, inVL, blocks)
		f.alloc.arbitrate(s)
	}
}

func (a *pciqArch) crossbarDone(*outPort)          {}
func (a *pciqArch) next(int32, *outPort, des.Time) {}
func (a *pciqArch) linkDone(*outPort, int, int32)  {}

func (a *pciqArch) waitsFor(o *outPort, vl int, need int32) string {
	return fmt.Sprintf("s%d/p%d/vl%d (%d credits, need %d)", o.sw, o.port, vl, o.credits[vl], need)
}
