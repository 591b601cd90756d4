package fabric

import (
	"fmt"
	"unsafe"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/internal/units"
)

// Deadlock detection and software recovery, for routing functions whose
// channel dependency graph is cyclic (TFAR, routing.escape none): paper
// 001 §4, "we use software-based deadlock recovery [12] and a True Fully
// Adaptive routing algorithm (TFAR) ... In order to detect network
// deadlocks, we use the mechanism proposed in [10] with a deadlock
// detection threshold equal to 32 cycles."
//
// Detection, after [10] (P. López, J.M. Martínez, J. Duato, "A Very
// Efficient Distributed Deadlock Detection Mechanism for Wormhole
// Networks", HPCA 1998). Its published abstract says the mechanism "uses
// only local information, detects all the deadlocks, considerably reduces
// the probability of false deadlock detection" compared with crude
// time-outs; the text of the paper was not at hand, so the rule below is
// what is known of it and is stated as an assumption:
//   - every physical output channel keeps the time a flit last crossed it
//     (here: when its last data transmission ended);
//   - a blocked message header (the head of an input queue none of whose
//     routing candidates can take it, its input's crossbar idle, not at
//     its destination switch, not in an injection channel, where it holds
//     no network channel and so is in no cycle) is presumed deadlocked when every physical
//     channel it may use has been inactive (no flit crossed) for longer
//     than the threshold t;
//   - only the message that blocked first is a candidate: a header that
//     blocked when the channels it waits for had already stopped (no flit
//     for a sweep period) is queued behind a message that blocked before
//     it and is never presumed deadlocked; and a flag per physical output
//     channel keeps, among the candidate headers blocked on it, the one
//     that blocked first (a flit crossing the channel clears it); a
//     header must hold the flag of every channel it may use. Of a chain
//     of headers blocked behind one another only the first can be
//     presumed deadlocked, and every deadlock still has a candidate: of
//     the messages it blocks forever, the one that blocked first found
//     the channels it waits for moving (the reduction of false
//     detections the paper claims over plain time-outs).
//
// The fabric is event driven, so the rule is evaluated by a sweep over
// the input queues every t/4 (fabric.deadlock: a detection lands between
// t and 1.25 t after the channels went quiet), not every cycle. The
// sweep judges who blocked first by the sweep that first found each
// header blocked (ties: the lower packet ID).
//
// Recovery, after [12] (J.M. Martínez, P. López, J. Duato, "A
// Cost-Effective Approach to Deadlock Handling in Wormhole Networks",
// IEEE TPDS 2001): the presumed-deadlocked message is absorbed at the
// node where its header is (it leaves through that node's ejection
// channel into the node's memory, freeing the buffer and channels it
// held) and reinjected from that node towards its destination through
// the node's injection channels (whichever can take it first), ahead of
// the node's own new messages. It
// keeps its source, generation and first injection times, so latency and
// per-source figures are the original message's. The node is the first
// host of the switch where the header is; recovery therefore needs every
// switch to have a host (tori and meshes with hosts on every switch, as
// paper 001's direct networks). Absorbed packets stay counted as in the
// fabric until they are delivered: packet conservation holds with them.

// Recovery modes (DeadlockConfig.Recovery).
const (
	RecoveryNone     = "none"
	RecoverySoftware = "software"
)

