// Package nic owns the NICs, the host side of the fabric: a NIC per host
// that packetizes messages to the fabric MTU with the InfiniBand header
// overhead, queues them for injection, and ejects delivered packets; the
// end-to-end delivery control of paper 004 §3 (connections with sequence
// numbers, rearrangement buffers, ACK/NACK, injection policies); the order
// meters (RFC 4737 / RFC 5236); and the measurement of what the hosts see
// (accepted traffic, latency, hops, order, the delivery report).
//
// It knows nothing of workloads or runs: drivers (workload/synth,
// workload/replay, the daemon's TAP devices) send Messages through a
// Network, and model.Session assembles it with a fabric. nic imports the
// fabric and the pure libraries (reorder, injection), nothing above.
package nic

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/internal/units"
)

// Config is the NIC model.
type Config struct {
	MTU         units.Bytes `yaml:"mtu" json:"mtu" unit:"bytes" doc:"largest payload of one fabric packet; messages are split at it (InfiniBand: 256 to 4096)" paper:"004 §4.1"`
	HeaderBytes units.Bytes `yaml:"header_bytes" json:"header_bytes" unit:"bytes" doc:"per-packet wire overhead: InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26" paper:"004 §4.1"`
	// Delivery is the end-to-end delivery control (paper 004 §3).
	Delivery DeliveryConfig `yaml:"delivery" json:"delivery"`
	// InjectionControl is the NIC-level injection gate of papers 001 and
	// 002, consulted in every delivery mode (control.go).
	InjectionControl injection.ControlConfig `yaml:"injection_control" json:"injection_control,omitzero"`
	// InjectionQueues is the injection interface of paper 002 §2
	// (queues.go).
	InjectionQueues injection.QueuesConfig `yaml:"injection_queues" json:"injection_queues,omitzero"`
	// Model is the end node: fifo (one injection queue taking every
	// packet in generation order) or admittance (paper 000 §4.1's
	// admittance queues per destination; admittance.go).
	Model      string           `yaml:"model" json:"model,omitempty" doc:"end node: fifo (one injection queue, packets in generation order; the empty default) or admittance (paper 000 §4.1: an admittance queue per destination holding whole messages, round robin into the injection queue)" paper:"000 §4.1"`
	Admittance AdmittanceConfig `yaml:"admittance" json:"admittance,omitzero"`
}

// DefaultConfig is a 256-byte MTU with the IB headers (paper 004 §4.1).
func DefaultConfig() Config {
	return Config{MTU: 256, HeaderBytes: 26, Delivery: DefaultDeliveryConfig(), InjectionControl: injection.DefaultControlConfig(),
		InjectionQueues: injection.DefaultQueuesConfig(), Admittance: DefaultAdmittanceConfig()}
}

// Validate checks the configuration on its own.
func (c Config) Validate() error {
	if c.MTU < 256 || c.MTU > 4096 || c.MTU&(c.MTU-1) != 0 {
		return fmt.Errorf("nic.mtu %v: InfiniBand MTUs are 256, 512, 1024, 2048 or 4096 bytes", c.MTU)
	}
	if c.HeaderBytes < 0 || c.HeaderBytes > 512 {
		return fmt.Errorf("nic.header_bytes %v: want 0..512", c.HeaderBytes)
	}
	if err := c.InjectionControl.Validate(); err != nil {
		return err
	}
	if err := c.validateQueues(); err != nil {
		return err
	}
	if err := c.validateModel(); err != nil {
		return err
	}
	return c.Delivery.Validate()
}

// MaxPacket returns the largest wire size of a packet.
func (c Config) MaxPacket() int { return int(c.MTU + c.HeaderBytes) }

