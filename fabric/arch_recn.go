package fabric

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// recnArch is RECN, regional explicit congestion notification, for PCI
// Express Advanced Switching (paper 000 §3), on the switch of §3.2: input
// and output buffers joined by a crossbar (the cioq datapath, with the
// crossbar at crossbar_speedup times the link rate, 12 Gb/s on 8 Gb/s
// links in §4.1).
//
// Every port keeps one normal queue per virtual lane for uncongested
// flows and up to max_saqs set-aside queues (SAQs), each with a CAM line
// holding the path from its port to the root of a congestion tree as a
// turn sequence (§3.4, Figure 1). What it does:
//   - Detection (§3.3): an output port whose normal queue passes
//     detection_threshold becomes a root and notifies each input port the
//     first time that input sends it a packet (one flag per input).
//   - Allocation (§3.4): a notified input allocates a SAQ for the path;
//     a SAQ past notification_threshold notifies upstream: an input SAQ
//     sends a notification on the reverse channel to the output port
//     feeding it, which allocates an output SAQ for the same path; an
//     output SAQ notifies, once per input, the inputs that send to it,
//     which allocate SAQs for the path extended by the turn at this
//     switch.
//   - Matching (§3.6): an arriving packet joins the SAQ whose path is the
//     longest prefix of the packet's remaining turns, else the normal
//     queue of its lane.
//   - Order (§3.8): a new SAQ is blocked behind a marker placed after the
//     last packet of every queue at its port that may hold packets of its
//     path (the normal queue, and SAQs whose paths are prefixes of it);
//     it is enabled when those packets have left.
//   - Flow control (§3.7, §4.1): credits per port and lane, shared by
//     normal queues and SAQs; Xon/Xoff per SAQ: past xoff_threshold a SAQ
//     stops the SAQ that feeds it until it falls below xon_threshold.
//   - Deallocation (§3.5): a SAQ whose notifications were all answered
//     holds the token of a leaf; when it is empty it is freed and passes
//     the token to its parent (the SAQ or root downstream), which is freed
//     in turn once all its branches returned their tokens.
//   - Exhaustion (§3.8): with no free SAQ at a port a notification is
//     refused, the token goes back, and the packets stay in the normal
//     queue.
//
// Source routing: the turnpool of an AS header (§3.4) is the packet's
// remaining path; here it is computed from the deterministic router (the
// escape function) and cached per (switch, input, lane, destination). A
// turn is (output port, output lane). RECN needs the path fixed at
// injection, so it refuses adaptive routing (fabric.New).
//
// Simplifications, stated: the crossbar allocator is the configured one;
// the paper's preference for normal queues over SAQs (§4.1) is
// fabric.recn.normal_first, honoured by the rr allocator and off by
// default (it changes results of earlier runs); the output link
// alternates between the normal queues and the SAQs (the paper's weighted
// round robin favours the normal queues); the §3.8 priority for nearly
// empty SAQs owning a token is not modelled.
//
// Hosts: with nic_saqs > 0 the hosts' injection ports have SAQs that obey
// Xon/Xoff (§4.1; arch_recn_nic.go); with nic_saqs = -1 they have none and
// notifications stop at the first switch (§3.4: reaching the sources "is
// not necessary for RECN to work").
type recnArch struct {
	cioqArch
	cfg RECNConfig
	// thresholds in blocks
	detect, notify, xoff, xon int32
	in                        []recnPort // per in-port (switch ports only)
	out                       []recnPort // per out-port (switch ports only)
	// where records, for a packet waiting in an input SAQ, that SAQ.
	where  map[*Packet]int32
	pool   turnpools
	stats  RECNStats
	total  int         // SAQs allocated network-wide now
	series []saqSample // changes of total, in time order
	ports  *portCount  // with fabric.recn.port_series, else nil
	gen    uint64
	idle   des.Time // see opRECNIdle
	// NIC SAQs (arch_recn_nic.go): per host, and their memory in blocks;
	// nil when fabric.recn.nic_saqs is -1.
	nics   []nicStage
	nicMem int32
	// trace, when set (tests), sees every allocation ("alloc-in",
	// "alloc-out"), deallocation ("free-in", "free-out") and Xon/Xoff
	// ("xoff-in", "xon-in", "xoff-out", "xon-out") with the port, the SAQ
	// and its occupancy in blocks.
	trace func(ev string, port int32, k int, blocks int32)
}

func (a *recnArch) note(ev string, port int32, k int, blocks int32) {
	if a.trace != nil {
		a.trace(ev, port, k, blocks)
	}
}

