// Package fabric owns the switched network model: links with rate, line
// coding and propagation; ports with per-virtual-lane buffers and
// credit-based flow control in 64-byte blocks; control packets (credits
// and the architectures' own) on each channel's reverse direction;
// packet-level virtual cut-through; switch architectures (arch.go: cioq,
// iq, 1q, 4q, voqsw, voqnet, recn, pciq-2, pciq-4, hc, cioq-2q, recn-iq,
// pciq-2+recn-iq, pciq-4+recn-iq, cioq+recn-iq) and crossbar
// allocators (alloc.go: rr, islip(N), hrr) chosen by name from
// their tables; and the runtime deadlock watchdog. Hosts are Endpoints:
// the fabric pulls packets from them when their injection link can send
// and hands packets to them when their tail has arrived.
//
// The model is event driven at packet granularity. A packet's head may
// leave a switch once it has been routed and granted, before its tail has
// arrived; its tail leaves no earlier than its own tail arrived. A packet
// is forwarded only when the whole packet fits in the downstream buffer
// (virtual cut-through, paper 004 §4.1). Credits are returned upstream when
// a packet's tail leaves an input buffer, in credit packets that share the
// reverse link with data. docs/architecture.md follows a packet through
// the events.
package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// Packet is one fabric packet. The fabric owns the routing fields; the
// NIC owns the rest and may keep anything in Ref.
type Packet struct {
	ID      uint64
	Src     int32 // source host
	Dst     int32 // destination host
	Size    int32 // bytes on the wire, headers included
	Payload int32 // payload bytes (for accepted-traffic figures)
	Kind    uint8 // NIC's own classification (data, ACK, NACK, ...)
	Hops    int16 // switches traversed
	VL      int8  // lane on the link the packet is on or about to take
	Gen     des.Time
	Inject  des.Time
	Conn    int32
	PSN     uint32
	Seq     uint64 // per source-destination stream, for order checks
	Ref     any
	// FirstQueue, set by a NIC with injection queues per first-switch
	// queue (Fabric.InjectionQueue), is 1 + the queue (within its lane)
	// the packet joins at the first switch's input; 0 lets the switch
	// choose.
	FirstQueue int32

	inVL int8 // lane in the input buffer it sits in
	// recover: presumed deadlocked, on its way to the local node to be
	// absorbed and reinjected (deadlock.go).
	recover bool
	blocks  int32    // credit blocks it occupies, set at injection
	voq     int32    // fabric.voq_memory=partitioned: its queue (lane and key) at the input or output it is in, or bound for
	tailAt  des.Time // when its tail is (or will be) fully in the buffer it is in
	headAt  des.Time // when its head reached the node it is in (local.go; only while measuring)
	next    *Packet
}

// Endpoint is the host side of the fabric: a NIC per host.
type Endpoint interface {
	// Peek returns the packet host h would inject next, or nil.
	Peek(h int) *Packet
	// Pop tells the NIC the fabric took the peeked packet: it started
	// sending it, or (recn with NIC SAQs) set it aside at the injection
	// port to send later, in order with the packets of its path.
	Pop(h int, at des.Time)
	// Deliver hands over a packet whose tail reached host h's NIC.
	Deliver(h int, p *Packet, at des.Time)
}

// event kinds, in the low 4 bits of Event.Op; a lane in bits 4..7 and a
// block count above. Kinds from opArch on belong to the switch
// architecture (switchArch.handle).
const (
	opArrive   = iota // Ref: packet; A: in-port. Head routed (switch) or tail arrived (NIC).
	opXbarDone        // A: in-port. The packet's tail has left the input buffer.
	opLinkFree        // A: out-port. The link finished a transmission.
	opCredit          // A: out-port. Credits arrived from downstream.
	opWatchdog
	// opCreditWake: A: out-port. The earliest credit packet travelling to
	// a port that waits for credits has arrived (see outPort.lazy).
	opCreditWake
	// opControl: Ref: *Control; A: out-port. A control packet other than
	// a credit reached the upstream end of the channel.
	opControl
	// opArch is the first kind an architecture may use for its own events.
	opArch
)

// EventKind names the kind of a fabric event from its Op (des.Event.Op
// of an event whose handler is a *Fabric), for event counts: "arrive",
// "xbar-done", "link-free", "credit", "watchdog", "credit-wake",
// "control", or "arch+N" for the switch architecture's own kinds (cioq's
// arch+0 is a cut-through packet leaving its input and output at once).
func EventKind(op int32) string {
	switch k, _, _ := unpackOp(op); k {
	case opArrive:
		return "arrive"
	case opXbarDone:
		return "xbar-done"
	case opLinkFree:
		return "link-free"
	case opCredit:
		return "credit"
	case opWatchdog:
		return "watchdog"
	case opCreditWake:
		return "credit-wake"
	case opControl:
		return "control"
	default:
		return fmt.Sprintf("arch+%d", k-opArch)
	}
}

