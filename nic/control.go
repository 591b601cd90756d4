package nic

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/injection"
)

// The NIC-level injection gate (papers 001 and 002): before a NIC starts a
// new data packet, in every delivery mode, it asks its injection.Gate. A
// refused packet stays at the head of the NIC's queue and the NIC asks the
// fabric to look again when the gate says its answer may change. ACKs and
// NACKs are never gated. With no gate (No-Lim, the default) Peek and Pop
// test one nil pointer.

// gateState is the injection control of a Network.
type gateState struct {
	ctl   injection.Control
	gates []injection.Gate
	views []gateView
	// wakeAt is, per NIC, the time of the pending wake-up event, or -1.
	wakeAt []des.Time
	// Refusals counts the times a gate held a packet back.
	refusals uint64
	// ports: the gates open and close the NICs' physical injection ports
	// (injection.PortGate) rather than pace one link.
	ports []injection.PortGate
}

// gateView is injection.View for one NIC: what fabric measures locally,
// plus the global figures Self-Tuned reads.
type gateView struct {
	nw *Network
	h  int
}

func (v *gateView) Now() int64 { return int64(v.nw.eng.Now()) }
func (v *gateView) Serialization(b int) int64 {
	return int64(v.nw.fab.SerializationTime(b))
}
func (v *gateView) Lanes() int                  { return v.nw.fab.Lanes() }
func (v *gateView) InjectionCredits(vl int) int { return v.nw.fab.InjectionCredits(v.h, vl) }
func (v *gateView) LocalFreeBlocks(vl int) int  { return v.nw.fab.LocalFreeBlocks(v.h, vl) }
func (v *gateView) UsefulChannels(dst int, buf []int) []int {
	return v.nw.fab.UsefulChannels(v.h, dst, buf)
}
func (v *gateView) ChannelRatio(ch int) (float64, int64, bool) {
	r, at, ok := v.nw.fab.ChannelRatio(v.h, ch)
	return r, int64(at), ok
}
func (v *gateView) ChannelMarked(ch int) (int64, bool) {
	at, ok := v.nw.fab.ChannelMarked(v.h, ch)
	return int64(at), ok
}
func (v *gateView) GlobalFullBuffers() (int, int) { return v.nw.fab.FullBuffers() }
func (v *gateView) GlobalDelivered() uint64       { return v.nw.fab.Stats.Delivered }

// ResolveControl fills in the defaults of an injection-control
// configuration that depend on the network: Trans-t's u1 from paper 001
// Table 1 for the topology and lanes per channel. note says which default
// was taken when the topology is not in the table.
func ResolveControl(c injection.ControlConfig, t *topo.Topology, lanes int) (injection.ControlConfig, string) {
	if c.Resolved() != injection.TransT || c.U1 > 0 {
		return c, ""
	}
	var k []int
	if t.Kind == topo.KindTorus {
		k = t.K
	}
	u1, ok := injection.DefaultU1(k, lanes)
	c.U1 = u1
	if ok {
		return c, ""
	}
	return c, fmt.Sprintf("topology %s with %d lanes per channel is not in paper 001 Table 1 (%s): u1 = the lanes per channel, the paper's starting point (§4.2)",
		t.Name, lanes, injection.U1TableKeys())
}

// CheckControl reports what would make Attach fail for configuration c
// on fabric f: restrictive injection (paper 002 §5.1) whose bubble does
// not fit the switch lanes. A session calls it so that the mistake is an
// error naming the keys rather than a panic.
func CheckControl(c Config, f *fabric.Fabric) error {
	cfg, _ := ResolveControl(c.InjectionControl, f.Topology(), f.Lanes())
	ctl, err := injection.NewControl(cfg, f.Topology().NumHosts())
	if err != nil || ctl == nil {
		return err
	}
	if se, ok := ctl.(injection.SwitchEnforced); ok {
		if err := f.RestrictInjection(se.InjectionBubble()); err != nil {
			return fmt.Errorf("nic.injection_control.policy %s: %w", ctl.Kind(), err)
		}
		return nil
	}
	if q := c.InjectionQueues; q.Count > 1 && q.Mode == injection.Physical {
		if _, ok := ctl.Gate(0).(injection.PortGate); ok {
			return checkPorts(cfg, q)
		}
	}
	return nil
}