// The RECN control packets (Control.Kind), paper 000 §3.4-§3.7.
const (
	ctlNotify = iota + 1 // upstream: allocate a SAQ for path Data on lane VL
	ctlToken             // downstream: a branch of SAQ (VL, Data) is gone (or was refused)
	ctlXoff              // upstream: stop the SAQ (VL, Data)
	ctlXon               // upstream: resume it
)

// saqWeight: the output link serves the SAQs after this many packets
// from the normal queues when both have packets to send (the weighted
// round robin of paper 000 §4.1 "in such a way that normal queues have
// preference over SAQs"; the paper gives no weight).
const saqWeight = 3

// opRECNKick: A: switch. A SAQ at one of its inputs was enabled; run the
// allocator (scheduled, not called, as it may happen during a grant).
const opRECNKick = opArch + 1

// opRECNIdle: A: port (in-port, or out-port when Ref.out). A SAQ that
// has taken no packet since it was allocated is freed if it is still an
// empty leaf (see recnArch.idle).
const opRECNIdle = opArch + 2

// idleCheck identifies a SAQ for opRECNIdle.
type idleCheck struct {
	out bool
	k   int
	gen uint64
}

// hopBytes is the size of one turn in a path string: output port (two
// bytes) and output lane.
const hopBytes = 3

// saq is a set-aside queue with its CAM line (paper 000 Figure 1).
type saq struct {
	active bool
	vl     int8   // lane of the packets it takes (input: arrival lane; output: link lane)
	path   string // turns from this port's switch (input) or the next (output) to the root
	q      fifo   // output SAQs only: input SAQs are queues of the in-port
	blocks int32  // occupancy
	// markers: queues at this port still holding packets that arrived
	// before the SAQ existed and may belong to its path (the blocked bit
	// of Figure 1 is markers > 0).
	markers  int
	xoff     bool   // stopped by an Xoff from the SAQ it feeds
	xoffSent bool   // this SAQ sent Xoff to the SAQ feeding it
	notified bool   // input SAQ: notification sent upstream
	children int    // branches notified and not yet returned (tokens outstanding)
	flags    uint64 // output SAQ: local input ports notified (§3.3)
	// parent: input SAQ: the out-port of its switch it drains into
	// (parentSAQ < 0: the root there); output SAQ: the in-port downstream.
	parent    int32
	parentSAQ int
	gen       uint64 // allocation number, for opRECNIdle
	used      bool   // has taken a packet
}

// gated: the SAQ may not send (blocked by markers, or Xoff).
func (s *saq) gated() bool { return s.markers > 0 || s.xoff }

type marker struct {
	after  *Packet // the marker sits behind this packet
	target int     // SAQ it enables
}

// recnPort is the RECN state of one port.
type recnPort struct {
	id      int32 // in-port or out-port index
	out     bool
	saqs    []saq
	markers []marker
	inUse   int
	// output ports: the root of a congestion tree (§3.4)
	root         bool
	rootFlags    uint64 // local inputs notified
	rootChildren int
	normBlocks   int32 // blocks in the normal queues (output ports)
	rrSAQ        int
	normalRun    int // packets the output link sent from the normal queues since it last served a SAQ
}

type saqSample struct {
	at           des.Time
	total        int
	maxIn, maxOt int // SAQs in use at the busiest input and output port (with fabric.recn.port_series)
}

// portCount tracks, with fabric.recn.port_series, how many switch ports
// hold k SAQs (inputs and outputs apart) and so the most any one holds,
// as ports allocate and free them.
type portCount struct {
	with [2][]int // [side][k]: ports holding k >= 1 SAQs; side 0 inputs, 1 outputs
	most [2]int
}

// change moves a port of the given side from holding from SAQs to to.
func (c *portCount) change(side, from, to int) {
	h := c.with[side]
	if from > 0 {
		h[from]--
	}
	if to > 0 {
		h[to]++
	}
	m := c.most[side]
	if to > m {
		m = to
	}
	for m > 0 && h[m] == 0 {
		m--
	}
	c.most[side] = m
}

func newRECN(f *Fabric) switchArch {
	c := f.cfg.RECN.resolved()
	a := &recnArch{cioqArch: cioqArch{vlQueues{f}}, cfg: c,
		detect: f.blocks(int32(c.DetectionThreshold)), notify: f.blocks(int32(c.NotificationThreshold)),
		xoff: f.blocks(int32(c.XoffThreshold)), xon: f.blocks(int32(c.XonThreshold)),
		where: map[*Packet]int32{}}
	// A SAQ allocated for a flow that sends nothing more would never
	// "become empty" (§3.5) and never be freed: it is freed after the
	// time its notification threshold takes on a link if it took no
	// packet by then (a fabemu addition; the paper does not say).
	a.idle = max(serTime(int64(c.NotificationThreshold), f.dataRate), serTime(int64(f.maxPacket), f.dataRate))
	if c.NICSAQs > 0 {
		// The memory holds at least one largest packet, or a head that
		// belongs in a SAQ could never leave the NIC.
		a.nicMem = max(f.blocks(int32(min(c.NICMemory, 1<<30))), f.blocks(f.maxPacket))
		f.inj = a
	}
	return a
}