func packOp(kind, vl, blocks int) int32 { return int32(kind | vl<<4 | blocks<<8) }
func unpackOp(op int32) (kind, vl, blocks int) {
	return int(op & 15), int(op>>4) & 15, int(op >> 8)
}

type fifo struct {
	head, tail *Packet
	n          int
}

func (q *fifo) push(p *Packet) {
	p.next = nil
	if q.tail == nil {
		q.head = p
	} else {
		q.tail.next = p
	}
	q.tail = p
	q.n++
}

func (q *fifo) pop() *Packet {
	p := q.head
	q.head = p.next
	if q.head == nil {
		q.tail = nil
	}
	p.next = nil
	q.n--
	return p
}

// lane is the block accounting of one virtual lane of a buffer: the
// credits of a channel count blocks of its downstream lane.
type lane struct {
	used int32 // blocks reserved (in flight towards it or stored)
	cap  int32
}

// queue is one packet queue of an input port (which queues a port has is
// the switch architecture's choice: one FIFO per virtual lane today) with
// the routing candidates of its head packet.
type queue struct {
	fifo
	cands    []route.Candidate
	candsFor *Packet
	// blockedAt is the sum of the epochs of the head's candidate outputs
	// when it was found unable to move; while the sum is unchanged none of
	// those outputs has gained room, so it still cannot move.
	blockedAt uint64
}

// inPort is the receiving end of a channel.
type inPort struct {
	sw      int32 // owning switch, or -1 for a NIC
	host    int32 // owning host, or -1
	port    int32 // local port number
	lanes   []lane
	queues  []queue // packets stored, in the architecture's queues
	up      int32   // out-port that sends into this one
	rev     int32   // out-port on the same cable going back (carries credits)
	pending []int32
	// creditsInFlight are blocks in credit packets sent but not arrived.
	creditsInFlight []int32
	xbarBusy        bool
	xbarTo          int32 // out-port the crossbar transfer goes to
	rrQ             int   // round-robin position among the queues
	queued          int   // packets stored
	// nonEmpty has bit v set while queues[v] holds a packet (inqueues.go).
	nonEmpty []uint64
}

// outPort is the sending end of a channel.
type outPort struct {
	sw      int32
	host    int32
	port    int32
	down    int32    // in-port at the other end
	credits []int32  // free blocks at the downstream lane
	lanes   []lane   // output buffer accounting per lane (architectures with output buffers)
	outq    []fifo   // output buffer queues per lane
	busy    bool     // a data packet is on the link (its opLinkFree is pending)
	idleAt  des.Time // end of the credit packets sent so far (they need no event)
	// epoch counts the times this output may have gained room for a
	// waiting head: its buffer or crossbar freed, its link freed, or
	// credits arrived (input-queued switches). Heads found blocked
	// remember the sum over their candidate outputs (queue.blockedAt).
	epoch     uint64
	xbar      bool       // crossbar transferring into this output
	ctrl      uint32     // lanes of the reverse in-port with credits to return
	rrVL      int        // round-robin position among the output buffer's lanes
	ctrlQ     []*Control // control packets (not credits) waiting to be sent
	creditFor int32      // in-port whose control packets this port sends back
	sentBytes int64
	busyTime  des.Time
	// lazy ports (output-buffered switch ports and NIC injection ports)
	// take their returning credits without an event: credit packets on
	// their way wait in creditQ (in arrival order, as the link is FIFO)
	// and are absorbed when the port next looks at its credits. Only a
	// port that waits for credits gets a wake-up event.
	lazy    bool
	creditQ []creditArrival
	creditH int  // creditQ[creditH:] are still travelling
	waiting bool // has a packet that lacks credits
	woken   bool // an opCreditWake is pending
}

type creditArrival struct {
	at     des.Time
	vl     int32
	blocks int32
}

// absorb applies the credits that have arrived by now.
func (f *Fabric) absorb(o *outPort) {
	now := f.eng.Now()
	h := o.creditH
	for h < len(o.creditQ) && o.creditQ[h].at <= now {
		c := o.creditQ[h]
		o.credits[c.vl] += c.blocks
		f.in[o.down].creditsInFlight[c.vl] -= c.blocks
		h++
	}
	switch {
	case h == len(o.creditQ):
		o.creditQ, h = o.creditQ[:0], 0
	case h >= 32 && 2*h >= len(o.creditQ):
		n := copy(o.creditQ, o.creditQ[h:]) // compact now and then
		o.creditQ, h = o.creditQ[:n], 0
	}
	o.creditH = h
}

