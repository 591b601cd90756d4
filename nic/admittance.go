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
//   - the injection queues follow the queues of the first switch's input
//     (fabric.InjectionQueues, InjectionQueue): one FIFO for iq, cioq and
//     1q, a queue per output of the first switch for voqsw, per
//     destination for voqnet, one of four for 4q (the flow's while it
//     has packets there, else the least occupied counting the NIC's and
//     the input's packets); the NIC is the output port upstream of that
//     input, so its queues follow "the same scheme used at switch output
//     ports". The packet carries the queue chosen (Packet.FirstQueue) and
//     joins it at the first switch;
//   - an arbiter moves one packet at a time, round robin over the
//     non-empty admittance queues, into the injection queue of the head
//     packet while that queue holds fewer than
//     nic.admittance.injection_packets packets; a head whose injection
//     queue is full is passed over, so it does not hold up the others;
//   - a second arbiter offers the fabric the head of the first injection
//     queue, in round-robin order, that the first switch can take now
//     (fabric.InjectionReady: the link's credits and, with
//     fabric.voq_memory=partitioned, the credits of its queue there:
//     §4.1's "credit-based flow control at the queue level"); a queue
//     that sends goes to the back of the order. A blocked destination or
//     output of the first switch therefore does not block a packet for
//     another at the NIC (no HOL blocking at the source for voqnet and
//     voqsw);
//   - recn's and the RECN-IQ family's SAQs at the injection port
//     (fabric.recn.nic_saqs, fabric.recn_iq.nic_saqs) are those
//     architectures' own injection stage: they take packets from the
//     head of the NIC's one injection queue (the normal queue) into SAQs
//     that obey Xon/Xoff from the first switch, and send round robin
//     with it (the normal queue and the SAQs of §4.1).

// Model names of nic.model.
const (
	ModelFIFO       = "fifo"
	ModelAdmittance = "admittance"
)

// AdmittanceConfig sizes the admittance NIC.
type AdmittanceConfig struct {
	Messages         int `yaml:"messages" json:"messages,omitempty" doc:"whole messages one admittance queue (one per destination) holds; a source whose message finds its queue full is stalled (the paper gives no bound; ours: 4)" paper:"000 §4.1" nonzero:"1 to 1048576 messages (leave the key out for the default, 4)"`
	InjectionPackets int `yaml:"injection_packets" json:"injection_packets,omitempty" doc:"packets one injection queue holds (one per queue of the first switch's input: per destination for voqnet, per output for voqsw, four for 4q, one otherwise); the round-robin arbiter refills them from the admittance queues as packets leave (the paper gives no size; ours: 4)" paper:"000 §4.1" nonzero:"1 to 1048576 packets (leave the key out for the default, 4)"`
}

// DefaultAdmittanceConfig: 4 messages per destination, 4 packets per
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
	// inj are the injection queues by the first switch's queue they feed
	// (nil until first used); injActive lists those holding packets in
	// the injection arbiter's round-robin order; picked is the position
	// in injActive of the queue whose head Peek offered.
	inj       []*pktQueue
	injFree   []*pktQueue
	injActive []int32
	picked    int
	// flows maps a destination with packets in the injection queues to
	// the queue they are in and how many, so that a flow's packets keep
	// one queue (4Q chooses by occupancy; paper 000's flows are in order).
	flows map[int32]admFlow
	// held is the packets in the injection queues.
	held int
}

type admFlow struct{ q, n int32 }

// admState is the admittance NICs of a Network.
type admState struct {
	cfg   AdmittanceConfig
	hosts []admHost
	// nq is the injection queues per NIC: the queues per lane of the
	// first switch's input (fabric.InjectionQueues; 1 until Attach).
	nq int
	// Refused counts messages a synthetic source did not create because
	// their admittance queue was full (Admits).
	Refused uint64
}

func newAdmState(cfg AdmittanceConfig, n int) *admState {
	a := &admState{cfg: cfg.resolved(), hosts: make([]admHost, n), nq: 1}
	for h := range a.hosts {
		a.hosts[h].q = map[int32]*admQueue{}
		a.hosts[h].flows = map[int32]admFlow{}
	}
	return a
}