// setup sizes the per-port state once the ports exist (the constructor
// runs before them).
func (a *recnArch) setup() {
	if a.in != nil {
		return
	}
	f := a.f
	a.in = make([]recnPort, len(f.in))
	a.out = make([]recnPort, len(f.out))
	if a.cfg.PortSeries {
		a.ports = &portCount{}
		for side := range a.ports.with {
			a.ports.with[side] = make([]int, max(a.cfg.MaxSAQs, a.cfg.NICSAQs)+1)
		}
	}
	for i := range a.in {
		a.in[i].id = int32(i)
		if f.in[i].sw >= 0 {
			a.in[i].saqs = make([]saq, a.cfg.MaxSAQs)
		}
	}
	for i := range a.out {
		a.out[i].id, a.out[i].out = int32(i), true
		if f.out[i].sw >= 0 {
			a.out[i].saqs = make([]saq, a.cfg.MaxSAQs)
		} else if f.inj != nil {
			a.out[i].saqs = make([]saq, a.cfg.NICSAQs)
		}
	}
	if f.inj != nil {
		a.nics = make([]nicStage, len(f.hostOut))
	}
}

func (a *recnArch) queuesPerInput() int { return a.f.nVL + a.cfg.MaxSAQs }

// preferredQueues: with fabric.recn.normal_first the normal queues (one
// per lane, the first of every input) win the crossbar over the SAQs
// (paper 000 §4.1; the rr allocator honours it).
func (a *recnArch) preferredQueues() int {
	if a.cfg.NormalFirst {
		return a.f.nVL
	}
	return 0
}

// turns returns the remaining path, as turns, of a packet for host dst
// that arrived at switch s on (port pi, lane vl): the AS turnpool from
// this switch on (paper 000 §3.4), from the deterministic router.
func (a *recnArch) turns(s, pi, vl, dst int) string { return a.pool.turns(a.f, s, pi, vl, dst) }

// turnpools computes and caches source routes as turn sequences, for the
// architectures that name congested points by turns (recn, recn-iq).
type turnpools struct {
	routes map[uint64]string
	cands  []route.Candidate
}

// turns returns the turns from switch s on of a packet for host dst that
// arrived on (port pi, lane vl), cached per (switch, input, lane,
// destination). A turn is (output port, output lane); the deterministic
// router's escape candidate is the only candidate.
func (t *turnpools) turns(f *Fabric, s, pi, vl, dst int) string {
	key := uint64(s)<<44 | uint64(pi)<<32 | uint64(vl)<<28 | uint64(dst)
	if r, ok := t.routes[key]; ok {
		return r
	}
	if t.routes == nil {
		t.routes = map[uint64]string{}
	}
	var b strings.Builder
	for hop := 0; hop < 1024; hop++ {
		t.cands = f.router.Candidates(s, pi, vl, dst, t.cands[:0])
		c := t.cands[len(t.cands)-1]
		b.WriteByte(byte(c.Port >> 8))
		b.WriteByte(byte(c.Port))
		b.WriteByte(byte(c.VL))
		peer, ok := f.topo.Peer(s, int(c.Port))
		if !ok {
			break
		}
		s, pi, vl = peer.Switch, peer.Port, int(c.VL)
	}
	r := b.String()
	t.routes[key] = r
	return r
}

// longestMatch returns the active SAQ of saqs on lane vl whose path is the
// longest prefix of route, or -1 (the CAM lookup of paper 000 §3.6).
func longestMatch(saqs []saq, vl int8, route string) int {
	best, bestLen := -1, -1
	for k := range saqs {
		s := &saqs[k]
		if s.active && s.vl == vl && len(s.path) > bestLen && strings.HasPrefix(route, s.path) {
			best, bestLen = k, len(s.path)
		}
	}
	return best
}

// findExact returns the active SAQ on lane vl with exactly path, or -1.
func findExact(saqs []saq, vl int8, path string) int {
	for k := range saqs {
		if s := &saqs[k]; s.active && s.vl == vl && s.path == path {
			return k
		}
	}
	return -1
}

// freeSAQ returns the first SAQ not in use, or -1 (all are).
func freeSAQ(saqs []saq) int {
	for k := range saqs {
		if !saqs[k].active {
			return k
		}
	}
	return -1
}