// attachControl sets up the gate once the fabric is known.
func (nw *Network) attachControl(f *fabric.Fabric) error {
	cfg, note := ResolveControl(nw.cfg.InjectionControl, f.Topology(), f.Lanes())
	nw.ControlNote = note
	ctl, err := injection.NewControl(cfg, len(nw.hosts))
	if err != nil || ctl == nil {
		return err
	}
	if se, ok := ctl.(injection.SwitchEnforced); ok {
		// Restrictive injection (paper 002 §5.1): the switch checks its
		// injection ports' requests; the NIC keeps no gate.
		if err := f.RestrictInjection(se.InjectionBubble()); err != nil {
			return fmt.Errorf("nic.injection_control.policy %s: %w", ctl.Kind(), err)
		}
		return nil
	}
	g := &gateState{ctl: ctl, gates: make([]injection.Gate, len(nw.hosts)),
		views: make([]gateView, len(nw.hosts)), wakeAt: make([]des.Time, len(nw.hosts))}
	for h := range g.gates {
		g.gates[h] = ctl.Gate(h)
		g.views[h] = gateView{nw: nw, h: h}
		g.wakeAt[h] = -1
	}
	if q := nw.cfg.InjectionQueues; q.Count > 1 && q.Mode == injection.Physical {
		if _, ok := g.gates[0].(injection.PortGate); ok {
			if err := checkPorts(cfg, q); err != nil {
				return err
			}
			g.ports = make([]injection.PortGate, len(g.gates))
			for h := range g.gates {
				g.ports[h] = g.gates[h].(injection.PortGate)
				g.ports[h].UsePorts(q.Count)
			}
		}
	}
	if th := ctl.Measure(&g.views[0]); th > 0 {
		f.MeasureTransmissionTimes(th)
	}
	nw.gate = g
	return nil
}

// checkPorts: a gate that opens and closes injection ports needs one
// channel per physical injection queue.
func checkPorts(cfg injection.ControlConfig, q injection.QueuesConfig) error {
	if cfg.Channels != q.Count {
		return fmt.Errorf("nic.injection_control.channels %d but nic.injection_queues.count %d: %s opens and closes the physical injection ports, one per channel", cfg.Channels, q.Count, cfg.Policy)
	}
	return nil
}

// admit asks NIC h's gate about data packet p at the head of injection
// queue q; when it refuses, a wake-up is scheduled for when it may change
// its answer.
func (nw *Network) admit(h, q int, p *fabric.Packet) bool {
	g := nw.gate
	var ok bool
	var retry int64
	if g.ports != nil {
		ok, retry = g.ports[h].AdmitPort(q, int(p.Dst), int(p.Size), &g.views[h])
	} else {
		ok, retry = g.gates[h].Admit(int(p.Dst), int(p.Size), &g.views[h])
	}
	if ok {
		return true
	}
	g.refusals++
	at := max(des.Time(retry), nw.eng.Now()+1)
	if w := g.wakeAt[h]; w < 0 || at < w {
		g.wakeAt[h] = at
		nw.eng.Schedule(at, nw, 0, int32(h), nil)
	}
	return false
}

var _ fabric.RecoveryGate = (*Network)(nil)

// AdmitRecovered implements fabric.RecoveryGate: a data packet that
// deadlock recovery absorbed at host h goes back into the network on
// injection port q only when h's injection gate admits it, as the host's
// own new packets (paper 001 §3: the gate limits the node's injection
// channels, and a reinjected message takes one of them).
func (nw *Network) AdmitRecovered(h, q int, p *fabric.Packet) bool {
	if nw.gate == nil || p.Kind != KindData {
		return true
	}
	return nw.admit(h, q, p)
}

// RecoveredInjected implements fabric.RecoveryGate: the gate counts the
// reinjected packet's start as it counts the host's own.
func (nw *Network) RecoveredInjected(h int, p *fabric.Packet, at des.Time) {
	if nw.gate != nil && p.Kind == KindData {
		nw.gate.gates[h].Injected(int(p.Size), int64(at), &nw.gate.views[h])
	}
}

// Handle runs the Network's events: the gate's wake-up, and the kick
// after a stalled source queued packets (queues.go); either way NIC h
// asks the fabric to look at its queues again.
func (nw *Network) Handle(ev *des.Event) {
	h := int(ev.A)
	if ev.Op == opQueueKick {
		nw.fab.Kick(h)
		return
	}
	if nw.gate.wakeAt[h] != ev.At {
		return // superseded by an earlier wake-up, which already looked
	}
	nw.gate.wakeAt[h] = -1
	nw.fab.Kick(h)
}

// PortGated reports whether the injection gates open and close the NICs'
// physical injection ports (injection.PortGate) rather than pace one link.
func (nw *Network) PortGated() bool { return nw.gate != nil && nw.gate.ports != nil }

// GateRefusals returns how many times the injection gate held a packet
// back (0 without a gate).
func (nw *Network) GateRefusals() uint64 {
	if nw.gate == nil {
		return 0
	}
	return nw.gate.refusals
}

// popGated tells NIC h's gate that the packet it admitted started.
func (nw *Network) popGated(h int, at des.Time) {
	var p *fabric.Packet
	switch {
	case nw.del != nil:
		p = nw.del.hosts[h].peeked
	case nw.lazy:
		p = nw.headPacket(h)
	case nw.adm != nil:
		p = nw.admHead(h)
	default:
		p = nw.hosts[h].injQ.peek()
	}
	if p != nil && p.Kind == KindData {
		nw.gate.gates[h].Injected(int(p.Size), int64(at), &nw.gate.views[h])
	}
}