// DeadlockConfig configures deadlock detection and recovery (fabric.deadlock).
// DefaultDeadlockConfig holds the paper's threshold; a zero
// ThresholdCycles or Cycle of a configuration built in code means that
// default too, while an explicit 0 in a file or --set is refused (the
// nonzero tags).
type DeadlockConfig struct {
	Recovery        string      `yaml:"recovery,omitempty" json:"recovery,omitempty" doc:"deadlock recovery: none (the default) or software (a message detected as deadlocked is absorbed at the node where its header is and reinjected from there, ref. [12] of paper 001); software turns detection on; routing.escape none (TFAR) needs it" paper:"001 §4"`
	Detection       bool        `yaml:"detection,omitempty" json:"detection,omitempty" doc:"run the deadlock detection of ref. [10] of paper 001 and count what it detects, without recovering (for measuring false detections); recovery software implies it" paper:"001 §4"`
	ThresholdCycles int         `yaml:"threshold_cycles,omitempty" json:"threshold_cycles,omitempty" doc:"detection threshold t in cycles: a blocked header is presumed deadlocked when every channel it may use has been inactive for longer than t (paper 001 §4: 32)" paper:"001 §4" nonzero:"1 to 1048576 cycles (leave the key out for the default, 32)"`
	Cycle           units.Bytes `yaml:"cycle_bytes,omitempty" json:"cycle_bytes,omitempty" unit:"bytes" doc:"virtual cut-through: bytes a link carries in one cycle for threshold_cycles, a cycle being their serialization time (16 bytes: a flit of paper 001's 16-flit, 256-byte messages); wormhole switching ignores it: its cycle is one flit, fabric.flit_bytes" paper:"001 §4" nonzero:"1 byte to 1GiB (leave the key out for the default, 16B)"`
	Threshold       des.Time    `yaml:"threshold,omitempty" json:"threshold,omitempty" unit:"time" doc:"detection threshold t as a time; when set it replaces threshold_cycles; 0s: not set, threshold_cycles applies"`
}

// Defaults of DeadlockConfig (paper 001 §4: t = 32 cycles of a flit of
// 16 bytes).
const (
	DefaultThresholdCycles = 32
	DefaultCycleBytes      = 16
)

// DefaultDeadlockConfig is detection and recovery off, with paper 001's
// threshold of 32 cycles of 16 bytes.
func DefaultDeadlockConfig() DeadlockConfig {
	return DeadlockConfig{ThresholdCycles: DefaultThresholdCycles, Cycle: DefaultCycleBytes}
}

// IsZero reports whether the configuration is off and at its defaults,
// so that the JSON summaries of runs that do not use it leave it out.
func (c DeadlockConfig) IsZero() bool {
	return c.Recovery == "" && !c.Detection && c.Threshold == 0 &&
		(c.ThresholdCycles == 0 || c.ThresholdCycles == DefaultThresholdCycles) &&
		(c.Cycle == 0 || c.Cycle == DefaultCycleBytes)
}

// Active reports whether detection runs.
func (c DeadlockConfig) Active() bool { return c.Detection || c.Recovery == RecoverySoftware }

// Validate checks the deadlock configuration on its own.
func (c DeadlockConfig) Validate() error {
	switch c.Recovery {
	case "", RecoveryNone, RecoverySoftware:
	default:
		return fmt.Errorf("deadlock.recovery %q: want none or software", c.Recovery)
	}
	if c.ThresholdCycles < 0 || c.ThresholdCycles > 1<<20 {
		return fmt.Errorf("deadlock.threshold_cycles %d: want 1 to %d cycles", c.ThresholdCycles, 1<<20)
	}
	if c.Cycle < 0 || c.Cycle > MaxBufferBytes {
		return fmt.Errorf("deadlock.cycle_bytes %v: want 1 byte to %v", c.Cycle, units.Bytes(MaxBufferBytes))
	}
	if c.Threshold < 0 || c.Threshold > MaxDelay {
		return fmt.Errorf("deadlock.threshold %v: want 0s (not set: threshold_cycles applies) to %v", c.Threshold, MaxDelay)
	}
	return nil
}

// ThresholdTime returns the detection threshold t on links of dataRate
// bits per second.
func (c DeadlockConfig) ThresholdTime(dataRate int64) des.Time {
	if c.Threshold > 0 {
		return c.Threshold
	}
	cycles, cyc := c.ThresholdCycles, int64(c.Cycle)
	if cycles == 0 {
		cycles = DefaultThresholdCycles
	}
	if cyc == 0 {
		cyc = DefaultCycleBytes
	}
	return des.Time(cycles) * serTime(cyc, dataRate)
}

// DeadlockStats counts what detection and recovery did.
type DeadlockStats struct {
	// Detections counts messages presumed deadlocked.
	Detections uint64
	// Recoveries counts messages absorbed at a node, Reinjections those
	// put back into the network from there.
	Recoveries   uint64
	Reinjections uint64
	// ReinjectionsHeld counts the times the host's injection control
	// held an absorbed packet back (RecoveryGate).
	ReinjectionsHeld uint64
	// FalseDetections counts the detections of messages that were not
	// deadlocked (deadlock_truth.go: the simulator's look at the whole
	// network when a detection fires); counted under wormhole switching
	// only, where Classified is true.
	FalseDetections uint64
	Classified      bool
}

