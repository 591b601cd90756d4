package nic

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
)

// The end node of paper 000 §4.1 (nic.model=admittance): "Every NI is
// modeled as a fixed number of N message admittance queues following a
// VOQ scheme, and a variable number of injection queues ... When a
// message is generated, it is stored completely in the admittance queue
// associated with its destination, and is packetized before being
// transferred to an injection queue. ... The transfer from admittance
// queues to injection queues is controlled by an arbiter that follows a
// round-robin scheme."
//
// Here:
//   - a NIC has an admittance queue per destination host, holding at most
//     nic.admittance.messages whole messages (the paper gives no bound;
//     the bound is a parameter). A source whose message finds the queue
//     full is stalled: a synthetic source does not create the message
//     (Admits, counted as refused); a trace driver's message waits, in
//     generation order with the host's later ones, until the queue has
//     room, so nothing is lost;
//   - an arbiter moves one packet at a time, round robin over the
//     non-empty admittance queues, into the injection queue while it
//     holds fewer than nic.admittance.injection_packets packets;
//   - the injection queue is the one the fabric sends from (its head is
//     Peek's). The output-port scheme behind it is the fabric's: recn's
//     and the RECN-IQ family's NIC SAQs (fabric.recn.nic_saqs,
//     fabric.recn_iq.nic_saqs) take packets from its head into SAQs that
//     obey Xon/Xoff from the first switch, and send round robin with it
//     (the normal queue and the SAQs of §4.1); the other architectures
//     send it as one FIFO on the link's credits.

// Model names of nic.model.
const (
	ModelFIFO       = "fifo"
	ModelAdmittance = "admittance"
)

// AdmittanceConfig sizes the admittance NIC.
type AdmittanceConfig struct {
	Messages         int `yaml:"messages" json:"messages,omitempty" doc:"whole messages one admittance queue (one per destination) holds; a source whose message finds its queue full is stalled (the paper gives no bound; ours: 4)" paper:"000 §4.1" nonzero:"1 to 1048576 messages (leave the key out for the default, 4)"`
	InjectionPackets int `yaml:"injection_packets" json:"injection_packets,omitempty" doc:"packets the injection queue holds; the round-robin arbiter refills it from the admittance queues as packets leave (the paper gives no size; ours: 4)" paper:"000 §4.1" nonzero:"1 to 1048576 packets (leave the key out for the default, 4)"`
}

// DefaultAdmittanceConfig: 4 messages per destination, 4 packets in the
// injection queue (ours: paper 000 gives neither).
func DefaultAdmittanceConfig() AdmittanceConfig {
	return AdmittanceConfig{Messages: 4, InjectionPackets: 4}
}

// IsZero reports whether the sizes are the defaults (or unset), so that
// the JSON summaries of runs that do not change them leave them out.
func (c AdmittanceConfig) IsZero() bool {
	return c.resolved() == DefaultAdmittanceConfig()
}

// resolved fills the sizes a configuration built in code leaves 0 with
// the defaults (a file or --set may not give 0: the nonzero tags).
func (c AdmittanceConfig) resolved() AdmittanceConfig {
	d := DefaultAdmittanceConfig()
	if c.Messages == 0 {
		c.Messages = d.Messages
	}
	if c.InjectionPackets == 0 {
		c.InjectionPackets = d.InjectionPackets
	}
	return c
}

func (c Config) validateModel() error {
	switch c.Model {
	case "", ModelFIFO:
		return nil
	case ModelAdmittance:
	default:
		return fmt.Errorf("nic.model %q: want fifo or admittance", c.Model)
	}
	if c.Admittance.Messages < 0 || c.Admittance.Messages > 1<<20 {
		return fmt.Errorf("nic.admittance.messages %d: want 1 to %d messages", c.Admittance.Messages, 1<<20)
	}
	if c.Admittance.InjectionPackets < 0 || c.Admittance.InjectionPackets > 1<<20 {
		return fmt.Errorf("nic.admittance.injection_packets %d: want 1 to %d packets", c.Admittance.InjectionPackets, 1<<20)
	}
	if c.InjectionQueues.Count > 1 {
		return fmt.Errorf("nic.model admittance: its injection queue follows the switch's output scheme; nic.injection_queues.count %d is the paper 002 interface of the fifo model", c.InjectionQueues.Count)
	}
	if c.Delivery.Mode == DeliveryAdaptiveInOrder {
		return fmt.Errorf("nic.model admittance: adaptive-inorder schedules its connections itself; use nic.model fifo")
	}
	return nil
}

// admQueue is one admittance queue: the packets of its whole messages and
// how many messages they are.
type admQueue struct {
	pkts pktQueue
	msgs int
}