// wakeForCredits arranges for a waiting lazy port to try again when the
// next credit packet arrives.
func (f *Fabric) wakeForCredits(oi int32, o *outPort) {
	o.waiting = true
	if !o.woken && o.creditH < len(o.creditQ) {
		o.woken = true
		f.eng.Schedule(o.creditQ[o.creditH].at, f, opCreditWake, oi, nil)
	}
}

// Switch is one switch.
type Switch struct {
	ID  int
	in  []int32 // global in-port per local port, -1 if unconnected
	out []int32
	rr  int // the round-robin allocator's next input
	// ready has bit p set when input port p holds a packet and its
	// crossbar input is idle: the ports an allocator must try (switches
	// of up to 64 ports; wider ones try every port).
	ready uint64
	// nTopo is the number of ports the topology gives the switch; ports
	// from nTopo on are extra injection ports of its hosts, which the
	// router knows as injAs[pi-nTopo] (inject_ports.go).
	nTopo int
	injAs []int32
}

// Stats are fabric-wide counters.
type Stats struct {
	Injected       uint64 // packets taken from the NICs (started on an injection link, or set aside there by recn)
	Delivered      uint64 // packets whose tail reached a NIC
	Grants         uint64 // crossbar grants
	Transmissions  uint64 // data packets put on links
	CreditPackets  uint64
	CreditBytes    int64
	ControlPackets uint64 // control packets other than credits (notifications, Xon/Xoff, ...)
	ControlBytes   int64
	EscapeGrants   uint64
	AdaptiveGrants uint64
}

// Fabric is the instantiated network.
type Fabric struct {
	cfg     Config
	eng     *des.Engine
	topo    *topo.Topology
	router  *route.Router
	ep      Endpoint
	in      []inPort
	out     []outPort
	sw      []Switch
	hostIn  []int32
	hostOut []int32

	blockBytes int32
	maxPacket  int32
	prop       des.Time
	dataRate   int64
	xbarRate   int64
	nVL        int

	// arch is the switch architecture (fabric.switch), alloc the crossbar
	// allocator (fabric.allocator); both are chosen by name from their
	// tables (arch.go, alloc.go).
	arch     switchArch
	archInfo ArchInfo
	alloc    allocator
	// inj, when set by the architecture, runs the hosts' injection links
	// (recn's NIC SAQs); otherwise transmit sends the NIC's head itself.
	inj injector
	// hostq, when the architecture keeps credits per queue on the
	// injection links too (partitioned VOQ memory), gates and records
	// what a host sends into each queue of its first switch.
	hostq hostQueuer
	// keyedInjection: the NICs key their injection queues by the first
	// switch's queues (KeyInjectionQueues).
	keyedInjection bool
	// injp, when hosts have several injection ports, holds them
	// (inject_ports.go); nil for one.
	injp *injPorts

	pool   []*Packet
	nextID uint64
	Stats  Stats

	// rxHold is the hosts' reception holds (reception.go), nil until the
	// first; rxHeld counts the hosts holding now.
	rxHold []rxHold
	rxHeld int

	// deadlock watchdog
	progress     uint64
	lastProgress uint64
	Deadlock     *DeadlockReport

	injCands []route.Candidate
	room     roomer
	// cutThrough is the packet being granted while grant calls transmit;
	// send sets cutOut to its output lane when it starts it at once.
	cutThrough *Packet
	cutOut     int32
	// withInput is the packet an input-queued switch's crossbar puts on
	// the link (iqArch.forward): its tail leaves the input when it leaves
	// the link, and send sets cutOut when one event may end both.
	withInput *Packet

	// localState: what local.go measures for injection control.
	localState
	// bubbleState: bubble flow control and restrictive injection (bubble.go).
	bubbleState
	// lanes, when set, measures lanes per torus direction (lanestats.go).
	lanes *laneStats
	// dl runs deadlock detection and recovery (deadlock.go); nil when off.
	dl *detector
	// wh runs the links and switches under fabric.switching wormhole
	// (wormhole.go); nil under virtual cut-through.
	wh *wormhole
}