// enqueue: the CAM lookup of an arriving packet (§3.6).
func (a *recnArch) enqueue(ip *inPort, p *Packet) int {
	a.setup()
	f := a.f
	ii := f.sw[ip.sw].in[ip.port]
	rp := &a.in[ii]
	if rp.inUse == 0 {
		return int(p.inVL)
	}
	r := a.turns(int(ip.sw), int(ip.port), int(p.inVL), int(p.Dst))
	k := longestMatch(rp.saqs, p.inVL, r)
	if k < 0 {
		return int(p.inVL)
	}
	s := &rp.saqs[k]
	s.blocks += p.blocks
	s.used = true
	a.where[p] = int32(k)
	qi := f.nVL + k
	if q := &ip.queues[qi]; q.n == 0 && s.gated() {
		maskHead(q, p)
	}
	a.inputThresholds(ii, k)
	return qi
}

// maskHead hides head packet p of a gated input SAQ from the allocator:
// an empty candidate list, cached for p, offers it nowhere, and its
// blocked mark (the epoch sum of no outputs) never changes.
func maskHead(q *queue, p *Packet) {
	q.candsFor, q.cands, q.blockedAt = p, q.cands[:0], 0
}

// inputThresholds: an input SAQ past notification_threshold notifies the
// output port upstream (§3.4); past xoff_threshold it sends Xoff (§4.1).
// Input ports fed by a host do so only when the hosts have SAQs
// (nic_saqs > 0): the NIC is then the upstream port.
func (a *recnArch) inputThresholds(ii int32, k int) {
	f := a.f
	s := &a.in[ii].saqs[k]
	if f.out[f.in[ii].up].sw < 0 && a.nics == nil {
		return
	}
	if s.blocks >= a.notify && !s.notified {
		s.notified = true
		s.children++
		a.stats.Notifications++
		a.send(ii, ctlNotify, s.vl, s.path)
	}
	if s.blocks >= a.xoff && !s.xoffSent && s.notified {
		s.xoffSent = true
		a.stats.Xoff++
		a.note("xoff-in", ii, k, s.blocks)
		a.send(ii, ctlXoff, s.vl, s.path)
	}
}

// send queues a RECN control packet upstream of in-port ii.
func (a *recnArch) send(ii int32, kind uint8, vl int8, path string) {
	a.f.SendControl(ii, &Control{Kind: kind, VL: vl, Size: int32(a.cfg.ControlPacket), Data: path})
}

// sendDown queues a RECN control packet from out-port oi (a switch's, or
// a host's injection port) to the in-port it feeds, on the other
// direction of the cable.
func (a *recnArch) sendDown(oi int32, kind uint8, vl int8, path string) {
	o := &a.f.out[oi]
	if o.sw < 0 {
		a.send(a.f.hostIn[o.host], kind, vl, path)
		return
	}
	a.send(a.f.sw[o.sw].in[o.port], kind, vl, path)
}

// allocate takes a free SAQ of port rp for (vl, path), or returns -1 when
// all are in use (§3.8).
func (a *recnArch) allocate(rp *recnPort, vl int8, path string, parent int32, parentSAQ int) int {
	k := freeSAQ(rp.saqs)
	if k < 0 {
		return -1
	}
	a.gen++
	rp.saqs[k] = saq{active: true, vl: vl, path: path, parent: parent, parentSAQ: parentSAQ, gen: a.gen}
	rp.inUse++
	if a.atNIC(rp) {
		a.stats.NICAllocations++
	} else {
		a.total++
		a.stats.Allocations++
		a.sample(rp, rp.inUse-1)
		a.stats.MaxSAQsTotal = max(a.stats.MaxSAQsTotal, a.total)
	}
	a.f.eng.Schedule(a.f.eng.Now()+a.idle, a.f, opRECNIdle, rp.id, &idleCheck{out: rp.out, k: k, gen: a.gen})
	return k
}

// free releases SAQ k of port rp.
func (a *recnArch) free(rp *recnPort, k int) {
	rp.saqs[k] = saq{}
	rp.inUse--
	if a.atNIC(rp) {
		a.stats.NICDeallocations++
		return
	}
	a.total--
	a.stats.Deallocations++
	a.sample(rp, rp.inUse+1)
}

// sample records the network-wide SAQ count after switch port rp went
// from was SAQs in use to rp.inUse, and with port_series the most at any
// one input and output port.
func (a *recnArch) sample(rp *recnPort, was int) {
	s := saqSample{at: a.f.eng.Now(), total: a.total}
	if c := a.ports; c != nil {
		side := 0
		if rp.out {
			side = 1
		}
		c.change(side, was, rp.inUse)
		s.maxIn, s.maxOt = c.most[0], c.most[1]
	}
	a.series = append(a.series, s)
}