// waitRec is what the sweep knows of one input queue's head: which packet
// it is, since when it has been found blocked, and whether it was
// counted as detected.
type waitRec struct {
	p    *Packet
	from des.Time
	// blocked: found blocked at the last sweep; first: when it was first
	// found blocked, a flit had crossed every channel it waits for within
	// the last sweep period (it blocked before what it waits for stopped).
	blocked, first bool
	detected       bool
}

// chanFlag is the flag of a physical output channel: the header that
// blocked on it first (queue qi of in-port ii), since when, and when the
// flag was set.
type chanFlag struct {
	p     *Packet
	ii    int32
	qi    int32
	from  des.Time
	setAt des.Time
}

// blockedHead is a header found blocked in this sweep.
type blockedHead struct {
	ii, qi   int32
	p        *Packet
	outs     []int32 // distinct out-ports it may use
	inactive bool    // every one inactive for longer than the threshold
}

// detector runs detection and recovery (f.dl, nil when off).
type detector struct {
	f         *Fabric
	threshold des.Time
	period    des.Time
	recover   bool
	// cyclic: the routing function relies on recovery (TFAR): its
	// channel dependency graph has cycles, so it can deadlock.
	cyclic bool
	// lastFlit[oi] is when the last data transmission on out-port oi
	// ended (or will end): the channel is inactive from then on.
	lastFlit []des.Time
	flags    []chanFlag
	wait     [][]waitRec // per in-port, per queue
	// local[s] is the host whose node absorbs messages at switch s
	// (recovery), -1 if none.
	local []int32
	// recq[h] holds the packets host h absorbed, to reinject.
	recq []fifo
	// gate: the endpoint's injection control for them, or nil.
	gate    RecoveryGate
	queued  int
	Stats   DeadlockStats
	cands   []route.Candidate
	blocked []blockedHead
	outBuf  []int32
	arb     []bool
	// ground truth (deadlock_truth.go), under wormhole
	dead       []bool
	headOf     map[*Packet]int32
	heads      []int32
	truthCands []route.Candidate
}

// setupDeadlock builds the detector if fabric.deadlock asks for it, and
// refuses a routing function that relies on recovery without it.
func (f *Fabric) setupDeadlock() error {
	c := f.cfg.Deadlock
	if f.router.RelyOnRecovery() && c.Recovery != RecoverySoftware && f.router.Checked() {
		return fmt.Errorf("routing.escape none (TFAR) has a cyclic channel dependency graph and relies on deadlock recovery: set fabric.deadlock.recovery=software (paper 001 §4), or choose an escape function with routing.escape (auto, dor, updown, bubble, min); routing.check=off lets it run without recovery, to watch it deadlock")
	}
	if !c.Active() {
		return nil
	}
	if f.cfg.Wormhole() {
		c.Cycle = units.Bytes(f.cfg.Flit()) // a cycle is a flit's time on a link (paper 001 §4)
	}
	d := &detector{f: f, threshold: c.ThresholdTime(f.dataRate), recover: c.Recovery == RecoverySoftware, cyclic: f.router.RelyOnRecovery()}
	d.Stats.Classified = f.wh != nil
	d.period = max(d.threshold/4, 1)
	d.lastFlit = make([]des.Time, len(f.out))
	d.flags = make([]chanFlag, len(f.out))
	d.wait = make([][]waitRec, len(f.in))
	for i := range f.in {
		n := len(f.in[i].queues)
		if f.wh != nil {
			n = f.nVL // one header per lane
		}
		d.wait[i] = make([]waitRec, n)
	}
	d.arb = make([]bool, len(f.sw))
	if d.recover {
		if f.cfg.Switch != "cioq" && f.cfg.Switch != "iq" {
			return fmt.Errorf("fabric.deadlock.recovery software absorbs a message from its input lane's FIFO; fabric.switch %s queues otherwise: use cioq or iq", f.cfg.Switch)
		}
		d.local = make([]int32, len(f.sw))
		for s := range d.local {
			d.local[s] = -1
		}
		for h := len(f.topo.Hosts) - 1; h >= 0; h-- {
			d.local[f.topo.Hosts[h].At.Switch] = int32(h)
		}
		for s, h := range d.local {
			if h < 0 {
				return fmt.Errorf("fabric.deadlock.recovery software absorbs a deadlocked message at the node where its header is, and switch %d of topology %q has no host to absorb it", s, f.topo.Name)
			}
		}
		d.recq = make([]fifo, len(f.hostOut))
		d.gate, _ = f.ep.(RecoveryGate)
	}
	f.dl = d
	f.eng.Schedule(d.period, d, 0, 0, nil)
	return nil
}