// New instantiates the fabric for topology t with router r. maxPacket is
// the largest wire size a packet can have (MTU plus headers); every lane
// must hold at least one such packet, as virtual cut-through needs.
func New(eng *des.Engine, cfg Config, t *topo.Topology, r *route.Router, maxPacket int, ep Endpoint) (*Fabric, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.CheckPacket(maxPacket); err != nil {
		return nil, err
	}
	info, _ := lookupArch(cfg.Switch) // Validate checked the names
	if info.NeedsDeterministic && r.Mode() != route.Deterministic {
		return nil, fmt.Errorf("fabric.switch %s needs routing.mode deterministic: it names a congested subpath by the turns of a source route fixed at injection (%s), which adaptive routing does not have", cfg.Switch, info.Source)
	}
	spec, _ := parseAllocator(cfg.Allocator)
	f := &Fabric{cfg: cfg, eng: eng, topo: t, router: r, ep: ep,
		blockBytes: int32(cfg.CreditBlock), maxPacket: int32(maxPacket),
		prop: cfg.PropagationDelay(), dataRate: cfg.DataRate(),
		archInfo: info, nVL: r.NumVLs()}
	if cfg.Wormhole() {
		f.blockBytes = int32(cfg.Flit()) // credits count flits
	}
	f.arch = info.new(f)
	if hq, ok := f.arch.(hostQueuer); ok {
		f.hostq = hq
	}
	f.xbarRate = int64(float64(f.dataRate) * cfg.CrossbarSpeedup)
	f.room.f, f.room.arch = f, f.arch
	f.injCands = r.InjectionCandidates(nil)
	if cfg.InjectionOneLane { // paper 002 §2: the injection port is one FIFO
		f.injCands = f.injCands[len(f.injCands)-1:]
	}
	maxBlocks := f.blocks(int32(maxPacket))
	split := func(what string, total int64) ([]int32, error) {
		caps := make([]int32, f.nVL)
		totalBlocks := int32(total / int64(f.blockBytes))
		esc, ad := r.EscapeVLs(), f.nVL-r.EscapeVLs()
		if ad == 0 {
			for v := range caps {
				caps[v] = totalBlocks / int32(esc)
			}
		} else {
			escBlocks := maxBlocks
			if cfg.EscapeVLBuffer > 0 {
				escBlocks = int32(int64(cfg.EscapeVLBuffer) / int64(f.blockBytes))
			}
			if int64(esc)*int64(escBlocks) > int64(totalBlocks) {
				return nil, fmt.Errorf("fabric.escape_vl_buffer %v: %d escape lanes of it do not fit in the %s of %v", cfg.EscapeVLBuffer, esc, what, total)
			}
			rest := totalBlocks - int32(esc)*escBlocks
			for v := range caps {
				if v < esc {
					caps[v] = escBlocks
				} else {
					caps[v] = rest / int32(ad)
				}
			}
		}
		for v, c := range caps {
			if c < maxBlocks {
				return nil, fmt.Errorf("fabric.%s %v gives virtual lane %d only %d bytes; a %d-byte packet must fit whole (virtual cut-through): raise the buffer or lower the MTU",
					what, total, v, int64(c)*int64(f.blockBytes), maxPacket)
			}
		}
		return caps, nil
	}
	inCaps, err := split("input_buffer", int64(cfg.InputBuffer))
	if cfg.Wormhole() {
		inCaps, err = wormholeLanes(f.nVL, cfg), nil
	}
	if err != nil {
		return nil, err
	}
	var outCaps []int32
	if info.outputBuffered {
		if outCaps, err = split("output_buffer", int64(cfg.OutputBuffer)); err != nil {
			return nil, err
		}
	}
	nicCaps := make([]int32, f.nVL)
	for v := range nicCaps {
		nicCaps[v] = int32(int64(cfg.NICBuffer) / int64(f.blockBytes))
		if nicCaps[v] < maxBlocks && !cfg.Wormhole() {
			return nil, fmt.Errorf("fabric.nic_buffer %v cannot hold one %d-byte packet", cfg.NICBuffer, maxPacket)
		}
	}
	if cfg.Wormhole() {
		nicCaps = wormholeLanes(f.nVL, cfg)
	}
	newLanes := func(caps []int32) []lane {
		ls := make([]lane, len(caps))
		for v := range ls {
			ls[v].cap = caps[v]
		}
		return ls
	}
	nQueues := f.arch.queuesPerInput()
	// Ports: every switch port that is cabled gets an in and an out port;
	// every host gets one of each. Room for all of them at once: grown by
	// append, the port arrays of a 4096-switch cube were copied a dozen
	// times.
	nPorts := t.NumHosts()
	for s := range t.Switches {
		nPorts += t.Switches[s].Ports
	}
	f.in, f.out = make([]inPort, 0, nPorts), make([]outPort, 0, nPorts)
	f.sw = make([]Switch, t.NumSwitches())
	for s := range f.sw {
		n := t.Switches[s].Ports
		f.sw[s] = Switch{ID: s, in: make([]int32, n), out: make([]int32, n)}
		for p := 0; p < n; p++ {
			f.sw[s].in[p], f.sw[s].out[p] = -1, -1
			_, isSw := t.Peer(s, p)
			_, isHost := t.HostAt(s, p)
			if !isSw && !isHost {
				continue
			}
			f.sw[s].in[p] = int32(len(f.in))
			qs, ne := newInQueues(nQueues)
			f.in = append(f.in, inPort{sw: int32(s), host: -1, port: int32(p), lanes: newLanes(inCaps), queues: qs, nonEmpty: ne})
			f.sw[s].out[p] = int32(len(f.out))
			op := outPort{sw: int32(s), host: -1, port: int32(p)}
			if info.outputBuffered {
				op.lanes = newLanes(outCaps)
				op.outq = make([]fifo, f.nVL)
			}
			f.out = append(f.out, op)
		}
	}
	f.hostIn = make([]int32, t.NumHosts())
	f.hostOut = make([]int32, t.NumHosts())
	for h := range t.Hosts {
		f.hostIn[h] = int32(len(f.in))
		f.in = append(f.in, inPort{sw: -1, host: int32(h), port: 0, lanes: newLanes(nicCaps)})
		f.hostOut[h] = int32(len(f.out))
		f.out = append(f.out, outPort{sw: -1, host: int32(h), port: 0})
	}
	// Cables.
	connect := func(o, i int32) {
		f.out[o].down = i
		f.in[i].up = o
		f.out[o].credits = make([]int32, f.nVL)
		for v := range f.out[o].credits {
			f.out[o].credits[v] = f.in[i].lanes[v].cap
		}
	}
	for s := range f.sw {
		for p := range f.sw[s].in {
			if f.sw[s].in[p] < 0 {
				continue
			}
			if pr, ok := t.Peer(s, p); ok {
				connect(f.sw[s].out[p], f.sw[pr.Switch].in[pr.Port])
			} else {
				h, _ := t.HostAt(s, p)
				connect(f.sw[s].out[p], f.hostIn[h])
				connect(f.hostOut[h], f.sw[s].in[p])
			}
		}
	}
	if cfg.InjectionPorts > 1 {
		if err := f.addInjectionPorts(cfg.InjectionPorts, cfg.InjectionShared, nQueues, outCaps, newLanes, inCaps, nicCaps, connect); err != nil {
			return nil, err
		}
	}
	// Injection ports, and the outputs of switches that buffer at their
	// outputs, take returning credits lazily (outPort.lazy); the outputs
	// of switches whose crossbar feeds the link wake their allocator on
	// every credit packet instead.
	for i := range f.out {
		f.out[i].lazy = f.out[i].host >= 0 || info.outputBuffered
	}
	for i := range f.in {
		ip := &f.in[i]
		ip.pending = make([]int32, f.nVL)
		ip.creditsInFlight = make([]int32, f.nVL)
		if ip.sw >= 0 {
			ip.rev = f.sw[ip.sw].out[ip.port]
		} else {
			ip.rev = f.hostReverse(int(ip.host), int(ip.port))
		}
		f.out[ip.rev].creditFor = int32(i)
	}
	f.alloc = spec.new(f)
	if cfg.Wormhole() {
		if err := f.wormholeCheck(); err != nil {
			return nil, err
		}
		f.wh = newWormhole(f)
	}
	if err := f.setupBubble(); err != nil {
		return nil, err
	}
	if err := f.setupDeadlock(); err != nil {
		return nil, err
	}
	eng.Schedule(cfg.DeadlockTimeout, f, opWatchdog, 0, nil)
	return f, nil
}

