package nic

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/injection"
)

// Several injection queues per NIC (paper 002 §2): each new packet goes
// to the queue its selection policy (injection.SelectPolicies) picks, and
// queue q feeds the NIC's injection port q at the switch
// (fabric.QueueEndpoint). Queue 0 is the host's single queue of a
// one-queue NIC, so one queue (the default) takes none of this.

// queueState holds the queues beyond the first, per host.
type queueState struct {
	sel  injection.SelectInfo
	n    int
	more [][]pktQueue // per host, queues 1..n-1
	// portQ maps, per switch, a port to its queue (-1 for host ports).
	portQ [][]int8
	t     *topo.Topology
	view  queueView
	// cap is the packets a queue holds (0: unbounded); backlog holds,
	// per host, the packets of a stalled source in generation order.
	cap     int
	backlog []pktQueue
}

// validateQueues checks nic.injection_queues on its own.
func (c Config) validateQueues() error {
	if err := c.InjectionQueues.Validate(); err != nil {
		return err
	}
	if c.InjectionQueues.Count > 1 && c.Delivery.Mode == DeliveryAdaptiveInOrder {
		return fmt.Errorf("nic.injection_queues.count %d: adaptive-inorder schedules its connections on one injection queue; use 1 queue or another delivery mode", c.InjectionQueues.Count)
	}
	return nil
}

// CheckQueues checks nic.injection_queues against the topology and the
// routing: lpath reads coordinates, which only k-ary n-cubes have; sh and
// shp spread one flow over several queues, which breaks the order that
// deterministic routing promises (ordered).
func CheckQueues(c Config, t *topo.Topology, ordered bool) error {
	q := c.InjectionQueues
	if q.Count <= 1 {
		return nil
	}
	if c.Delivery.Mode == DeliveryAdaptiveInOrder {
		return c.validateQueues()
	}
	if s, ok := injection.LookupSelect(q.Select); ok && s.NeedsCoords && t.Kind != topo.KindTorus && t.Kind != topo.KindMesh {
		return fmt.Errorf("nic.injection_queues.select %s needs switch coordinates (a torus or mesh); topology %s has none: use sh, shp or static", q.Select, t.Name)
	}
	if s, ok := injection.LookupSelect(q.Select); ok && !s.FlowOrder && ordered {
		return fmt.Errorf("nic.injection_queues.select %s puts the packets of one flow in different queues, which breaks the in-order delivery deterministic routing promises: use lpath or static, or adaptive routing", q.Select)
	}
	return nil
}

// attachQueues sets up the extra queues once the fabric is known.
func (nw *Network) attachQueues(f *fabric.Fabric) error {
	c := nw.cfg.InjectionQueues
	if c.Count <= 1 {
		return nil
	}
	if nw.del != nil {
		return nw.cfg.validateQueues()
	}
	if err := CheckQueues(nw.cfg, f.Topology(), nw.mode == DeliveryDeterministic); err != nil {
		return err
	}
	if f.InjectionPorts() != c.Count {
		return fmt.Errorf("nic.injection_queues.count %d but the fabric has %d injection ports per host", c.Count, f.InjectionPorts())
	}
	sel, _ := injection.LookupSelect(c.Select)
	t := f.Topology()
	qs := &queueState{sel: sel, n: c.Count, more: make([][]pktQueue, len(nw.hosts)), t: t, cap: c.Capacity}
	if c.Capacity > 0 {
		qs.backlog = make([]pktQueue, len(nw.hosts))
	}
	for h := range qs.more {
		qs.more[h] = make([]pktQueue, c.Count-1)
	}
	qs.portQ = make([][]int8, t.NumSwitches())
	for s := range qs.portQ {
		m := make([]int8, t.Switches[s].Ports)
		rank := 0
		for p := range m {
			if _, host := t.HostAt(s, p); host {
				m[p] = -1
				continue
			}
			m[p] = int8(rank % c.Count)
			rank++
		}
		qs.portQ[s] = m
	}
	qs.view.nw = nw
	nw.iq = qs
	return nil
}