// Message is one host-level transfer, split into packets.
type Message struct {
	Src, Dst  int
	Bytes     int64
	Gen       des.Time
	remaining int32
	// Tag is the driver's own reference (a trace request, say).
	Tag any
	// Done is called once when the last packet of the message is
	// delivered, with the delivery time.
	Done func(m *Message, at des.Time)
	// pooled messages return to the Network's pool after completion.
	pooled bool
	// stalledPkts are the packets of a message waiting for room in its
	// admittance queue (admittance.go).
	stalledPkts []*fabric.Packet
}

// host is one NIC.
type host struct {
	// queuedWire is the wire bytes waiting to be injected (not yet
	// started), in injQ or in msgs.
	queuedWire int64
	injQ       pktQueue
	// msgs and head are the injection queue of a plain FIFO NIC (no
	// end-to-end control, one injection queue, no admittance queues):
	// whole messages, packetized one packet at a time as they reach the
	// head (head is the packet made and not yet taken by the fabric). A
	// waiting message costs one entry, not its packets, so an overloaded
	// source (an open-loop replay, a 1 GiB message) holds tens of bytes
	// per message; the packets, their order and sequence numbers are
	// those an eager split would have made.
	msgs    ring[msgRun]
	head    *fabric.Packet
	nextSeq seqTable // per destination stream
	wantSeq seqTable // per source stream, at this destination
}

// denseSeqHosts is the largest host count for which each NIC keeps its
// sequence numbers in a slice indexed by peer host (8 bytes per pair, two
// tables: 4 MiB at 512 hosts) rather than a map: the per-packet lookups
// are then an index instead of a hash.
const denseSeqHosts = 512

// seqTable maps a peer host to a sequence number, zero when absent.
type seqTable struct {
	dense []uint64 // indexed by peer host, when the network is small
	// Larger networks: an open-addressing table of the peers met so far
	// (linear probing, at most three quarters full), keys[i] the peer plus
	// one (0: empty) and vals[i] its number. It replaced a Go map, whose
	// hashing and probing were 5% of a 4096-host run's time.
	keys []int32
	vals []uint64
	used int
}

func newSeqTable(hosts int) seqTable {
	if hosts <= denseSeqHosts {
		return seqTable{dense: make([]uint64, hosts)}
	}
	return seqTable{}
}

// slot returns where peer is in the sparse table, or the empty slot
// where it would go. The multiplier is odd, so peers that differ in the
// low bits the mask keeps land in different slots.
func (t *seqTable) slot(peer int32) int {
	mask := len(t.keys) - 1
	i := int(uint32(peer)*0x9e3779b1) & mask
	for t.keys[i] != 0 && t.keys[i] != peer+1 {
		i = (i + 1) & mask
	}
	return i
}

func (t *seqTable) get(peer int32) uint64 {
	if t.dense != nil {
		return t.dense[peer]
	}
	if t.keys == nil {
		return 0
	}
	return t.vals[t.slot(peer)]
}

func (t *seqTable) set(peer int32, v uint64) {
	if t.dense != nil {
		t.dense[peer] = v
		return
	}
	if 4*(t.used+1) > 3*len(t.keys) {
		t.grow()
	}
	i := t.slot(peer)
	if t.keys[i] == 0 {
		t.keys[i] = peer + 1
		t.used++
	}
	t.vals[i] = v
}

// grow doubles the sparse table (8 slots at first) and re-inserts its
// peers.
func (t *seqTable) grow() {
	keys, vals := t.keys, t.vals
	n := max(8, 2*len(keys))
	t.keys, t.vals = make([]int32, n), make([]uint64, n)
	for j, k := range keys {
		if k != 0 {
			i := t.slot(k - 1)
			t.keys[i], t.vals[i] = k, vals[j]
		}
	}
}

// pktQueue is a FIFO ring of packets.
type pktQueue struct{ ring[*fabric.Packet] }

// peek returns the oldest packet, or nil when the queue is empty.
func (q *pktQueue) peek() *fabric.Packet {
	if q.size == 0 {
		return nil
	}
	return q.buf[q.head]
}