// attach sizes the injection queues for fabric f.
func (a *admState) attach(f *fabric.Fabric) {
	a.nq = f.InjectionQueues()
	if a.nq > 1 {
		f.KeyInjectionQueues()
	}
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
// stalled messages, refills the injection queues and tells the fabric
// when a packet entered an empty one.
func (nw *Network) admitMessage(m *Message, pkts []*fabric.Packet) {
	a := nw.adm
	h := &a.hosts[m.Src]
	if len(h.stalled) > 0 || h.msgs(int32(m.Dst)) >= a.cfg.Messages {
		m.stalledPkts = pkts
		h.stalled = append(h.stalled, m)
		return
	}
	nw.store(h, m.Dst, pkts)
	if nw.refill(m.Src) && nw.fab != nil {
		nw.fab.Kick(m.Src)
	}
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

// injKey is the injection queue packet p of host hi goes to: its flow's,
// while the flow has packets in one, else the first switch's queue the
// fabric names for it.
func (nw *Network) injKey(hi int, h *admHost, p *fabric.Packet) int32 {
	if nw.adm.nq == 1 {
		return 0
	}
	if fl, ok := h.flows[p.Dst]; ok {
		return fl.q
	}
	return int32(nw.fab.InjectionQueue(hi, p, func(k int) int {
		if h.inj == nil || h.inj[k] == nil {
			return 0
		}
		return h.inj[k].size
	}))
}

// injQueue returns h's injection queue k, making it if need be.
func (a *admState) injQueue(h *admHost, k int32) *pktQueue {
	if h.inj == nil {
		h.inj = make([]*pktQueue, a.nq)
	}
	q := h.inj[k]
	if q == nil {
		if n := len(h.injFree); n > 0 {
			q, h.injFree = h.injFree[n-1], h.injFree[:n-1]
		} else {
			q = &pktQueue{}
		}
		h.inj[k] = q
	}
	return q
}

// refill moves packets round robin from host hi's admittance queues into
// their injection queues while those have room: an admittance queue
// whose head's injection queue is full is passed over (it keeps its
// place in the order) until a round moves nothing. A message's last
// packet leaving its queue frees a place for the host's stalled
// messages. It reports whether a packet entered an empty injection queue
// (a new head the fabric may send).
func (nw *Network) refill(hi int) (newHead bool) {
	a := nw.adm
	h := &a.hosts[hi]
	capacity := a.cfg.InjectionPackets
	for idle := 0; idle < len(h.active); {
		dst := h.active[0]
		q := h.q[dst]
		p := q.pkts.peek()
		k := nw.injKey(hi, h, p)
		iq := a.injQueue(h, k)
		if iq.size >= capacity {
			if a.nq == 1 {
				break // the one injection queue is full
			}
			h.active = append(h.active[1:], dst) // passed over
			idle++
			continue
		}
		idle = 0
		q.pkts.pop()
		if a.nq > 1 {
			p.FirstQueue = k + 1
			fl := h.flows[p.Dst]
			h.flows[p.Dst] = admFlow{q: k, n: fl.n + 1}
		}
		if iq.size == 0 {
			h.injActive = append(h.injActive, k)
			newHead = true
		}
		iq.push(p)
		h.held++
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
	return newHead
}

// admPeek returns the head of the first of host hi's injection queues, in
// round-robin order, that the fabric can send now, or nil. With one
// injection queue it is that queue's head (the fabric, or recn's NIC
// SAQs, then check the credits).
func (nw *Network) admPeek(hi int) *fabric.Packet {
	h := &nw.adm.hosts[hi]
	for j, k := range h.injActive {
		p := h.inj[k].peek()
		if nw.adm.nq == 1 || nw.fab.InjectionReady(hi, p) {
			h.picked = j
			return p
		}
	}
	return nil
}

// admPop takes the packet admPeek offered from its injection queue, puts
// that queue at the back of the round-robin order, and refills.
func (nw *Network) admPop(hi int) *fabric.Packet {
	a := nw.adm
	h := &a.hosts[hi]
	j := h.picked
	k := h.injActive[j]
	iq := h.inj[k]
	p := iq.pop()
	h.held--
	h.injActive = append(h.injActive[:j], h.injActive[j+1:]...)
	if iq.size > 0 {
		h.injActive = append(h.injActive, k)
	} else if a.nq > 1 {
		h.inj[k] = nil
		h.injFree = append(h.injFree, iq)
	}
	h.picked = 0
	if a.nq > 1 {
		if fl := h.flows[p.Dst]; fl.n > 1 {
			h.flows[p.Dst] = admFlow{q: fl.q, n: fl.n - 1}
		} else {
			delete(h.flows, p.Dst)
		}
	}
	nw.refill(hi)
	return p
}

// admHead is the packet admPeek offered last (for the injection gate).
func (nw *Network) admHead(hi int) *fabric.Packet {
	h := &nw.adm.hosts[hi]
	if h.picked >= len(h.injActive) {
		return nil
	}
	return h.inj[h.injActive[h.picked]].peek()
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

// admConserved checks the admittance NICs' own books (empty when they
// hold, or for fifo): the packets queued at the sources are those in
// admittance queues, stalled messages and injection queues; every
// injection queue is within its size and listed once in the injection
// arbiter's order exactly when it holds packets; the flows' counts add up
// to the packets in the injection queues.
func (nw *Network) admConserved() string {
	a := nw.adm
	if a == nil {
		return ""
	}
	total := 0
	for hi := range a.hosts {
		h := &a.hosts[hi]
		total += nw.AdmittanceQueued(hi) + h.held
		inj := 0
		seen := map[int32]bool{}
		for _, k := range h.injActive {
			q := h.inj[k]
			if seen[k] || q == nil || q.size == 0 || q.size > a.cfg.InjectionPackets {
				return fmt.Sprintf("host %d: injection queue %d listed twice, empty or beyond %d packets", hi, k, a.cfg.InjectionPackets)
			}
			seen[k] = true
			inj += q.size
		}
		if inj != h.held {
			return fmt.Sprintf("host %d: injection queues hold %d packets, counted %d", hi, inj, h.held)
		}
		if a.nq > 1 {
			fl := 0
			for _, f := range h.flows {
				fl += int(f.n)
			}
			if fl != h.held {
				return fmt.Sprintf("host %d: flows count %d packets in the injection queues, which hold %d", hi, fl, h.held)
			}
		}
	}
	if total != nw.Queued {
		return fmt.Sprintf("packets: %d in admittance and injection queues, %d queued at sources", total, nw.Queued)
	}
	return ""
}