// DeadlockPortBytes is the state detection keeps per port (an in-port and
// an out-port): a record per queue (per lane under wormhole) of the
// in-port's waiting header, and the out-port's last flit time and flag.
func DeadlockPortBytes(cfg Config, nVL, queues int) int64 {
	if cfg.Wormhole() {
		queues = nVL
	}
	return int64(queues)*int64(unsafe.Sizeof(waitRec{})) + int64(unsafe.Sizeof([]waitRec(nil))) +
		int64(unsafe.Sizeof(des.Time(0))+unsafe.Sizeof(chanFlag{}))
}

// DeadlockStats returns what detection and recovery did so far (zero when
// they are off).
func (f *Fabric) DeadlockStats() DeadlockStats {
	if f.dl == nil {
		return DeadlockStats{}
	}
	return f.dl.Stats
}

// DeadlockDetection reports whether deadlock detection runs, and its
// threshold.
func (f *Fabric) DeadlockDetection() (on bool, threshold des.Time) {
	if f.dl == nil {
		return false, 0
	}
	return true, f.dl.threshold
}

// sent records that a data transmission on out-port oi lasts until end.
func (d *detector) sent(oi int32, end des.Time) { d.lastFlit[oi] = end }

// Handle runs one sweep and schedules the next.
func (d *detector) Handle(*des.Event) {
	d.sweep()
	d.f.eng.After(d.period, d, 0, 0, nil)
}

// sweep finds the blocked headers, updates the channel flags, then
// detects (and recovers) the headers the rule presumes deadlocked.
func (d *detector) sweep() {
	f := d.f
	now := f.eng.Now()
	d.blocked = d.blocked[:0]
	d.outBuf = d.outBuf[:0]
	for ii := range f.in {
		ip := &f.in[ii]
		if ip.sw < 0 || f.out[ip.up].host >= 0 {
			continue // a NIC, or an injection channel: a header there holds no network channel, so it is in no cycle
		}
		if f.wh == nil && ip.queued == 0 {
			continue
		}
		for qi := range d.wait[ii] {
			p, busy := d.head(int32(ii), int32(qi))
			rec := &d.wait[ii][qi]
			if p == nil {
				rec.p = nil
				continue
			}
			if rec.p != p {
				*rec = waitRec{p: p, from: now}
			}
			if p.recover || busy {
				rec.blocked = false
				continue
			}
			d.examine(int32(ii), int32(qi), p, rec, now)
		}
	}
	truth := false
	for _, b := range d.blocked {
		if !b.inactive {
			continue
		}
		holds := true
		for _, oi := range b.outs {
			holds = holds && d.flags[oi].p == b.p && d.flagValid(oi, &d.flags[oi])
		}
		rec := &d.wait[b.ii][b.qi]
		if !holds || !rec.first || rec.detected {
			continue
		}
		rec.detected = true
		d.Stats.Detections++
		if f.wh != nil {
			if !truth {
				d.whDeadlocked()
				truth = true
			}
			if !d.dead[int(b.ii)*f.nVL+int(b.qi)] {
				d.Stats.FalseDetections++
			}
		}
		if d.recover {
			b.p.recover = true
			if f.wh == nil {
				q := &f.in[b.ii].queues[b.qi]
				q.candsFor = nil // route it to the local node instead
			}
			d.arb[f.in[b.ii].sw] = true
		}
	}
	for s, on := range d.arb {
		if !on {
			continue
		}
		d.arb[s] = false
		if f.wh != nil {
			f.wh.retry(s)
		} else {
			f.alloc.arbitrate(&f.sw[s])
		}
	}
}