// admHost is one NIC's admittance state.
type admHost struct {
	// q holds the queues of the destinations with packets waiting; an
	// empty queue goes back to free, so a NIC keeps state only for the
	// destinations it has packets for (512 hosts would otherwise cost
	// 512 x 512 queues).
	q    map[int32]*admQueue
	free []*admQueue
	// active lists the destinations whose queues hold packets, in the
	// arbiter's round-robin order.
	active []int32
	// stalled holds, in generation order, the messages of a stalled
	// source (trace drivers): the first waits for room in its queue.
	stalled []*Message
}

// admState is the admittance NICs of a Network.
type admState struct {
	cfg   AdmittanceConfig
	hosts []admHost
	// Refused counts messages a synthetic source did not create because
	// their admittance queue was full (Admits).
	Refused uint64
}

func newAdmState(cfg AdmittanceConfig, n int) *admState {
	a := &admState{cfg: cfg.resolved(), hosts: make([]admHost, n)}
	for h := range a.hosts {
		a.hosts[h].q = map[int32]*admQueue{}
	}
	return a
}

// Admits reports whether host src's admittance queue for dst has room
// for a message now (always true for the fifo model). A synthetic source
// that finds no room does not create the message (paper 000's source is
// stalled by its full admittance queue) and tells Refuse.
func (nw *Network) Admits(src, dst int) bool {
	a := nw.adm
	if a == nil {
		return true
	}
	h := &a.hosts[src]
	return len(h.stalled) == 0 && h.msgs(int32(dst)) < a.cfg.Messages
}

// msgs is the messages in h's queue for dst.
func (h *admHost) msgs(dst int32) int {
	if q := h.q[dst]; q != nil {
		return q.msgs
	}
	return 0
}

// Refuse counts a message a source did not create because Admits said no.
func (nw *Network) Refuse() {
	if nw.adm != nil {
		nw.adm.Refused++
	}
}

// AdmittanceRefused returns the messages refused so far (0 for fifo).
func (nw *Network) AdmittanceRefused() uint64 {
	if nw.adm == nil {
		return 0
	}
	return nw.adm.Refused
}

// admitMessage stores the packets of message m (already numbered) in src's
// admittance queue for its destination, or stalls it behind the host's
// stalled messages, and refills the injection queue.
func (nw *Network) admitMessage(m *Message, pkts []*fabric.Packet) {
	a := nw.adm
	h := &a.hosts[m.Src]
	if len(h.stalled) > 0 || h.msgs(int32(m.Dst)) >= a.cfg.Messages {
		m.stalledPkts = pkts
		h.stalled = append(h.stalled, m)
		return
	}
	nw.store(h, m.Dst, pkts)
	nw.refill(m.Src)
}

func (nw *Network) store(h *admHost, dst int, pkts []*fabric.Packet) {
	q := h.q[int32(dst)]
	if q == nil {
		if n := len(h.free); n > 0 {
			q, h.free = h.free[n-1], h.free[:n-1]
		} else {
			q = &admQueue{}
		}
		h.q[int32(dst)] = q
		h.active = append(h.active, int32(dst))
	}
	q.msgs++
	for _, p := range pkts {
		q.pkts.push(p)
	}
}

// refill moves packets round robin from host hi's admittance queues into
// its injection queue while it has room; a message's last packet leaving
// its queue frees a place for the host's stalled messages.
func (nw *Network) refill(hi int) {
	a := nw.adm
	h := &a.hosts[hi]
	inj := &nw.hosts[hi].injQ
	for inj.size < a.cfg.InjectionPackets && len(h.active) > 0 {
		dst := h.active[0]
		q := h.q[dst]
		p := q.pkts.pop()
		inj.push(p)
		nw.hosts[hi].queuedWire += int64(p.Size)
		if next := q.pkts.peek(); next == nil || next.Ref != p.Ref {
			q.msgs--
		}
		h.active = h.active[1:]
		if q.pkts.size > 0 {
			h.active = append(h.active, dst)
		} else {
			delete(h.q, dst)
			h.free = append(h.free, q)
		}
		for len(h.stalled) > 0 {
			m := h.stalled[0]
			if h.msgs(int32(m.Dst)) >= a.cfg.Messages {
				break
			}
			h.stalled = h.stalled[1:]
			nw.store(h, m.Dst, m.stalledPkts)
			m.stalledPkts = nil
		}
	}
}

// AdmittanceQueued returns the packets host h holds in its admittance
// queues and stalled messages (0 for fifo), for conservation checks.
func (nw *Network) AdmittanceQueued(hi int) int {
	if nw.adm == nil {
		return 0
	}
	h := &nw.adm.hosts[hi]
	n := 0
	for _, d := range h.active {
		n += h.q[d].pkts.size
	}
	for _, m := range h.stalled {
		n += len(m.stalledPkts)
	}
	return n
}
