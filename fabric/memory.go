package fabric

import (
	"strings"
	"unsafe"
)

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

// PortStateBytes is the state a switch architecture keeps per switch port
// besides its queues: for recn the port record and its SAQ table at the
// input and at the output (arch_recn.go setup); for the architectures
// built on RECN-IQ's input stage (recn-iq, pciq-K+recn-iq, cioq+recn-iq)
// the CAM of every input and output (its SAQ lines, read ports x
// max_saqs, with their detected and full marks: arch_recniq.go setup) and
// the record of which SAQ holds each set-aside packet, at most one per
// credit block of the input buffer; 0 for the others.
func PortStateBytes(cfg Config) int64 {
	switch {
	case cfg.Switch == "recn":
		r := cfg.RECN.resolved()
		return 2 * (int64(unsafe.Sizeof(recnPort{})) + int64(r.MaxSAQs)*int64(unsafe.Sizeof(saq{})))
	case strings.HasSuffix(cfg.Switch, "recn-iq"):
		info, err := lookupArch(cfg.Switch)
		if err != nil {
			return 0
		}
		f := &Fabric{cfg: cfg, blockBytes: int32(max(cfg.CreditBlock, 1)), maxPacket: 1, dataRate: max(cfg.DataRate(), 1), nVL: 1}
		has, ok := info.new(f).(interface{ recnIQ() *recnIQArch })
		if !ok {
			return 0
		}
		lines := int64(has.recnIQ().saqs())
		cam := int64(unsafe.Sizeof(recnIQPort{})) + lines*(int64(unsafe.Sizeof(saq{}))+2)
		setAside := int64(cfg.InputBuffer) / int64(max(cfg.CreditBlock, 1))
		return 2*cam + setAside*whereEntryBytes
	}
	return 0
}

// whereEntryBytes is one entry of RECN-IQ's packet-to-SAQ map (a pointer
// key and an int32 value in a table kept at most 7/8 full that may have
// just doubled).
const whereEntryBytes = 40
