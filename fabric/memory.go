package fabric

import "unsafe"

// QueuesPerInput is how many queues every switch input port has under
// cfg's switch architecture with nVL virtual lanes on switches of ports
// ports in a network of hosts hosts, asked of the architecture table (so
// a new architecture's queues count without changing the memory
// estimate). An unknown architecture counts nVL.
func QueuesPerInput(cfg Config, nVL, maxPacket, ports, hosts int) int {
	info, err := lookupArch(cfg.Switch)
	if err != nil {
		return nVL
	}
	if info.perLane != nil {
		return nVL * info.perLane(ports, hosts)
	}
	f := &Fabric{cfg: cfg, blockBytes: int32(max(cfg.CreditBlock, 1)), maxPacket: int32(max(maxPacket, 1)),
		dataRate: max(cfg.DataRate(), 1), nVL: nVL}
	return info.new(f).queuesPerInput()
}

// PacketBytes is the size of one packet's state in memory.
const PacketBytes = int64(unsafe.Sizeof(Packet{}))

// QueueBytes is the size of one input queue's state: a queue holds no
// memory of its own besides it (packets are linked through the queue),
// until its head is routed and keeps its candidate outputs.
const QueueBytes = int64(unsafe.Sizeof(queue{}))

// OutputMemories is how many output memories of fabric.output_buffer
// bytes every switch output port has under cfg's switch architecture: 0
// for the architectures without output buffers (iq, pciq-K), one per row
// of sub-switches for hc (arch_hc.go: an output link is fed by one
// sub-switch output memory per row), 1 for the others.
func OutputMemories(cfg Config) int {
	info, err := lookupArch(cfg.Switch)
	switch {
	case err != nil:
		return 1
	case !info.outputBuffered:
		return 0
	case cfg.Switch == "hc":
		return hcRows
	}
	return 1
}

// PortStateBytes is the state a switch architecture keeps per switch port
// besides its queues, with nVL virtual lanes: for recn the port record and
// its SAQ table at the input and at the output (arch_recn.go setup); for
// hc the lanes, FIFOs and source lists of the extra output memories, the
// read-port transfers and the per-row busy flags (arch_hc.go setup); 0 for
// the others.
func PortStateBytes(cfg Config, nVL int) int64 {
	switch cfg.Switch {
	case "recn":
		r := cfg.RECN.resolved()
		return 2 * (int64(unsafe.Sizeof(recnPort{})) + int64(r.MaxSAQs)*int64(unsafe.Sizeof(saq{})))
	case "hc":
		perMemory := int64(unsafe.Sizeof(lane{})+unsafe.Sizeof(fifo{})+unsafe.Sizeof([]int16(nil))) * int64(nVL)
		return hcRows*perMemory + hcRows*(4+1) + 1 + 2
	}
	return 0
}