// head returns the header waiting at queue qi of in-port ii (under
// wormhole: lane qi, whose routed head has no lane yet), or nil, and
// whether it is not blocked on its outputs but on its input (VCT: the
// input's crossbar is busy with another packet).
func (d *detector) head(ii, qi int32) (p *Packet, busy bool) {
	f := d.f
	if f.wh != nil {
		l := &f.wh.lanes[int(ii)*f.nVL+int(qi)]
		if l.pkt == nil || !l.routed || l.to >= 0 {
			return nil, false
		}
		return l.pkt, false
	}
	ip := &f.in[ii]
	return ip.queues[qi].head, ip.xbarBusy
}

// room reports whether output (port, vl) of switch s could take p now.
func (d *detector) room(s *Switch, c route.Candidate, p *Packet) bool {
	f := d.f
	if f.wh != nil {
		f.wh.room.sw, f.wh.room.host = s, -1
		ok, _ := f.wh.room.Room(c.Port, c.VL)
		return ok
	}
	ok, _ := f.arch.room(&f.out[s.out[c.Port]], c.VL, p.blocks)
	return ok
}

// examine looks at header p waiting at queue qi of in-port ii: if none of
// its outputs can take it, it is blocked; its channels' flags go to the
// header that blocked first.
func (d *detector) examine(ii, qi int32, p *Packet, rec *waitRec, now des.Time) {
	f := d.f
	ip := &f.in[ii]
	s := &f.sw[ip.sw]
	d.cands = f.router.Candidates(s.ID, s.routePort(int(ip.port)), int(p.inVL), int(p.Dst), d.cands[:0])
	inactive := true
	first := len(d.outBuf)
	// Under wormhole a head that came on an escape lane may take only
	// escape lanes (wormhole.inEscape): it waits for those alone.
	escOnly := f.wh != nil && f.wh.inEscape(s, ip, p)
	for _, c := range d.cands {
		if escOnly && !f.router.IsEscape(int(c.VL)) {
			continue
		}
		oi := s.out[c.Port]
		if f.in[f.out[oi].down].sw < 0 || d.room(s, c, p) {
			// at its destination (an ejection channel is a sink, never
			// in a deadlock), or not blocked
			d.outBuf = d.outBuf[:first]
			rec.blocked = false
			return
		}
		if now-d.lastFlit[oi] <= d.threshold {
			inactive = false
		}
		dup := false
		for _, x := range d.outBuf[first:] {
			dup = dup || x == oi
		}
		if !dup {
			d.outBuf = append(d.outBuf, oi)
		}
	}
	if !rec.blocked { // it blocked since the last sweep
		rec.blocked, rec.from, rec.first = true, now, true
		for _, oi := range d.outBuf[first:] {
			if d.lastFlit[oi] < now-d.period {
				rec.first = false // what it waits for had stopped before it blocked
			}
		}
	}
	if !rec.first && d.cyclic && now-rec.from > stuckThresholds*d.threshold {
		rec.first = true // the sweep's view of "first" missed it: see stuckThresholds
	}
	d.blocked = append(d.blocked, blockedHead{ii: ii, qi: qi, p: p, outs: d.outBuf[first:len(d.outBuf):len(d.outBuf)], inactive: inactive})
	if !rec.first {
		return // queued behind an earlier blocked message: it competes for no flag
	}
	// The flag of each channel: kept by the candidate that blocked first
	// while no flit crossed the channel since it was set.
	for _, oi := range d.outBuf[first:] {
		if d.lastFlit[oi] > now {
			continue // transmitting: a flit is crossing
		}
		fl := &d.flags[oi]
		if d.flagValid(oi, fl) && (fl.from < rec.from || fl.from == rec.from && fl.p.ID <= p.ID) {
			continue
		}
		*fl = chanFlag{p: p, ii: ii, qi: qi, from: rec.from, setAt: now}
	}
}