// atNIC reports whether rp is a host's injection port: its SAQs are the
// NIC's, counted apart from the switches' (the paper's SAQ figures, §4.4,
// are per switch port).
func (a *recnArch) atNIC(rp *recnPort) bool { return rp.out && a.f.out[rp.id].sw < 0 }

// notifyInput: an output port (root, or output SAQ k >= 0) notifies local
// input ii, whose packet on lane inVL just crossed to it, of congestion on
// path (§3.3, §3.4). It returns whether the input took a SAQ.
func (a *recnArch) notifyInput(oi, ii int32, inVL int8, path string, parentSAQ int) bool {
	f := a.f
	rp := &a.in[ii]
	if findExact(rp.saqs, inVL, path) >= 0 {
		return false // already there (a branch of another tree's notification)
	}
	a.stats.Notifications++
	k := a.allocate(rp, inVL, path, oi, parentSAQ)
	if k < 0 {
		a.stats.Exhausted++
		a.stats.ExhaustedInput++
		return false
	}
	a.stats.MaxSAQsPerInput = max(a.stats.MaxSAQsPerInput, rp.inUse)
	a.note("alloc-in", ii, k, 0)
	ip := &f.in[ii]
	s := &rp.saqs[k]
	// Markers (§3.8): behind the last packet of the normal queue of the
	// lane and of every SAQ whose path is a prefix of the new one.
	if q := &ip.queues[inVL]; q.tail != nil {
		rp.markers = append(rp.markers, marker{q.tail, k})
		s.markers++
	}
	for j := range rp.saqs {
		o := &rp.saqs[j]
		if j != k && o.active && o.vl == inVL && strings.HasPrefix(path, o.path) && ip.queues[f.nVL+j].tail != nil {
			rp.markers = append(rp.markers, marker{ip.queues[f.nVL+j].tail, k})
			s.markers++
		}
	}
	a.stats.Markers += uint64(s.markers)
	if parentSAQ >= 0 && a.out[oi].saqs[parentSAQ].xoffSent {
		s.xoff = true // the SAQ it feeds is already full
	}
	return true
}

// forward moves the granted packet into the output stage, as cioq does,
// after the CAM lookup at the output (the remaining turns after this
// switch's); then the output's detection and notification (§3.3, §3.4).
func (a *recnArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	o := &f.out[oi]
	ip := &f.in[ii]
	rin := &a.in[ii]
	// The packet leaves its input queue: its SAQ, and markers behind it.
	if k, ok := a.where[p]; ok {
		delete(a.where, p)
		s := &rin.saqs[k]
		s.blocks -= p.blocks
		a.inputDrained(ii, int(k))
	}
	rin.passMarkers(p, func(k int) { a.regate(ii, k); a.maybeFreeInput(ii, k) })

	ro := &a.out[oi]
	k := -1
	if ro.inUse > 0 {
		if r := a.turns(int(ip.sw), int(ip.port), int(p.inVL), int(p.Dst)); len(r) > hopBytes {
			k = longestMatch(ro.saqs, int8(vl), r[hopBytes:])
		}
	}
	now := f.eng.Now()
	blocks := p.blocks
	end := max(now+serTime(int64(p.Size), f.xbarRate), p.tailAt)
	o.xbar = true
	o.lanes[vl].used += blocks
	if k >= 0 {
		s := &ro.saqs[k]
		s.q.push(p)
		s.blocks += blocks
		s.used = true
	} else {
		o.outq[vl].push(p)
		ro.normBlocks += blocks
	}
	// Detection and notification, before the packet may leave.
	a.outputArrived(oi, ii, p, k, turn(o.port, vl))
	f.crossed(ii, oi, p, blocks, end)
}

// turn encodes one hop of a path: output port and output lane.
func turn(port int32, vl int) string {
	return string([]byte{byte(port >> 8), byte(port), byte(vl)})
}

// outputArrived: packet p from input ii entered output oi (SAQ k, or the
// normal queue when k < 0) by turn at this switch.
func (a *recnArch) outputArrived(oi, ii int32, p *Packet, k int, turn string) {
	f := a.f
	ro := &a.out[oi]
	pi := uint64(1) << uint(f.in[ii].port&63)
	if k < 0 {
		if !ro.root && ro.normBlocks >= a.detect {
			ro.root = true
			a.stats.Detections++
		}
		if ro.root && ro.rootFlags&pi == 0 {
			if a.notifyInput(oi, ii, p.inVL, turn, -1) {
				ro.rootFlags |= pi
				ro.rootChildren++
			}
		}
		return
	}
	s := &ro.saqs[k]
	if s.blocks >= a.notify && s.flags&pi == 0 {
		if a.notifyInput(oi, ii, p.inVL, turn+s.path, k) {
			s = &ro.saqs[k]
			s.flags |= pi
			s.children++
		}
	}
	if s.blocks >= a.xoff && !s.xoffSent {
		s.xoffSent = true
		a.stats.Xoff++
		a.note("xoff-out", oi, k, s.blocks)
		a.setInputXoff(oi, k, true)
	}
}