// Router returns the router in use.
func (f *Fabric) Router() *route.Router { return f.router }

// Topology returns the topology.
func (f *Fabric) Topology() *topo.Topology { return f.topo }

// Config returns the configuration.
func (f *Fabric) Config() Config { return f.cfg }

// SerializationTime returns how long bytes take on a link of this fabric
// (as Config.SerializationTime, without copying the configuration: the
// NICs ask on every message).
func (f *Fabric) SerializationTime(bytes int) des.Time {
	return serTime(int64(bytes), f.dataRate)
}

func (f *Fabric) blocks(bytes int32) int32 { return (bytes + f.blockBytes - 1) / f.blockBytes }

// NewPacket returns a zeroed packet with a fresh ID from the pool.
func (f *Fabric) NewPacket() *Packet {
	var p *Packet
	if n := len(f.pool); n > 0 {
		p = f.pool[n-1]
		f.pool = f.pool[:n-1]
		*p = Packet{}
	} else {
		p = &Packet{}
	}
	f.nextID++
	p.ID = f.nextID
	return p
}

// FreePacket returns a delivered packet to the pool.
func (f *Fabric) FreePacket(p *Packet) {
	p.Ref = nil
	f.pool = append(f.pool, p)
}

// Kick tells the fabric that host h may have a packet to inject.
func (f *Fabric) Kick(h int) {
	if f.wh != nil {
		f.wh.kick(h)
		return
	}
	if f.injp != nil {
		f.kickHost(h)
		return
	}
	f.transmit(f.hostOut[h])
}