// stuckThresholds bounds how long a header that was not the first to
// block may wait: blocked for this many thresholds, it becomes a
// candidate anyway. The sweep judges "first" by whether the channels a
// header waits for carried a flit within a sweep period before it was
// found blocked; a worm that was moving but had no flit on that channel
// in that period (its channel multiplexed, its credits on the way) makes
// the first blocked message of a deadlock look second, and without this
// bound such a deadlock had no candidate (a 16-ary 2-cube under paper
// 001's bursty load stopped so for a millisecond). Eight thresholds (256
// cycles) is long against the threshold and short against a run.
//
// The bound applies only to a routing function that can deadlock
// (TFAR, detector.cyclic). It exists so that every deadlock has a
// candidate; with an acyclic escape function there is none to find, and
// past saturation it only made false detections: the heads of a jam wait
// longer than 256 cycles. On a 16-ary 2-cube of paper 001's router with
// the dateline escape at load 1.0 it made 251 of 1,071 detections in
// 150 us, all of them false (deadlock_truth.go; docs/validation.md).
const stuckThresholds = 8

// flagValid reports whether the flag of out-port oi still stands: its
// header is still the head of its queue and no flit crossed the channel
// since it was set.
func (d *detector) flagValid(oi int32, fl *chanFlag) bool {
	if fl.p == nil || d.lastFlit[oi] > fl.setAt {
		return false
	}
	p, _ := d.head(fl.ii, fl.qi)
	return p == fl.p
}

// ejectCandidate routes a packet presumed deadlocked at switch s to the
// node that absorbs it: any lane of the ejection channel of the switch's
// first host.
func (d *detector) ejectCandidate(s *Switch, buf []route.Candidate) []route.Candidate {
	_, port := d.f.router.HostSwitch(int(d.local[s.ID]))
	buf = buf[:0]
	for v := 0; v < d.f.nVL; v++ {
		buf = append(buf, route.Candidate{Port: int32(port), VL: int32(v)})
	}
	return buf
}

// absorb takes packet p, which was being recovered, into the memory of
// the node at NIC in-port i: its buffer is freed at once (credits go
// back) and it waits to be reinjected from that node.
func (d *detector) absorb(i int32, p *Packet) {
	f := d.f
	if f.wh == nil { // under wormhole every flit's credit went back on arrival
		f.freeInput(i, int(p.VL), p.blocks)
	}
	p.recover = false
	h := f.in[i].host
	d.recq[h].push(p)
	d.queued++
	d.Stats.Recoveries++
	f.progress++
	f.Kick(int(h))
}

// RecoveryGate is an Endpoint whose injection control also decides when
// a message absorbed by deadlock recovery may go back into the network.
// Paper 001 reinjects a recovered message at the node that absorbed it
// (software recovery, its ref. [12]) and says nothing of injection
// control for it; Trans-t limits "the number of injection channels" of a
// node (§3, footnote 2: the node's injection bandwidth), and a
// reinjected message takes one of those channels, so the gate that
// holds the node's new messages holds it too. An Endpoint without it
// (a test double) lets absorbed messages out as soon as a lane is free.
type RecoveryGate interface {
	// AdmitRecovered reports whether host h may start absorbed packet p
	// on its injection port q now; when it may not, the endpoint kicks
	// the fabric (Fabric.Kick) when its answer may change.
	AdmitRecovered(h, q int, p *Packet) bool
	// RecoveredInjected tells the endpoint that the admitted packet
	// started at.
	RecoveredInjected(h int, p *Packet, at des.Time)
}

// reinjection returns the packet host port o reinjects next, or nil: the
// host's absorbed packets go out first, on whichever of its injection
// ports is free first, when the host's injection control admits them
// (RecoveryGate). held: one waits and the gate holds it; the host's new
// packets then wait behind it (the gate's answer is the port's, not the
// packet's: it would hold them too).
func (d *detector) reinjection(o *outPort) (p *Packet, held bool) {
	if d.recq == nil || d.recq[o.host].n == 0 {
		return nil, false
	}
	p = d.recq[o.host].head
	if d.gate != nil && !d.gate.AdmitRecovered(int(o.host), int(o.port), p) {
		d.Stats.ReinjectionsHeld++
		return nil, true
	}
	return p, false
}

// reinjected: host port o started reinjecting its head absorbed packet at.
func (d *detector) reinjected(o *outPort, at des.Time) {
	p := d.recq[o.host].pop()
	d.queued--
	d.Stats.Reinjections++
	if d.gate != nil {
		d.gate.RecoveredInjected(int(o.host), p, at)
	}
}

// Absorbed returns the packets absorbed by nodes and not yet reinjected.
func (f *Fabric) Absorbed() int {
	if f.dl == nil {
		return 0
	}
	return f.dl.queued
}