// setInputXoff stops or resumes the input SAQs of the switch that drain
// into output SAQ k of oi (Xon/Xoff inside the switch, §4.1).
func (a *recnArch) setInputXoff(oi int32, k int, stop bool) {
	f := a.f
	sw := &f.sw[f.out[oi].sw]
	for _, ii := range sw.in {
		if ii < 0 {
			continue
		}
		rp := &a.in[ii]
		for j := range rp.saqs {
			s := &rp.saqs[j]
			if !s.active || s.parent != oi || s.parentSAQ != k || s.xoff == stop {
				continue
			}
			s.xoff = stop
			a.regate(ii, j)
		}
	}
}

// regate updates the allocator's view of input SAQ k after its gate
// changed.
func (a *recnArch) regate(ii int32, k int) {
	f := a.f
	q := &f.in[ii].queues[f.nVL+k]
	if a.in[ii].saqs[k].gated() {
		if q.head != nil {
			maskHead(q, q.head)
		}
		return
	}
	if q.candsFor == q.head {
		q.candsFor = nil
	}
	if q.head != nil {
		a.kickInput(ii)
	}
}

// kickInput schedules an allocation at ii's switch.
func (a *recnArch) kickInput(ii int32) {
	f := a.f
	f.eng.Schedule(f.eng.Now(), f, opRECNKick, f.in[ii].sw, nil)
}

// passMarkers: packet p left a queue of port rp; the markers behind it
// reach the head, and each SAQ whose markers are all gone is enabled.
func (rp *recnPort) passMarkers(p *Packet, enabled func(k int)) {
	if len(rp.markers) == 0 {
		return
	}
	n := 0
	for _, m := range rp.markers {
		if m.after != p {
			rp.markers[n] = m
			n++
			continue
		}
		s := &rp.saqs[m.target]
		s.markers--
		if s.markers == 0 {
			enabled(m.target)
		}
	}
	clear(rp.markers[n:])
	rp.markers = rp.markers[:n]
}

// inputDrained: input SAQ k of ii lost a packet: Xon below the threshold,
// deallocation when it is an empty leaf.
func (a *recnArch) inputDrained(ii int32, k int) {
	s := &a.in[ii].saqs[k]
	if s.xoffSent && s.blocks < a.xon {
		s.xoffSent = false
		a.stats.Xon++
		a.note("xon-in", ii, k, s.blocks)
		a.send(ii, ctlXon, s.vl, s.path)
	}
	a.maybeFreeInput(ii, k)
}

// maybeFreeInput frees input SAQ k of ii if it is empty, enabled, and
// owns the token (every branch it notified has returned it): §3.5. The
// token goes to its parent output port in the same switch.
func (a *recnArch) maybeFreeInput(ii int32, k int) {
	f := a.f
	rp := &a.in[ii]
	s := &rp.saqs[k]
	if !s.active || s.blocks > 0 || s.children > 0 || s.markers > 0 || f.in[ii].queues[f.nVL+k].n > 0 {
		return
	}
	oi, pk := s.parent, s.parentSAQ
	a.note("free-in", ii, k, 0)
	if f.in[ii].queues[f.nVL+k].candsFor != nil {
		f.in[ii].queues[f.nVL+k].candsFor = nil
	}
	a.free(rp, k)
	a.stats.Tokens++
	bit := uint64(1) << uint(f.in[ii].port&63)
	ro := &a.out[oi]
	if pk < 0 {
		ro.rootFlags &^= bit
		ro.rootChildren--
		a.maybeEndRoot(oi)
		return
	}
	ps := &ro.saqs[pk]
	ps.flags &^= bit
	ps.children--
	a.maybeFreeOutput(oi, pk)
}

// maybeEndRoot: a root whose branches all returned their tokens and whose
// normal queue is below the detection threshold is no longer a root.
func (a *recnArch) maybeEndRoot(oi int32) {
	ro := &a.out[oi]
	if ro.root && ro.rootChildren == 0 && ro.normBlocks < a.detect {
		ro.root = false
		ro.rootFlags = 0
	}
}