// msgRun is a message waiting in a lazy injection queue: the payload
// bytes and the packets still to be made of it.
type msgRun struct {
	m    *Message
	left int64
	n    int32
}

// MsgRunBytes is what one message waiting whole in a lazy injection
// queue costs: its queue entry (the Message itself is the driver's).
const MsgRunBytes = 24

// Network is the set of NICs attached to one fabric. It implements
// fabric.Endpoint.
type Network struct {
	cfg     Config
	eng     *des.Engine
	fab     *fabric.Fabric
	hosts   []host
	Metrics *Metrics
	// Generated counts packets created by Send (all time).
	Generated uint64
	// Queued is the number of packets waiting in injection queues.
	Queued  int
	msgPool []*Message
	// msgChunk holds fresh messages not yet handed out (NewMessage).
	msgChunk []Message
	// mode is the delivery mode in effect; del runs the end-to-end
	// control of adaptive-inorder (nil otherwise); order meters the
	// order of arrivals (nil in deterministic mode).
	mode  DeliveryMode
	del   *delivery
	order *orderMeters
	// gate is the injection control (control.go), nil without one.
	gate *gateState
	// iq holds the injection queues beyond the first (queues.go); nil
	// with one queue.
	iq *queueState
	// adm is the admittance NIC (admittance.go), nil for nic.model fifo.
	adm *admState
	// ControlNote says which default the injection control took when the
	// topology is not in its paper's table; empty otherwise.
	ControlNote string
	// lazy is set when the NICs are plain FIFOs (no delivery control,
	// one injection queue, no admittance queues): messages wait whole in
	// host.msgs and are packetized at the head.
	lazy bool
}

// NewMessage returns a message from the pool; the Network reclaims it once
// its last packet is delivered and Done has returned, so the caller must
// not keep it.
func (nw *Network) NewMessage() *Message {
	if n := len(nw.msgPool); n > 0 {
		m := nw.msgPool[n-1]
		nw.msgPool = nw.msgPool[:n-1]
		return m
	}
	if len(nw.msgChunk) == 0 {
		nw.msgChunk = make([]Message, messageChunk)
	}
	m := &nw.msgChunk[0]
	nw.msgChunk = nw.msgChunk[1:]
	m.pooled = true
	return m
}

// messageChunk is how many messages NewMessage allocates at once when
// the pool is empty. Past saturation the sources' queues grow by every
// message generated and not delivered (host.msgs), each a message the
// model must hold; taking them 256 at a time makes that one allocation per
// 256 instead of one each.
const messageChunk = 256

// NewNetwork creates n NICs. Attach must be called with the fabric
// before traffic flows. cfg.Delivery.Mode says how packets are delivered
// (the empty mode is deterministic here; model.NewSession resolves it against
// the routing mode); cfg must be valid (NewNetwork panics otherwise).
func NewNetwork(eng *des.Engine, cfg Config, n int, m *Metrics) *Network {
	nw := &Network{cfg: cfg, eng: eng, hosts: make([]host, n), Metrics: m, mode: cfg.Delivery.Mode}
	for i := range nw.hosts {
		nw.hosts[i].nextSeq = newSeqTable(n)
		nw.hosts[i].wantSeq = newSeqTable(n)
	}
	if nw.mode == DeliveryAuto {
		nw.mode = DeliveryDeterministic
	}
	if nw.mode != DeliveryDeterministic {
		nw.order = newOrderMeters(cfg.Delivery.resolved(), nw.mode == DeliveryAdaptiveInOrder)
	}
	if cfg.Model == ModelAdmittance {
		nw.adm = newAdmState(cfg.Admittance, n)
	}
	if nw.mode == DeliveryAdaptiveInOrder {
		d, err := newDelivery(nw, cfg.Delivery)
		if err != nil {
			panic(fmt.Sprintf("nic: %v", err))
		}
		nw.del = d
	}
	nw.lazy = nw.del == nil && nw.adm == nil && cfg.InjectionQueues.Count <= 1
	return nw
}