// Handle dispatches the fabric's events.
func (f *Fabric) Handle(ev *des.Event) {
	kind, vl, blocks := unpackOp(ev.Op)
	switch kind {
	case opArrive:
		f.arrive(ev.A, ev.Ref.(*Packet))
	case opXbarDone:
		f.xbarDone(ev.A, vl, int32(blocks))
	case opLinkFree:
		f.linkFree(ev.A, vl, int32(blocks))
	case opCredit:
		f.creditArrive(ev.A, vl, int32(blocks))
	case opCreditWake:
		f.out[ev.A].woken = false
		f.transmit(ev.A)
	case opWatchdog:
		f.watchdog()
	case opControl:
		f.arch.control(ev.A, ev.Ref.(*Control))
	default:
		if f.wh != nil {
			f.wh.handle(kind, ev.A, vl, blocks, ev.Ref)
			return
		}
		f.arch.handle(kind, ev.A, vl, blocks, ev.Ref)
	}
}

// arrive: at a switch, the packet's head has arrived and been routed; at
// a NIC, its tail has arrived.
func (f *Fabric) arrive(i int32, p *Packet) {
	ip := &f.in[i]
	p.inVL = p.VL
	if ip.sw < 0 {
		if p.recover { // absorbed by the node (deadlock recovery)
			f.dl.absorb(i, p)
			return
		}
		// The NIC drains its reception buffer at once and the credits go
		// back, unless its host holds reception (reception.go).
		if f.rxHold != nil && f.rxHold[ip.host].on {
			f.rxHold[ip.host].held.push(p)
			return
		}
		f.receive(i, p)
		return
	}
	q := ip.pushQ(f.arch.enqueue(ip, p), p)
	ip.queued++
	f.markReady(ip)
	// After every allocation each head that could move has moved, so an
	// arrival can only change things if it is a new head on an idle input.
	if q.n == 1 && !ip.xbarBusy {
		f.alloc.arrived(&f.sw[ip.sw], int(ip.port))
	}
}

// freeInput releases blocks of an input lane and queues their return.
func (f *Fabric) freeInput(i int32, vl int, blocks int32) {
	ip := &f.in[i]
	ip.lanes[vl].used -= blocks
	ip.pending[vl] += blocks
	o := &f.out[ip.rev]
	o.ctrl |= 1 << uint(vl)
	f.transmit(ip.rev)
}

// roomer answers route.Select's question for the switch being allocated:
// can the output take the head packet now, and how much room does it have?
type roomer struct {
	f      *Fabric
	arch   switchArch
	sw     *Switch
	host   *outPort // set when selecting a lane on an injection link
	hostOI int32    // host's global out-port index
	blocks int32
	// in is the global in-port whose head is being tried, for the
	// architectures whose room depends on the input (readPorter: a read
	// port of the input's memory may be busy).
	in int32
	// taken, when set, marks the local outputs an allocator has already
	// matched in this round: they cannot take another packet.
	taken []bool
	// pkt is the head packet being allocated (set by headCandidates, which
	// every allocator calls just before it selects), for the architectures
	// whose room depends on the packet (voqnet: its destination's output
	// queue).
	pkt *Packet
}

func (r *roomer) Room(port, vl int32) (bool, int) {
	if r.host != nil {
		cr := r.host.credits[vl]
		if cr >= r.blocks && r.f.hostq != nil && !r.f.hostq.hostRoom(r.hostOI, r.pkt, int(vl)) {
			return false, 0 // the first switch's queue has no credits
		}
		return cr >= r.blocks, int(cr)
	}
	if r.taken != nil && r.taken[port] {
		return false, 0
	}
	return r.arch.room(&r.f.out[r.sw.out[port]], vl, r.blocks)
}

