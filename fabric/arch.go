package fabric

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
)

// A switchArch is one switch architecture. Links, ports, lanes, credits,
// routing and the allocator are shared by every architecture; an
// architecture decides
//   - where a packet arriving at an input is queued (enqueue: one FIFO per
//     virtual lane, a virtual output queue, a set-aside queue, ...), which
//     fixes the heads that compete in the allocator;
//   - whether an output can take a granted packet now (room);
//   - what crossing the crossbar does (forward): into an output buffer, or
//     straight onto the link;
//   - what the output link sends next (next) and what a finished
//     transmission frees (linkDone);
//   - what to do with its own control packets and events.
//
// Implementations live in this package (arch_*.go) because they work on
// the fabric's port state; they are chosen by name through archTable.
type switchArch interface {
	// queuesPerInput is how many queues every switch input port has.
	queuesPerInput() int
	// enqueue returns the queue of input ip a packet arriving there joins.
	enqueue(ip *inPort, p *Packet) int
	// room reports whether output o can take a granted packet of blocks
	// on lane vl now, and the room the selection function compares.
	room(o *outPort, vl, blocks int32) (ok bool, free int)
	// forward carries granted packet p from input ii to output oi, lane
	// vl, and schedules the end of its crossbar transfer (opXbarDone, or
	// an event of the architecture's own).
	forward(ii, oi int32, p *Packet, vl int)
	// crossbarDone: a crossbar transfer into output o ended.
	crossbarDone(o *outPort)
	// next starts the next data packet on switch output oi, whose link is
	// free from start on, if the output stage holds one.
	next(oi int32, o *outPort, start des.Time)
	// linkDone: a transmission of blocks on lane vl left switch output o.
	linkDone(o *outPort, vl int, blocks int32)
	// control receives a control packet (not a credit) at out-port oi.
	control(oi int32, c *Control)
	// handle runs the architecture's own events (kinds from opArch on).
	handle(kind int, a int32, vl, blocks int, ref any)
	// waitsFor says, for a deadlock report, what a head that needs blocks
	// on lane vl of output o is waiting for.
	waitsFor(o *outPort, vl int, need int32) string
}

// An injector is an architecture's own stage at the hosts' injection
// ports, set in Fabric.inj by its constructor: transmit hands it the free
// injection link of host port oi from start on instead of sending the
// NIC's head packet itself. It takes packets from the NIC in order
// (Endpoint Peek/Pop), holds only what its memory allows, and sends with
// the credits of the link (recn: the NIC SAQs of paper 000 §4.1).
type injector interface {
	inject(oi int32, o *outPort, start des.Time)
}

// ArchInfo describes one switch architecture of the table.
type ArchInfo struct {
	Name        string
	Description string
	Source      string // paper and section
	// outputBuffered: switch outputs have buffers (fabric.output_buffer),
	// so credits are needed only when the output link sends.
	outputBuffered bool
	// NeedsDeterministic: the architecture works on source routes fixed
	// at injection (RECN's turn sequences), so fabric.New refuses
	// adaptive routing for it.
	NeedsDeterministic bool
	// perLane, for the queue schemes, is how many queues each lane of an
	// input has on switches of ports ports in a network of hosts hosts;
	// the constructor and the memory estimate both use it.
	perLane func(ports, hosts int) int
	new     func(f *Fabric) switchArch
}