// maybeFreeOutput frees output SAQ k of oi (a switch's, or a host's
// injection port) under the same rule and sends the token downstream
// (§3.5).
func (a *recnArch) maybeFreeOutput(oi int32, k int) {
	ro := &a.out[oi]
	s := &ro.saqs[k]
	if !s.active || s.blocks > 0 || s.children > 0 || s.markers > 0 || s.q.n > 0 {
		return
	}
	vl, path := s.vl, s.path
	if a.f.out[oi].sw < 0 {
		a.note("free-nic", oi, k, 0)
	} else {
		a.note("free-out", oi, k, 0)
	}
	a.free(ro, k)
	a.stats.Tokens++
	a.sendDown(oi, ctlToken, vl, path)
}

// next sends from the output stage: the normal lanes in round-robin
// order and the enabled SAQs in round-robin order, the two classes taking
// turns, each packet only when the next switch has credits for it (the
// credits are per port and lane, shared by all queues: §3.7).
func (a *recnArch) next(oi int32, o *outPort, start des.Time) {
	a.setup()
	f := a.f
	ro := &a.out[oi]
	queued := false
	for pass := 0; pass < 2; pass++ {
		if (pass == 0) == (ro.normalRun >= saqWeight) {
			if ro.inUse == 0 {
				continue
			}
			n := len(ro.saqs)
			for j, k := 0, ro.rrSAQ; j < n; j++ {
				s := &ro.saqs[k]
				if s.active && !s.gated() && s.q.head != nil {
					p := s.q.head
					if o.credits[s.vl] >= p.blocks {
						s.q.pop()
						s.blocks -= p.blocks
						ro.rrSAQ = (k + 1) % n
						ro.normalRun = 0
						f.send(oi, p, int(s.vl), start)
						a.outputLeft(oi, p, k)
						return
					}
					queued = true
				}
				if k++; k == n {
					k = 0
				}
			}
			continue
		}
		n := len(o.outq)
		for j, v := 0, o.rrVL; j < n; j++ {
			if p := o.outq[v].head; p != nil {
				if o.credits[v] >= p.blocks {
					o.outq[v].pop()
					ro.normBlocks -= p.blocks
					if o.rrVL = v + 1; o.rrVL == n {
						o.rrVL = 0
					}
					ro.normalRun++
					f.send(oi, p, v, start)
					a.outputLeft(oi, p, -1)
					return
				}
				queued = true
			}
			if v++; v == n {
				v = 0
			}
		}
	}
	if queued {
		f.wakeForCredits(oi, o)
	}
}

// outputLeft: packet p left output oi's SAQ k (or its normal queue).
func (a *recnArch) outputLeft(oi int32, p *Packet, k int) {
	ro := &a.out[oi]
	ro.passMarkers(p, func(j int) { a.maybeFreeOutput(oi, j) })
	if k >= 0 {
		s := &ro.saqs[k]
		if s.xoffSent && s.blocks < a.xon {
			s.xoffSent = false
			a.stats.Xon++
			a.note("xon-out", oi, k, s.blocks)
			a.setInputXoff(oi, k, false)
		}
		a.maybeFreeOutput(oi, k)
		return
	}
	a.maybeEndRoot(oi)
}

// control handles the RECN control packets at out-port oi.
func (a *recnArch) control(oi int32, c *Control) {
	a.setup()
	f := a.f
	path, _ := c.Data.(string)
	switch c.Kind {
	case ctlNotify: // from the input SAQ downstream (§3.4)
		ro := &a.out[oi]
		if f.out[oi].sw < 0 {
			if a.nics != nil {
				a.nicNotify(oi, c.VL, path)
			}
			return
		}
		down := f.out[oi].down
		if findExact(ro.saqs, c.VL, path) >= 0 {
			a.sendDown(oi, ctlToken, c.VL, path)
			return
		}
		k := a.allocate(ro, c.VL, path, down, -1)
		if k < 0 {
			a.stats.Exhausted++
			a.stats.ExhaustedOutput++
			a.sendDown(oi, ctlToken, c.VL, path) // refused: the token goes back (§3.8)
			return
		}
		a.stats.MaxSAQsPerOutput = max(a.stats.MaxSAQsPerOutput, ro.inUse)
		a.note("alloc-out", oi, k, 0)
		s := &ro.saqs[k]
		o := &f.out[oi]
		if q := &o.outq[c.VL]; q.tail != nil {
			ro.markers = append(ro.markers, marker{q.tail, k})
			s.markers++
		}
		for j := range ro.saqs {
			x := &ro.saqs[j]
			if j != k && x.active && x.vl == c.VL && strings.HasPrefix(path, x.path) && x.q.tail != nil {
				ro.markers = append(ro.markers, marker{x.q.tail, k})
				s.markers++
			}
		}
		a.stats.Markers += uint64(s.markers)
	case ctlToken: // from the output SAQ upstream: a branch is gone
		ii := f.out[oi].creditFor
		rp := &a.in[ii]
		if k := findExact(rp.saqs, c.VL, path); k >= 0 && rp.saqs[k].children > 0 {
			s := &rp.saqs[k]
			s.children--
			// The upstream SAQ is gone (or was never allocated): a SAQ
			// still past its threshold notifies again.
			s.notified, s.xoffSent = false, false
			a.maybeFreeInput(ii, k)
		}
	case ctlXoff, ctlXon:
		ro := &a.out[oi]
		if k := findExact(ro.saqs, c.VL, path); k >= 0 {
			ro.saqs[k].xoff = c.Kind == ctlXoff
			if c.Kind == ctlXon {
				f.transmit(oi)
			}
		}
	}
}