// markReady updates ip's bit in its switch's ready mask.
func (f *Fabric) markReady(ip *inPort) {
	s := &f.sw[ip.sw]
	bit := uint64(1) << uint(ip.port) // 0 for ports beyond 63
	if ip.queued > 0 && !ip.xbarBusy {
		s.ready |= bit
	} else {
		s.ready &^= bit
	}
}

// headCandidates returns the routing candidates of the head packet p of
// queue q at input port pi of switch s, from the queue's cache when it is
// still for p.
func (f *Fabric) headCandidates(s *Switch, pi int, q *queue, p *Packet) []route.Candidate {
	f.room.pkt = p
	if q.candsFor != p {
		if p.recover {
			q.cands, q.candsFor = f.dl.ejectCandidate(s, q.cands), p
			return q.cands
		}
		q.cands = f.router.Candidates(s.ID, s.routePort(pi), int(p.inVL), int(p.Dst), q.cands[:0])
		q.candsFor = p
		if f.restrict {
			f.restrictInjection(s, pi, q.cands)
		}
	}
	return q.cands
}

// selectHead returns the candidates of the head packet of queue q (input
// port pi of s, in-port ii) and the one route.Select takes among the
// outputs with room for it now, or -1. The allocator sets f.room.sw (and
// the outputs it has taken this round) before.
func (f *Fabric) selectHead(s *Switch, pi int, ii int32, q *queue) ([]route.Candidate, int) {
	p := q.head
	cands := f.headCandidates(s, pi, q, p)
	f.room.blocks, f.room.in = p.blocks, ii
	return cands, route.Select(cands, &f.room)
}

// candEpochs sums the epochs of the outputs a head's candidates name.
// Epochs only grow, so an unchanged sum means no candidate output changed.
func (f *Fabric) candEpochs(s *Switch, cands []route.Candidate) uint64 {
	var sum uint64
	for _, c := range cands {
		sum += f.out[s.out[c.Port]].epoch
	}
	return sum
}

// grant moves the head packet of queue qi of input ii across the crossbar
// towards candidate c; the architecture decides what happens at the
// output (arch.forward).
func (f *Fabric) grant(s *Switch, ii int32, qi int, c route.Candidate) {
	ip := &f.in[ii]
	p := ip.popQ(qi)
	q := &ip.queues[qi]
	q.candsFor = nil // packets are pooled: a later one may reuse this pointer
	ip.queued--
	ip.xbarBusy = true
	f.markReady(ip)
	f.granted(p, c)
	oi := s.out[c.Port]
	ip.xbarTo = oi
	f.arch.forward(ii, oi, p, int(c.VL))
}

// xbarDone: the packet's tail has left input ii.
func (f *Fabric) xbarDone(ii int32, vl int, blocks int32) {
	ip := &f.in[ii]
	ip.xbarBusy = false
	f.markReady(ip)
	f.freeInput(ii, vl, blocks)
	f.arch.crossbarDone(&f.out[ip.xbarTo])
	f.alloc.arbitrate(&f.sw[ip.sw])
}

// send starts a data transmission of p on out-port oi on lane vl at time
// start (now, or when the control packets already on the link end) and
// returns when its tail leaves.
func (f *Fabric) send(oi int32, p *Packet, vl int, start des.Time) des.Time {
	o := &f.out[oi]
	now := start
	blocks := p.blocks
	o.credits[vl] -= blocks
	o.busy = true
	di := o.down
	f.in[di].lanes[vl].used += blocks
	p.VL = int8(vl)
	ser := serTime(int64(p.Size), f.dataRate)
	tailLeave := max(now+ser, p.tailAt)
	o.sentBytes += int64(p.Size)
	o.busyTime += tailLeave - now
	f.Stats.Transmissions++
	f.progress++
	if f.tt != nil {
		f.recordTx(oi, o, p, now, tailLeave, ser)
	}
	if f.lanes != nil {
		f.lanes.record(oi, vl, now, tailLeave)
	}
	if f.dl != nil {
		f.dl.sent(oi, tailLeave)
	}
	// The head is routed at the next switch, or the tail reaches the NIC.
	arriveAt := tailLeave + f.prop
	if f.in[di].sw >= 0 {
		arriveAt = now + f.prop + f.cfg.RoutingDelay
	}
	switch {
	case p == f.cutThrough && tailLeave == p.tailAt:
		f.cutOut = int32(vl) // forward schedules one event for both ends
	case p == f.withInput && arriveAt != tailLeave:
		// The input's crossbar-done would follow this link-free with no
		// other event between them (the packet's arrival, scheduled in
		// between, is at another time): forward schedules one for both.
		f.cutOut = int32(vl)
	default:
		f.eng.Schedule(tailLeave, f, packOp(opLinkFree, vl, int(blocks)), oi, p)
	}
	p.tailAt = tailLeave + f.prop
	f.eng.Schedule(arriveAt, f, opArrive, di, p)
	return tailLeave
}