// queue returns queue q of host h.
func (nw *Network) queue(h, q int) *pktQueue {
	if q == 0 {
		return &nw.hosts[h].injQ
	}
	return &nw.iq.more[h][q-1]
}

// push places packet p of host h in the queue the selection policy picks;
// if that queue is full, or the source is already stalled, p waits in the
// host's backlog (paper 002 §2: "when the queue of the selected port is
// full, the generation of packets stalls until the packet is successfully
// queued").
func (qs *queueState) push(nw *Network, h int, p *fabric.Packet) {
	if qs.cap > 0 && qs.backlog[h].size > 0 {
		qs.backlog[h].push(p)
		return
	}
	qs.view.h, qs.view.dst = h, int(p.Dst)
	q := nw.queue(h, qs.sel.Pick(&qs.view))
	if qs.cap > 0 && q.size >= qs.cap {
		qs.backlog[h].push(p)
		return
	}
	q.push(p)
}

// popped is told that a queue of host h lost its head: a stalled source
// moves its waiting packets into the queues while they have room, and the
// fabric is asked (by an event now, not from inside its own transmit) to
// look at the host's ports again.
func (qs *queueState) popped(nw *Network, h int) {
	if qs.cap == 0 || qs.backlog[h].size == 0 {
		return
	}
	b := &qs.backlog[h]
	moved := false
	for b.size > 0 {
		p := b.peek()
		qs.view.h, qs.view.dst = h, int(p.Dst)
		q := nw.queue(h, qs.sel.Pick(&qs.view))
		if q.size >= qs.cap {
			break
		}
		q.push(b.pop())
		moved = true
	}
	if moved {
		nw.eng.Schedule(nw.eng.Now(), nw, opQueueKick, int32(h), nil)
	}
}

// opQueueKick is the Network's event that makes the fabric look at a
// host's injection ports after its stalled source queued packets.
const opQueueKick = 1

// PeekQueue implements fabric.QueueEndpoint.
func (nw *Network) PeekQueue(h, q int) *fabric.Packet {
	p := nw.queue(h, q).peek()
	if nw.gate != nil && p != nil && p.Kind == KindData && !nw.admit(h, q, p) {
		return nil
	}
	return p
}

// PopQueue implements fabric.QueueEndpoint.
func (nw *Network) PopQueue(h, q int, at des.Time) {
	p := nw.queue(h, q).pop()
	if nw.gate != nil && p.Kind == KindData {
		nw.gate.gates[h].Injected(int(p.Size), int64(at), &nw.gate.views[h])
	}
	nw.hosts[h].queuedWire -= int64(p.Size)
	nw.Queued--
	nw.iq.popped(nw, h)
}

// queueView is injection.QueueView for one packet of host h to dst.
type queueView struct {
	nw     *Network
	h, dst int
	ports  []int
}

func (v *queueView) Queues() int   { return v.nw.iq.n }
func (v *queueView) Len(q int) int { return v.nw.queue(v.h, q).size }

func (v *queueView) Minimal(buf []int) []int {
	v.ports = v.nw.fab.UsefulChannels(v.h, v.dst, v.ports[:0])
	sw, _ := v.nw.fab.Router().HostSwitch(v.h)
	m := v.nw.iq.portQ[sw]
outer:
	for _, p := range v.ports {
		q := int(m[p])
		if q < 0 {
			continue
		}
		for _, have := range buf {
			if have == q {
				continue outer
			}
		}
		buf = append(buf, q)
	}
	return buf
}

func (v *queueView) Deterministic() int {
	sw, _ := v.nw.fab.Router().HostSwitch(v.h)
	return max(0, int(v.nw.iq.portQ[sw][v.nw.fab.EscapePort(v.h, v.dst)]))
}

func (v *queueView) Offsets(buf []int) []int {
	t := v.nw.iq.t
	if t.Kind != topo.KindTorus && t.Kind != topo.KindMesh {
		return nil
	}
	r := v.nw.fab.Router()
	s, _ := r.HostSwitch(v.h)
	d, _ := r.HostSwitch(v.dst)
	return injection.CubeOffsets(t.Switches[s].Coord, t.Switches[d].Coord, t.K, t.Kind == topo.KindTorus, buf)
}
