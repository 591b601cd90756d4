package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
)

// Several injection channels per host (paper 002 §2, Figures 1 and 2): a
// NIC with n injection queues has n injection ports at its switch, each
// with its own input buffer. The topology knows one host port per host
// (port 0 of the host side, which also ejects); the fabric adds the other
// n-1 as extra switch ports numbered after the topology's, cabled to extra
// host ports. Routing treats an extra port as the host's own port (a
// packet entering there is injected by that host). Physical channels are
// links of their own (4_phy_inj); virtual ones share one physical link:
// a host sends on at most one of them at a time (4_vir_inj, "the
// processing node can send a packet from only one injection queue to the
// router core at a time", §4.1). Extra ports only inject: nothing is ever
// routed to them, and their reverse links carry only credits.

// QueueEndpoint is an Endpoint with several injection queues: the fabric
// pulls from queue q for injection port q (queue 0 is Peek/Pop's).
type QueueEndpoint interface {
	Endpoint
	PeekQueue(h, q int) *Packet
	PopQueue(h, q int, at des.Time)
}

// injPorts is the state of hosts with several injection ports.
type injPorts struct {
	ep     QueueEndpoint
	outs   [][]int32 // per host, the out-port of each injection port (outs[h][0] = hostOut[h])
	shared bool      // virtual channels: one physical link per host
	rr     []int8    // per host, the port to try first (shared links)
}

// addInjectionPorts gives every host n injection ports; newIn and newNIC
// make the lanes of a switch input and of a NIC reception buffer.
func (f *Fabric) addInjectionPorts(n int, shared bool, nQueues int, outCaps []int32,
	newLanes func([]int32) []lane, inCaps, nicCaps []int32, connect func(o, i int32)) error {
	qe, ok := f.ep.(QueueEndpoint)
	if !ok {
		return fmt.Errorf("fabric: %d injection ports per host need a NIC with as many injection queues", n)
	}
	if f.inj != nil {
		return fmt.Errorf("fabric.switch %s runs the injection links itself%s; it takes one injection port per host, not %d", f.cfg.Switch, injectorHint(f.cfg), n)
	}
	ip := &injPorts{ep: qe, outs: make([][]int32, len(f.hostOut)), shared: shared, rr: make([]int8, len(f.hostOut))}
	for s := range f.sw {
		f.sw[s].nTopo = len(f.sw[s].in)
	}
	for h := range f.hostOut {
		swID, hp := f.router.HostSwitch(h)
		s := &f.sw[swID]
		ip.outs[h] = []int32{f.hostOut[h]}
		for q := 1; q < n; q++ {
			p := int32(len(s.in))
			si := int32(len(f.in))
			qs, ne := newInQueues(nQueues)
			f.in = append(f.in, inPort{sw: int32(swID), host: -1, port: p, lanes: newLanes(inCaps), queues: qs, nonEmpty: ne})
			so := int32(len(f.out))
			op := outPort{sw: int32(swID), host: -1, port: p}
			if outCaps != nil {
				op.lanes = newLanes(outCaps)
				op.outq = make([]fifo, f.nVL)
			}
			f.out = append(f.out, op)
			s.in, s.out = append(s.in, si), append(s.out, so)
			s.injAs = append(s.injAs, int32(hp))
			hi := int32(len(f.in))
			f.in = append(f.in, inPort{sw: -1, host: int32(h), port: int32(q), lanes: newLanes(nicCaps)})
			ho := int32(len(f.out))
			f.out = append(f.out, outPort{sw: -1, host: int32(h), port: int32(q)})
			ip.outs[h] = append(ip.outs[h], ho)
			connect(ho, si)
			connect(so, hi)
		}
	}
	f.injp = ip
	return nil
}

// routePort is the port the router knows input port pi of switch s by:
// itself, or for an extra injection port the host's port.
func (s *Switch) routePort(pi int) int {
	if s.injAs != nil && pi >= s.nTopo {
		return int(s.injAs[pi-s.nTopo])
	}
	return pi
}

// hostReverse is the out-port on the cable of host h's reception port p.
func (f *Fabric) hostReverse(h, p int) int32 {
	if p == 0 {
		return f.hostOut[h]
	}
	return f.injp.outs[h][p]
}

// peekHost asks the NIC for the packet injection port o would send.
func (f *Fabric) peekHost(o *outPort) *Packet {
	if o.port == 0 {
		return f.ep.Peek(int(o.host))
	}
	return f.injp.ep.PeekQueue(int(o.host), int(o.port))
}

// popHost tells the NIC injection port o took its packet.
func (f *Fabric) popHost(o *outPort, at des.Time) {
	if o.port == 0 {
		f.ep.Pop(int(o.host), at)
		return
	}
	f.injp.ep.PopQueue(int(o.host), int(o.port), at)
}

// sharedBusy reports whether another virtual injection channel of o's
// host holds the physical link, and otherwise when the link is free of
// the credit packets sent on it.
func (f *Fabric) sharedBusy(o *outPort, start des.Time) (bool, des.Time) {
	for _, oi := range f.injp.outs[o.host] {
		s := &f.out[oi]
		if s != o && s.busy {
			return true, start
		}
		start = max(start, s.idleAt)
	}
	return false, start
}

// kickHost tries every injection port of host h, starting, on a shared
// link, with the one after the port that sent last (round robin).
func (f *Fabric) kickHost(h int) {
	outs := f.injp.outs[h]
	first := int(f.injp.rr[h])
	for i := range outs {
		f.transmit(outs[(first+i)%len(outs)])
	}
}

// injectedOn records, for round robin on a shared link, that port p of
// host h started a packet.
func (f *Fabric) injectedOn(o *outPort) {
	if f.injp.shared {
		f.injp.rr[o.host] = int8((int(o.port) + 1) % len(f.injp.outs[o.host]))
	}
}

// InjectionPorts returns the injection ports per host.
func (f *Fabric) InjectionPorts() int {
	if f.injp == nil {
		return 1
	}
	return len(f.injp.outs[0])
}

// EscapePort returns the port of host h's switch that the deterministic
// (escape) route of a packet from h to dst takes: the host's port when
// dst is on the same switch.
func (f *Fabric) EscapePort(h, dst int) int {
	sw, port := f.router.HostSwitch(h)
	f.localCands = f.router.Candidates(sw, port, 0, dst, f.localCands[:0])
	return int(f.localCands[len(f.localCands)-1].Port)
}

// extraPort reports whether o is one of the injection ports added to the
// topology's (either end).
func (f *Fabric) extraPort(o *outPort) bool {
	if o.host >= 0 {
		return o.port > 0
	}
	return int(o.port) >= f.sw[o.sw].nTopo
}