// transmit starts the next transmissions on a link with no data packet
// on it: every pending control packet first (InfiniBand flow-control
// packets go between data packets), then one data packet. Control packets
// need no completion event: the link records when they end (idleAt) and
// the data packet starts then.
func (f *Fabric) transmit(oi int32) {
	o := &f.out[oi]
	if o.busy {
		return
	}
	now := f.eng.Now()
	start := max(now, o.idleAt)
	if o.ctrl != 0 || len(o.ctrlQ) > 0 {
		start = f.sendControl(o, start)
		o.idleAt = start
	}
	if o.lazy && o.creditH < len(o.creditQ) {
		f.absorb(o)
	}
	o.waiting = false
	if o.host < 0 {
		f.arch.next(oi, o, start) // what the switch's output stage sends next
		return
	}
	if f.inj != nil {
		f.inj.inject(oi, o, start)
		return
	}
	if f.injp != nil && f.injp.shared {
		var busy bool
		if busy, start = f.sharedBusy(o, start); busy {
			return // the physical link is another virtual channel's
		}
	}
	p, reinject := f.nextInjection(o)
	if p == nil {
		return
	}
	// The injection link is a channel like any other: the same selection
	// (adaptive lane with most credits, else escape).
	c := f.selectInjection(oi, o, p)
	if c < 0 {
		f.wakeForCredits(oi, o)
		return
	}
	best := int(f.injCands[c].VL)
	if f.hostq != nil {
		// before the NIC's Pop: the NIC refills its injection queues
		// then, and a packet of the same flow must find this one bound
		// for its queue at the first switch (4Q's order)
		f.hostq.hostSend(oi, p, best)
	}
	if reinject { // the source's figures stay the first injection's
		f.dl.reinjected(o, start)
		p.tailAt = start
		f.send(oi, p, best, start)
		return
	}
	if f.injp == nil {
		f.ep.Pop(int(o.host), start)
	} else {
		f.popHost(o, start)
		f.injectedOn(o)
	}
	p.Inject = start
	p.tailAt = start
	f.Stats.Injected++
	f.send(oi, p, best, start)
}

// linkFree: a transmission on out-port oi ended.
func (f *Fabric) linkFree(oi int32, vl int, blocks int32) {
	o := &f.out[oi]
	o.busy = false
	if o.sw >= 0 {
		f.arch.linkDone(o, vl, blocks)
	}
	o.epoch++
	if f.injp != nil && f.injp.shared && o.host >= 0 {
		f.kickHost(int(o.host)) // the shared link is free for every virtual channel
	} else {
		f.transmit(oi)
	}
	if o.sw >= 0 {
		f.alloc.arbitrate(&f.sw[o.sw])
	}
}

// creditArrive: a credit packet reached the upstream end of out-port oi.
// Only ports that are not lazy get this event: switch outputs whose
// crossbar feeds the link, where returning credits may let a waiting head
// through the crossbar.
func (f *Fabric) creditArrive(oi int32, vl int, blocks int32) {
	o := &f.out[oi]
	o.credits[vl] += blocks
	f.in[o.down].creditsInFlight[vl] -= blocks
	o.epoch++
	f.transmit(oi)
	if o.sw >= 0 {
		f.alloc.arbitrate(&f.sw[o.sw])
	}
}

// granted counts a switch's grant of candidate c to packet p, which then
// travels on c's lane (both switching techniques).
func (f *Fabric) granted(p *Packet, c route.Candidate) {
	p.VL = int8(c.VL)
	p.Hops++
	f.Stats.Grants++
	if c.Escape {
		f.Stats.EscapeGrants++
	} else {
		f.Stats.AdaptiveGrants++
	}
	f.progress++
}

// nextInjection returns the packet host port o injects next, and whether
// it is a packet that deadlock recovery absorbed at this node (those go
// before the node's own), or nil when nothing waits.
func (f *Fabric) nextInjection(o *outPort) (p *Packet, reinject bool) {
	if f.dl != nil {
		p, held := f.dl.reinjection(o)
		if p != nil || held {
			return p, p != nil
		}
	}
	if f.injp == nil {
		return f.ep.Peek(int(o.host)), false
	}
	return f.peekHost(o), false
}