// Mode returns the delivery mode in effect.
func (nw *Network) Mode() DeliveryMode { return nw.mode }

// Attach connects the NICs to the fabric.
// It panics if the injection control cannot be set up, which a valid
// configuration rules out.
func (nw *Network) Attach(f *fabric.Fabric) {
	nw.fab = f
	if nw.adm != nil {
		nw.adm.attach(f)
	}
	if err := nw.attachQueues(f); err != nil {
		panic(fmt.Sprintf("nic: %v", err))
	}
	if err := nw.attachControl(f); err != nil {
		panic(fmt.Sprintf("nic: %v", err))
	}
}

// Hosts returns the number of NICs.
func (nw *Network) Hosts() int { return len(nw.hosts) }

// Send packetizes a message of the given payload size from src to dst,
// generated at gen, into MTU-sized packets on src's injection queue. A
// zero-byte message still takes one (header-only) packet.
func (nw *Network) Send(m *Message) {
	if m.Src == m.Dst {
		panic(fmt.Sprintf("nic: message from host %d to itself", m.Src))
	}
	mtu := int64(nw.cfg.MTU)
	left := m.Bytes
	n := int32((left + mtu - 1) / mtu)
	if n == 0 {
		n = 1
	}
	m.remaining = n
	if nw.del != nil {
		nw.Generated += uint64(n)
		nw.Metrics.generated(m, int(n), int(n)*int(nw.cfg.HeaderBytes), m.Gen)
		nw.del.send(m, n)
		return
	}
	h := &nw.hosts[m.Src]
	if nw.lazy {
		wasEmpty := h.msgs.size == 0 && h.head == nil
		h.queuedWire += m.Bytes + int64(n)*int64(nw.cfg.HeaderBytes)
		h.msgs.push(msgRun{m: m, left: m.Bytes, n: n})
		nw.Generated += uint64(n)
		nw.Queued += int(n)
		nw.Metrics.generated(m, int(n), int(n)*int(nw.cfg.HeaderBytes), m.Gen)
		if wasEmpty {
			nw.fab.Kick(m.Src)
		}
		return
	}
	wasEmpty := h.injQ.size == 0
	var pkts []*fabric.Packet
	if nw.adm == nil {
		h.queuedWire += m.Bytes + int64(n)*int64(nw.cfg.HeaderBytes)
	} else {
		pkts = make([]*fabric.Packet, 0, n)
	}
	for i := int32(0); i < n; i++ {
		pay := min(left, mtu)
		left -= pay
		p := nw.newPacket(h, m, pay)
		if nw.iq != nil {
			nw.iq.push(nw, m.Src, p)
			wasEmpty = true // the fabric looks at every queue of the host
			continue
		}
		if pkts != nil {
			pkts = append(pkts, p)
			continue
		}
		h.injQ.push(p)
	}
	if pkts != nil {
		nw.admitMessage(m, pkts)
	}
	nw.Generated += uint64(n)
	nw.Queued += int(n)
	nw.Metrics.generated(m, int(n), int(n)*int(nw.cfg.HeaderBytes), m.Gen)
	if wasEmpty && nw.adm == nil {
		nw.fab.Kick(m.Src)
	}
}

// headPacket returns the packet at the head of plain NIC h's injection
// queue, making it from the oldest waiting message if it is not made yet
// (the split of Send: MTU-sized payloads, the last one the rest, a
// zero-byte message one header-only packet), or nil when nothing waits.
func (nw *Network) headPacket(h int) *fabric.Packet {
	hs := &nw.hosts[h]
	if hs.head != nil || hs.msgs.size == 0 {
		return hs.head
	}
	r := hs.msgs.front()
	pay := min(r.left, int64(nw.cfg.MTU))
	r.left -= pay
	r.n--
	m := r.m
	if r.n == 0 {
		hs.msgs.pop()
		hs.msgs.release(1024)
	}
	p := nw.newPacket(hs, m, pay)
	hs.head = p
	return p
}