// archTable lists the switch architectures fabric.switch may name. To add
// one, write its switchArch in a file of its own and add a line here; the
// conformance suite (fabric/fabrictest) then runs it through every check.
func archTable() []ArchInfo {
	return []ArchInfo{
		{Name: "cioq", Description: "combined input-output queued: one FIFO per virtual lane at each input and an output buffer per lane; a packet crosses the crossbar at crossbar_speedup times the link rate into the output buffer",
			Source: "paper 004 §4.1", outputBuffered: true, new: newCIOQ},
		{Name: "iq", Description: "input-queued: one FIFO per virtual lane at each input; the crossbar feeds the output link directly, so a head is granted only when the link is free and the next switch has credits",
			Source: "paper 003 §2.1, §4.2", new: newIQ},
		{Name: "recn", Description: "RECN for PCI Express AS: the cioq datapath with a normal queue per lane and up to fabric.recn.max_saqs set-aside queues per port, allocated per congested subpath (turn sequence) on notification, matched by longest prefix in a CAM, with markers for order, Xon/Xoff per SAQ and tokens for leaf-first deallocation, and up to fabric.recn.nic_saqs SAQs at each host's injection port that obey Xon/Xoff from the first switch; deterministic routing only", Source: "paper 000 §3, §4.1", outputBuffered: true, NeedsDeterministic: true, new: newRECN},
		{Name: "1q", Description: "paper 000's IQ: one FIFO at every input port (one per lane where a port has several), cioq's output buffers and crossbar", Source: "paper 000 §4.3", outputBuffered: true, perLane: oneQPerLane, new: newOneQ},
		{Name: "4q", Description: "paper 000's 4Q: four queues per lane at every input, a packet joins the least occupied (or the one holding its destination's packets, for order); cioq's output stage with fabric.voq_memory=shared (default), four virtual channels with a share of the memory and credits each, at inputs and outputs, with partitioned (paper 000 §4.1)", Source: "paper 000 §4.3", outputBuffered: true, perLane: fourQPerLane, new: newFourQ},
		{Name: "voqsw", Description: "paper 000's VOQsw: a queue per switch output at every input, chosen when the packet arrives and is routed; cioq's output stage with fabric.voq_memory=shared (default); with partitioned (paper 000 §4.1) every queue has a share of the port memory and credits of its own, and the outputs keep a queue per output of the next switch", Source: "paper 000 §4.3", outputBuffered: true, perLane: voqSwPerLane, new: newVOQsw},
		{Name: "voqnet", Description: "paper 000's VOQnet: a queue per destination host at every input and output, each with an equal share of the port's memory and credits per queue on every link between switches, and on the injection links when the NICs keep an injection queue per destination (nic.model admittance) (the ideal, memory-hungry reference; fabric.voq_memory=partitioned, its default; shared puts the input queues in the lane's memory with the lane's credits and keeps cioq's output stage)", Source: "paper 000 §4.1, §4.3", outputBuffered: true, perLane: voqNetPerLane, new: newVOQnet},
		{Name: "pciq-2", Description: "PCIQ with 2 sub-crossbars: input memories with 2 read ports, each into an N x N/2 sub-crossbar reaching the even or the odd output links, an even and an odd queue per lane (routed at arrival), no output memories; an input may send one packet per read port at once; use with the hrr allocator (Fig. 2.4)", Source: "paper 003 §2.2", new: newPCIQ(2)},
		{Name: "pciq-4", Description: "PCIQ with 4 sub-crossbars: as pciq-2 with 4 read ports and N x N/4 sub-crossbars reaching the output links of port mod 4 = k, a queue per sub-crossbar and lane", Source: "paper 003 §2.3", new: newPCIQ(4)},
		{Name: "hc", Description: "hierarchical crossbar with p = N/2: 2x2 sub-switches of N/2 x N/2 with CIOQ memories; an input memory per column (routed at arrival), each with its own read port, and an output memory per row at every output, so two rows may write into one output at once (internal speedup)", Source: "paper 003 §1.4, §2.7", outputBuffered: true, new: newHC},
		{Name: "cioq-2q", Description: "cioq with two queues per lane at every input, one for even and one for odd output ports (routed at arrival); one read port, cioq's crossbar and output buffers", Source: "paper 003 §2.7", outputBuffered: true, perLane: twoQPerLane, new: newCIOQ2Q},
		{Name: "recn-iq", Description: "RECN-IQ: the iq datapath with a cold queue per lane and up to fabric.recn_iq.max_saqs SAQs with CAM lines at every input and CAM lines (no queues) at every output; congestion detected when the cold queue holds detection_threshold packets, at the output its head requests; a post-processing unit moves head packets into the SAQs their turns match; Xon/Xoff per SAQ carries the congestion upstream, to fabric.recn_iq.nic_saqs SAQs at each host's injection port; the post-processing takes post_processing_delay per head packet and detection runs every cycle; a SAQ is freed when empty and not in Xoff; deterministic routing only", Source: "paper 003 ch. 3, §4.1, §4.2", NeedsDeterministic: true, new: newRECNIQ},
		{Name: "pciq-2+recn-iq", Description: "PCIQ enhanced with RECN-IQ: pciq-2's input memories with 2 read ports into N x N/2 sub-crossbars, each read port with a cold queue per lane and up to fabric.recn_iq.max_saqs SAQs of its own (for the congested points among its outputs), detection at the head of each cold queue, timed post-processing, Xon/Xoff (up to the NICs' SAQs) and output CAM lines as recn-iq; use with the hrr allocator; deterministic routing only", Source: "paper 003 §2.8, §2.9", NeedsDeterministic: true, new: newPCIQRECNIQ(2)},
		{Name: "pciq-4+recn-iq", Description: "pciq-2+recn-iq with 4 read ports and N x N/4 sub-crossbars (pciq-4), max_saqs SAQs per read port", Source: "paper 003 §2.3, §2.8", NeedsDeterministic: true, new: newPCIQRECNIQ(4)},
		{Name: "cioq+recn-iq", Description: "RECN-IQ's input stage (cold queue per lane, max_saqs SAQs, detection, timed post-processing, Xon/Xoff up to the NICs' SAQs) on the cioq datapath: one read port, the crossbar into output buffers; deterministic routing only", Source: "paper 003 §2.9, Fig. 2.18", outputBuffered: true, NeedsDeterministic: true, new: newCIOQRECNIQ},
	}
}

// Architectures returns the switch architectures fabric.switch accepts.
func Architectures() []ArchInfo { return archTable() }

// OutputBuffered reports whether the architecture's outputs have buffers.
func (a ArchInfo) OutputBuffered() bool { return a.outputBuffered }

func lookupArch(name string) (ArchInfo, error) {
	var names []string
	for _, a := range archTable() {
		if a.Name == name {
			return a, nil
		}
		names = append(names, a.Name)
	}
	return ArchInfo{}, fmt.Errorf("unknown switch architecture %q; known: %s", name, strings.Join(names, ", "))
}

// vlQueues is the input side of the architectures that keep one FIFO per
// virtual lane at each input (cioq, iq): a packet joins the queue of the
// lane it arrived on, so only the head of each lane competes.
type vlQueues struct{ f *Fabric }

func (q *vlQueues) queuesPerInput() int            { return q.f.nVL }
func (*vlQueues) enqueue(_ *inPort, p *Packet) int { return int(p.VL) }
func (*vlQueues) control(int32, *Control)          {}