// handle: the cut-through event of the cioq datapath, and allocation
// kicks after a SAQ was enabled.
func (a *recnArch) handle(kind int, ai int32, vl, rest int, ref any) {
	switch kind {
	case opRECNKick:
		a.f.alloc.arbitrate(&a.f.sw[ai])
		return
	case opRECNIdle:
		c := ref.(*idleCheck)
		if c.out {
			if s := &a.out[ai].saqs[c.k]; s.gen == c.gen && s.active && !s.used {
				a.maybeFreeOutput(ai, c.k)
			}
		} else if s := &a.in[ai].saqs[c.k]; s.gen == c.gen && s.active && !s.used {
			a.maybeFreeInput(ai, c.k)
		}
		return
	}
	a.cioqArch.handle(kind, ai, vl, rest, ref)
}

// check verifies the RECN bookkeeping against the queues (for tests): the
// occupancy of every SAQ and normal output queue, the SAQs in use per
// port, and the markers per SAQ.
func (a *recnArch) check() []string {
	if a.in == nil {
		return nil
	}
	f := a.f
	var bad []string
	sum := func(q *fifo) (b int32) {
		for p := q.head; p != nil; p = p.next {
			b += p.blocks
		}
		return b
	}
	side := func(name string, port int, rp *recnPort, limit int, queue func(k int) *fifo) {
		n, marks := 0, make([]int, len(rp.saqs))
		for _, m := range rp.markers {
			marks[m.target]++
		}
		for k := range rp.saqs {
			s := &rp.saqs[k]
			q := queue(k)
			if !s.active {
				if q.n != 0 || marks[k] != 0 {
					bad = append(bad, fmt.Sprintf("%s %d: free SAQ %d holds %d packets, %d markers", name, port, k, q.n, marks[k]))
				}
				continue
			}
			n++
			if b := sum(q); b != s.blocks {
				bad = append(bad, fmt.Sprintf("%s %d: SAQ %d counts %d blocks, holds %d", name, port, k, s.blocks, b))
			}
			if marks[k] != s.markers {
				bad = append(bad, fmt.Sprintf("%s %d: SAQ %d counts %d markers, %d placed", name, port, k, s.markers, marks[k]))
			}
			if s.children < 0 {
				bad = append(bad, fmt.Sprintf("%s %d: SAQ %d has %d branches", name, port, k, s.children))
			}
		}
		if n != rp.inUse || n > limit {
			bad = append(bad, fmt.Sprintf("%s %d: %d SAQs active, %d counted, max %d", name, port, n, rp.inUse, limit))
		}
	}
	for ii := range a.in {
		if f.in[ii].sw < 0 {
			continue
		}
		side("in-port", ii, &a.in[ii], a.cfg.MaxSAQs, func(k int) *fifo { return &f.in[ii].queues[f.nVL+k].fifo })
	}
	for oi := range a.out {
		ro := &a.out[oi]
		if f.out[oi].sw < 0 {
			if a.nics == nil {
				continue
			}
			side("host port", oi, ro, a.cfg.NICSAQs, func(k int) *fifo { return &ro.saqs[k].q })
			var held int32
			for k := range ro.saqs {
				held += sum(&ro.saqs[k].q)
			}
			if ns := &a.nics[f.out[oi].host]; held != ns.held || held > a.nicMem {
				bad = append(bad, fmt.Sprintf("host port %d: NIC SAQs hold %d blocks, counted %d, memory %d", oi, held, ns.held, a.nicMem))
			}
			continue
		}
		side("out-port", oi, ro, a.cfg.MaxSAQs, func(k int) *fifo { return &ro.saqs[k].q })
		var norm int32
		for v := range f.out[oi].outq {
			norm += sum(&f.out[oi].outq[v])
		}
		if norm != ro.normBlocks {
			bad = append(bad, fmt.Sprintf("out-port %d: normal queues count %d blocks, hold %d", oi, ro.normBlocks, norm))
		}
	}
	return bad
}