// newPacket makes the packet of message m (from host h) that carries pay
// bytes of payload, the next of its stream.
func (nw *Network) newPacket(h *host, m *Message, pay int64) *fabric.Packet {
	p := nw.fab.NewPacket()
	p.Src, p.Dst = int32(m.Src), int32(m.Dst)
	p.Payload = int32(pay)
	p.Size = int32(pay) + int32(nw.cfg.HeaderBytes)
	p.Gen = m.Gen
	p.Seq = h.nextSeq.get(p.Dst)
	h.nextSeq.set(p.Dst, p.Seq+1)
	p.Ref = m
	return p
}

// QueueDrainTime returns how long host h's injection link needs, at the
// least, to start every packet now waiting in its injection queue: their
// serialization times back to back. A packet queued behind them cannot
// start before that. It returns -1 when end-to-end delivery control
// schedules connections itself or the NIC has several injection queues
// (the queue is then not one FIFO), or is an admittance NIC (a source
// may be stalled).
func (nw *Network) QueueDrainTime(h int) des.Time {
	if nw.del != nil || nw.iq != nil || nw.adm != nil {
		return -1
	}
	return nw.fab.SerializationTime(int(nw.hosts[h].queuedWire))
}

// Peek implements fabric.Endpoint.
func (nw *Network) Peek(h int) *fabric.Packet {
	var p *fabric.Packet
	switch {
	case nw.del != nil:
		p = nw.del.peek(h)
	case nw.lazy:
		p = nw.headPacket(h)
	case nw.adm != nil:
		p = nw.admPeek(h)
	default:
		p = nw.hosts[h].injQ.peek()
	}
	if nw.gate != nil && p != nil && p.Kind == KindData && !nw.admit(h, 0, p) {
		return nil
	}
	return p
}

// Pop implements fabric.Endpoint.
func (nw *Network) Pop(h int, at des.Time) {
	if nw.gate != nil {
		nw.popGated(h, at)
	}
	if nw.del != nil {
		nw.del.pop(h)
		return
	}
	var p *fabric.Packet
	switch {
	case nw.lazy:
		p = nw.headPacket(h)
		nw.hosts[h].head = nil
	case nw.adm != nil:
		p = nw.admPop(h)
	default:
		p = nw.hosts[h].injQ.pop()
	}
	nw.hosts[h].queuedWire -= int64(p.Size)
	nw.Queued--
	if nw.iq != nil {
		nw.iq.popped(nw, h)
	}
}

// Deliver implements fabric.Endpoint: the packet's tail reached host h.
// Outside adaptive-inorder every packet goes to the host on arrival.
func (nw *Network) Deliver(h int, p *fabric.Packet, at des.Time) {
	if nw.del != nil {
		nw.del.deliver(h, p, at)
		return
	}
	dst := &nw.hosts[h]
	want := dst.wantSeq.get(p.Src)
	inOrder := p.Seq == want
	if p.Seq >= want {
		dst.wantSeq.set(p.Src, p.Seq+1)
	}
	if nw.order != nil {
		nw.order.arrive(p, at)
	}
	nw.hostDelivered(p, at, inOrder)
}

// hostDelivered hands packet p to its destination host: metrics, message
// completion, and the packet back to the pool.
func (nw *Network) hostDelivered(p *fabric.Packet, at des.Time, inOrder bool) {
	nw.Metrics.delivered(p, at, inOrder)
	if m, ok := p.Ref.(*Message); ok {
		m.remaining--
		if m.remaining == 0 {
			nw.Metrics.MessageDone(m, at)
			if m.Done != nil {
				m.Done(m, at)
			}
			if m.pooled {
				*m = Message{pooled: true}
				nw.msgPool = append(nw.msgPool, m)
			}
		}
	}
	nw.fab.FreePacket(p)
}
