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
