package fabric

import (
	"strings"
	"unsafe"

	"github.com/fabemu/fabemu/fabric/des"
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
// the architectures built on RECN-IQ's input stage (recn-iq,
// pciq-K+recn-iq, cioq+recn-iq) the CAM of every input and output (its
// SAQ lines, read ports x max_saqs, with their detected and full marks:
// arch_recniq.go setup), the record of which SAQ holds each set-aside
// packet, at most one per credit block of the input buffer, and with a
// timed post-processing unit the ready time of each queue's head
// (arch_recniq_ppu.go; one lane counted); for hc the lanes, FIFOs and
// source lists of the extra output memories, the read-port transfers and
// the per-row busy flags (arch_hc.go setup); for voqnet, in a network of
// hosts hosts, the output queue of every lane and destination at every
// switch output with its stored blocks, its credits at the next input and
// its place in the link's round-robin order (arch_voqmem.go setup: paper
// 000 §4.1 gives the VOQ schemes per-queue memory and credits), and the
// same for voqsw (a queue per output of a switch of ports ports) and 4q
// (four) with fabric.voq_memory=partitioned; 0 for the others.
func PortStateBytes(cfg Config, nVL, ports, hosts int) int64 {
	switch {
	case cfg.Wormhole():
		return wormholePortBytes(nVL)
	case cfg.Switch == "voqnet" && partitionedCfg(cfg):
		return int64(nVL) * int64(voqNetPerLane(0, hosts)) * voqNetOutQueueBytes
	case cfg.Switch == "voqsw" && partitionedCfg(cfg):
		return int64(nVL) * int64(voqSwPerLane(ports, 0)) * voqNetOutQueueBytes
	case cfg.Switch == "4q" && partitionedCfg(cfg):
		return int64(nVL) * fourQueues * voqNetOutQueueBytes
	case cfg.Switch == "recn":
		r := cfg.RECN.resolved()
		return 2 * (int64(unsafe.Sizeof(recnPort{})) + int64(r.MaxSAQs)*int64(unsafe.Sizeof(saq{})))
	case cfg.Switch == "hc":
		perMemory := int64(unsafe.Sizeof(lane{})+unsafe.Sizeof(fifo{})+unsafe.Sizeof([]int16(nil))) * int64(nVL)
		return hcRows*perMemory + hcRows*(4+1) + 1 + 2
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
		a := has.recnIQ()
		lines := int64(a.saqs())
		cam := int64(unsafe.Sizeof(recnIQPort{})) + lines*(int64(unsafe.Sizeof(saq{}))+2)
		setAside := int64(cfg.InputBuffer) / int64(max(cfg.CreditBlock, 1))
		n := 2*cam + setAside*whereEntryBytes
		if a.cfg.PostProcessing != PPInstant {
			n += int64(a.queuesPerInput()) * int64(unsafe.Sizeof(des.Time(0)))
		}
		return n
	}
	return 0
}

// HostStateBytes is the state a switch architecture keeps per host
// besides the NIC's own, and the most packets it may hold per host of
// packetBytes each: for the architectures built on RECN-IQ's input stage
// with nic_saqs > 0 the NIC's SAQ table (arch_recniq_nic.go) and the
// packets its SAQ memory (nic_saq_memory) holds, which are taken from the
// NIC's queue and so escape the bound on packets waiting at the sources;
// 0, 0 otherwise.
func HostStateBytes(cfg Config, packetBytes int) (state, packets int64) {
	if !strings.HasSuffix(cfg.Switch, "recn-iq") {
		return 0, 0
	}
	r := cfg.RECNIQ.resolved()
	if r.NICSAQs <= 0 {
		return 0, 0
	}
	block := int64(max(cfg.CreditBlock, 1))
	per := (int64(max(packetBytes, 1)) + block - 1) / block // blocks per packet
	memBlocks := (int64(min(r.NICMemory, 1<<40)) + block - 1) / block
	state = int64(unsafe.Sizeof(recnIQNIC{})) + int64(r.NICSAQs)*int64(unsafe.Sizeof(saq{}))
	return state, max(memBlocks/max(per, 1), 1)
}

func partitionedCfg(c Config) bool { m, _ := voqMemory(c); return m == VOQPartitioned }

// voqNetOutQueueBytes is one partitioned output queue's state: its FIFO, its
// stored blocks (qused), its credits at the next input (qcr) and its entry
// in the link's list of active queues.
const voqNetOutQueueBytes = int64(unsafe.Sizeof(fifo{})) + 3*int64(unsafe.Sizeof(int32(0)))

// whereEntryBytes is one entry of RECN-IQ's packet-to-SAQ map (a pointer
// key and an int32 value in a table kept at most 7/8 full that may have
// just doubled).
const whereEntryBytes = 40
