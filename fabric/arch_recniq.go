package fabric

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
)

// recnIQArch is RECN-IQ, RECN for input-queued switches (paper 003
// ch. 3): an input stage on a datapath (recnIQDatapath; recn-iq's is iq:
// no output buffers, the crossbar feeds the link) with, at every input,
// one cold queue per lane and up to max_saqs set-aside queues (SAQs) with
// their CAM lines, and at every output a CAM of the same size that holds
// no packets (§3.3.1, Figure 3.3). On a datapath whose input memories
// have several read ports (pciq-K+recn-iq, arch_pciq_recniq.go) every read
// port has a cold queue per lane and max_saqs SAQs of its own (§2.9). What
// it does:
//   - Detection (§3.3.2, §4.1.4): when an input's cold queue (CQ) holds
//     detection_threshold packets, the output requested by the packet at
//     its head is taken as the congested point; unless a CAM line already
//     names it, a SAQ is allocated for the turn to it (Valid set, Xoff and
//     SentXoff clear, §3.3.3). The statistical guess can be wrong: a SAQ
//     so allocated that empties without ever having held xoff_threshold
//     packets is counted as a false positive (§3.3.8).
//   - Post-processing (§3.3.4, §4.1.5): every packet arrives in the CQ;
//     the packet at the head of each queue (CQ or SAQ) is compared with
//     the CAM lines of its input and moved to the tail of the SAQ with the
//     shortest path longer than its queue's own that its remaining turns
//     start with, until no line matches; only then may the allocator take
//     it. Packets move only from heads, CQ to SAQ and SAQ to longer SAQ,
//     which keeps every flow in order. Post-processing takes no time here
//     (the thesis' "enhanced" RECN-IQ, §4.2.3, skips it at low load; this
//     model never delays a packet for it).
//   - Propagation (§3.3.5): an input SAQ reaching xoff_threshold sends
//     Xoff with its path on the reverse channel; the upstream output port
//     takes a CAM line for the path with Xoff set. A packet crossing that
//     output whose turns after it match a line in Xoff makes the output
//     send an internal Xoff to the input it came from, which allocates a
//     SAQ in Xoff for the turn at this switch plus the line's path (or
//     sets Xoff on the SAQ that already has it).
//   - Flow control (§3.3.6, §4.1.7): credits per input memory (lane) for
//     every queue alike; a SAQ in Xoff cannot send. A SAQ that sent Xoff
//     and falls below xon_threshold sends Xon upstream; the output's CAM
//     line leaves Xoff, broadcasts an internal Xon to its switch's inputs,
//     whose SAQs for that point leave Xoff, and is freed (it holds no
//     packets and stops nothing).
//   - Deallocation (§3.3.3, step 10 of §3.3.7): a SAQ that is empty and
//     not in Xoff is freed at once, independently of every other SAQ (no
//     tokens, unlike paper 000).
//   - Arbitration (§3.3.4): the allocator treats the CQ and the SAQs of an
//     input alike (rr or islip, the thesis' choice, §4.1.7).
//   - Exhaustion (not covered by the thesis; paper 000 §3.8's rule): with
//     no free SAQ at an input a detection or internal Xoff allocates
//     nothing and the packets stay where they are; with no free CAM line
//     at an output an Xoff is dropped and upstream inputs keep sending
//     (the credits still bound the memory, so nothing is lost).
//
// Hosts: with nic_saqs > 0 an input fed by a host sends Xon/Xoff to the
// host's injection port, which has SAQs (arch_recniq_nic.go); with -1 it
// sends none and the congestion information stops at the first switch.
// Post-processing delay and per-cycle detection: arch_recniq_ppu.go.
//
// Source routing: a CAM line holds a turn sequence (§3.2, Figure 3.2),
// computed from the deterministic router as for recn (turnpools), so the
// switch refuses adaptive routing.
type recnIQArch struct {
	recnIQDatapath
	f                 *Fabric
	cfg               RECNIQConfig
	saqBase           int // queue index of SAQ 0: the datapath's cold queues come first
	groups            int // read ports per input memory, each with max_saqs SAQs
	detect, xoff, xon int // thresholds in packets
	in                []recnIQPort
	out               []recnIQPort
	where             map[*Packet]int32 // packet in an input SAQ -> its SAQ
	pool              turnpools
	stats             RECNIQStats
	total             int // input SAQs allocated network-wide now
	series            []saqSample
	kickPending       map[int32]bool
	trace             func(ev string, port int32, k int, n int)
	nics              []recnIQNIC // per host; nil unless nic_saqs > 0
	nicMem            int32       // blocks of each NIC's SAQ memory
	ppu               ppuState
}

// recnIQPort is the CAM of one port: SAQs with their queues at inputs,
// lines without queues at outputs.
type recnIQPort struct {
	saqs  []saq // active, vl, path, xoff (the Xoff bit), xoffSent (SentXoff)
	inUse int
	// detected: the SAQ was allocated by detection at the CQ; full: it
	// has held xoff_threshold packets since (inputs only).
	detected, full []bool
}

// RECNIQStats are the counters of the recn-iq switch: the SAQ figures
// paper 003 §4.2 varies (SAQs per input) and the events of ch. 3.
type RECNIQStats struct {
	MaxSAQsPerInput      int    `json:"max_saqs_per_input"`       // most SAQs in use at one input port at once
	MaxCAMLinesPerOutput int    `json:"max_cam_lines_per_output"` // most CAM lines in use at one output port at once
	MaxSAQsTotal         int    `json:"max_saqs_total"`           // most input SAQs in use network-wide at once
	Detections           uint64 `json:"detections"`               // SAQs allocated by detection at the head of a cold queue (§3.3.2)
	FalsePositives       uint64 `json:"false_positives"`          // detection SAQs freed without ever holding xoff_threshold packets (§3.3.8)
	InternalXoff         uint64 `json:"internal_xoff"`            // internal Xoff notifications from an output CAM to an input (§3.3.5)
	Allocations          uint64 `json:"allocations"`              // input SAQs allocated (by detection or internal Xoff)
	Deallocations        uint64 `json:"deallocations"`            // input SAQs freed
	OutputLines          uint64 `json:"output_cam_lines"`         // CAM lines allocated at output ports on Xoff
	Moves                uint64 `json:"post_processed_moves"`     // packets the post-processing moved into a SAQ
	Xoff                 uint64 `json:"xoff"`                     // Xoff sent upstream
	Xon                  uint64 `json:"xon"`                      // Xon sent upstream
	Exhausted            uint64 `json:"saq_exhausted"`            // allocations refused for want of a free SAQ or CAM line
	ExhaustedInput       uint64 `json:"saq_exhausted_input"`
	ExhaustedOutput      uint64 `json:"saq_exhausted_output"`
	RECNIQNICStats
}

// RECNIQReport is the RECN-IQ part of a run's summary.
type RECNIQReport struct {
	RECNIQStats
	SAQsAtEnd int `json:"saqs_at_end"`
	// MeanSAQsPerInput is the input SAQs in use network-wide averaged
	// over the run, per switch input port.
	MeanSAQsPerInput float64 `json:"mean_saqs_per_input"`
	// SAQsOverTime holds, per time bin from 0, the most input SAQs in use
	// network-wide during the bin.
	SAQsOverTime []int `json:"saqs_over_time"`
}

// opRECNIQKick: A: switch. Post-processing gave an idle input a new head,
// or a SAQ left Xoff: run the allocator (scheduled, not called, as it may
// happen during a grant or an arrival). It comes after the datapaths'
// own kinds (cioq's and iq's opArch, pciq's opArch to opArch+2).
const opRECNIQKick = opArch + 3

// recnIQDatapath is the switch organisation RECN-IQ's input stage sits on:
// it queues nothing of RECN-IQ's itself (its enqueue names the cold queue
// an arriving packet joins) and carries granted packets (room, forward
// and its own events). iq, cioq and pciq-K are such datapaths.
type recnIQDatapath interface {
	switchArch
	// coldQueue is the cold queue of lane vl at an input of switch s that
	// holds the packets leaving through output port po.
	coldQueue(s *Switch, vl, po int) int
	// saqGroups is the number of read ports of an input memory, each
	// with a cold queue per lane and max_saqs SAQs; saqGroup is the one
	// that reaches output port po of switch s.
	saqGroups() int
	saqGroup(s *Switch, po int) int
}

// The single-read-port datapaths (iq, cioq): one cold queue per lane.
func (*vlQueues) coldQueue(_ *Switch, vl, _ int) int { return vl }
func (*vlQueues) saqGroups() int                     { return 1 }
func (*vlQueues) saqGroup(*Switch, int) int          { return 0 }

func newRECNIQ(f *Fabric) switchArch { return newRECNIQOn(f, &iqArch{vlQueues{f}}) }

// newRECNIQOn builds RECN-IQ's input stage on datapath dp.
func newRECNIQOn(f *Fabric, dp recnIQDatapath) *recnIQArch {
	c := f.cfg.RECNIQ.resolved()
	a := &recnIQArch{recnIQDatapath: dp, f: f, cfg: c,
		saqBase: dp.queuesPerInput(), groups: dp.saqGroups(),
		detect: c.DetectionThreshold, xoff: c.XoffThreshold, xon: c.XonThreshold,
		where: map[*Packet]int32{}, kickPending: map[int32]bool{}}
	if c.NICSAQs > 0 {
		// At least one largest packet, or a head that belongs in a SAQ
		// could never leave the NIC.
		a.nicMem = max(f.blocks(int32(min(c.NICMemory, 1<<30))), f.blocks(f.maxPacket))
		f.inj = a
	}
	return a
}

// recnIQ returns the RECN-IQ stage of an architecture built on it.
func (a *recnIQArch) recnIQ() *recnIQArch { return a }

// saqs is how many SAQs (and CAM lines) every input and output port has.
func (a *recnIQArch) saqs() int { return a.groups * a.cfg.MaxSAQs }

func (a *recnIQArch) queuesPerInput() int { return a.saqBase + a.saqs() }

func (a *recnIQArch) note(ev string, port int32, k int, n int) {
	if a.trace != nil {
		a.trace(ev, port, k, n)
	}
}

// setup sizes the per-port state once the ports exist.
func (a *recnIQArch) setup() {
	if a.in != nil {
		return
	}
	f := a.f
	mk := func(n int) recnIQPort {
		return recnIQPort{saqs: make([]saq, n), detected: make([]bool, n), full: make([]bool, n)}
	}
	a.in = make([]recnIQPort, len(f.in))
	a.out = make([]recnIQPort, len(f.out))
	for i := range a.in {
		if f.in[i].sw >= 0 {
			a.in[i] = mk(a.saqs())
		}
	}
	for i := range a.out {
		if f.out[i].sw >= 0 {
			a.out[i] = mk(a.saqs())
		}
	}
	a.nicSetup()
}

// route returns the remaining turns of packet p at input ii.
func (a *recnIQArch) route(ii int32, p *Packet) string {
	ip := &a.f.in[ii]
	return a.pool.turns(a.f, int(ip.sw), int(ip.port), int(p.inVL), int(p.Dst))
}

// match is the post-processing's CAM lookup (§3.3.4) for packet p at the
// head of input ii's SAQ cur (or the CQ, cur < 0): the SAQ with the
// shortest path longer than cur's that p's remaining turns start with,
// or -1.
func (a *recnIQArch) match(ii int32, p *Packet, cur int) int {
	rp := &a.in[ii]
	if rp.inUse == 0 {
		return -1
	}
	curLen := 0
	if cur >= 0 {
		curLen = len(rp.saqs[cur].path)
	}
	r := a.route(ii, p)
	best, bestLen := -1, 1<<30
	for k := range rp.saqs {
		s := &rp.saqs[k]
		if s.active && s.vl == p.inVL && len(s.path) > curLen && len(s.path) < bestLen && strings.HasPrefix(r, s.path) {
			best, bestLen = k, len(s.path)
		}
	}
	return best
}

// enqueue: every packet arrives in the CQ of its lane (§3.3.4); one that
// becomes the CQ's head is post-processed at once. Detection looks at
// the CQ's head when the arrival brings the CQ to the threshold.
func (a *recnIQArch) enqueue(ip *inPort, p *Packet) int {
	a.setup()
	f := a.f
	ii := f.sw[ip.sw].in[ip.port]
	cq := a.recnIQDatapath.enqueue(ip, p)
	q := &ip.queues[cq]
	if q.n > 0 && q.n+1 >= a.detect {
		a.detectAt(ii, cq, q.head)
	}
	if q.n > 0 {
		return cq
	}
	k := a.match(ii, p, -1)
	if k < 0 && a.detect <= 1 {
		k = a.allocDetect(ii, p)
	}
	if k < 0 {
		a.headChanged(ii, cq, p)
		return cq
	}
	// p heads the CQ and moves to the SAQ k; while it would head that
	// SAQ too, it moves on to a longer match, as the post-processing
	// would do with the head of a SAQ.
	a.stats.Moves++
	for ip.queues[a.saqBase+k].n == 0 {
		j := a.match(ii, p, k)
		if j < 0 {
			break
		}
		a.stats.Moves++
		k = j
	}
	a.entered(ii, k, p, ip.queues[a.saqBase+k].n+1)
	return a.saqBase + k
}

// detectAt: the CQ cq of input ii holds the threshold; its head h names
// the congested point (§3.3.2). The post-processing then moves h.
func (a *recnIQArch) detectAt(ii int32, cq int, h *Packet) {
	if a.allocDetect(ii, h) >= 0 {
		a.postProcess(ii)
	}
}

// allocDetect allocates a SAQ at input ii for the first turn of packet
// h, unless a CAM line already names it (§3.3.3); it returns the SAQ or -1.
func (a *recnIQArch) allocDetect(ii int32, h *Packet) int {
	t := a.route(ii, h)[:hopBytes]
	rp := &a.in[ii]
	if findExact(rp.saqs, h.inVL, t) >= 0 {
		return -1
	}
	k := a.allocate(ii, h.inVL, t)
	if k < 0 {
		return -1
	}
	rp.detected[k] = true
	a.stats.Detections++
	a.note("detect", ii, k, 0)
	return k
}

// allocate takes a free SAQ of input ii for (vl, path) among those of the
// read port that reaches the path's first turn, or counts the exhaustion
// and returns -1.
func (a *recnIQArch) allocate(ii int32, vl int8, path string) int {
	rp := &a.in[ii]
	lo := a.group(ii, path) * a.cfg.MaxSAQs
	k := freeSAQ(rp.saqs[lo : lo+a.cfg.MaxSAQs])
	if k < 0 {
		a.stats.Exhausted++
		a.stats.ExhaustedInput++
		a.note("exhausted-in", ii, -1, 0)
		return -1
	}
	k += lo
	rp.saqs[k] = saq{active: true, vl: vl, path: path}
	rp.detected[k], rp.full[k] = false, false
	rp.inUse++
	a.total++
	a.stats.Allocations++
	a.stats.MaxSAQsPerInput = max(a.stats.MaxSAQsPerInput, rp.inUse)
	a.stats.MaxSAQsTotal = max(a.stats.MaxSAQsTotal, a.total)
	a.series = append(a.series, saqSample{at: a.f.eng.Now(), total: a.total})
	a.note("alloc-in", ii, k, 0)
	return k
}

// group is the read port of input ii whose SAQs hold path: the one that
// reaches the output port of the path's first turn.
func (a *recnIQArch) group(ii int32, path string) int {
	if a.groups == 1 {
		return 0
	}
	return a.saqGroup(&a.f.sw[a.f.in[ii].sw], int(path[0])<<8|int(path[1]))
}

// entered: packet p joined SAQ k of ii, which now holds n packets (p
// among them, or about to be pushed by the fabric). A gated SAQ hides its
// new head from the allocator; reaching xoff_threshold sends Xoff (§3.3.5).
func (a *recnIQArch) entered(ii int32, k int, p *Packet, n int) {
	f := a.f
	rp := &a.in[ii]
	s := &rp.saqs[k]
	a.where[p] = int32(k)
	if q := &f.in[ii].queues[a.saqBase+k]; n == 1 && s.gated() {
		maskHead(q, p)
	}
	if n == 1 {
		a.headChanged(ii, a.saqBase+k, p)
	}
	if n >= a.xoff {
		rp.full[k] = true
		if !s.xoffSent && a.xoffUpstream(ii) {
			s.xoffSent = true
			a.stats.Xoff++
			a.note("xoff-sent", ii, k, n)
			a.send(ii, ctlXoff, s.vl, s.path)
		}
	}
}

// send queues an Xon or Xoff upstream of in-port ii.
func (a *recnIQArch) send(ii int32, kind uint8, vl int8, path string) {
	a.f.SendControl(ii, &Control{Kind: kind, VL: vl, Size: int32(a.cfg.ControlPacket), Data: path})
}

// left: a packet left SAQ k of ii (crossed the crossbar, or was moved to
// a longer SAQ): Xon below the threshold (§3.3.6), then deallocation of
// an empty SAQ not in Xoff (§3.3.3).
func (a *recnIQArch) left(ii int32, k int) {
	f := a.f
	s := &a.in[ii].saqs[k]
	n := f.in[ii].queues[a.saqBase+k].n
	if s.xoffSent && n < a.xon {
		s.xoffSent = false
		a.stats.Xon++
		a.note("xon-sent", ii, k, n)
		a.send(ii, ctlXon, s.vl, s.path)
	}
	a.maybeFree(ii, k)
}

// maybeFree frees SAQ k of ii if it is empty and not in Xoff.
func (a *recnIQArch) maybeFree(ii int32, k int) {
	f := a.f
	rp := &a.in[ii]
	s := &rp.saqs[k]
	q := &f.in[ii].queues[a.saqBase+k]
	if !s.active || s.xoff || q.n > 0 {
		return
	}
	if s.xoffSent { // cannot happen: an empty SAQ is below xon_threshold
		s.xoffSent = false
		a.stats.Xon++
		a.send(ii, ctlXon, s.vl, s.path)
	}
	if rp.detected[k] && !rp.full[k] {
		a.stats.FalsePositives++
	}
	a.note("free-in", ii, k, 0)
	rp.saqs[k] = saq{}
	rp.detected[k], rp.full[k] = false, false
	q.candsFor = nil
	rp.inUse--
	a.total--
	a.stats.Deallocations++
	a.series = append(a.series, saqSample{at: f.eng.Now(), total: a.total})
	a.redetect(ii)
}

// postProcess runs the post-processing unit of input ii (§3.3.4) until
// no head matches a longer CAM line than its queue's: each move takes a
// head to the tail of another SAQ. It returns whether it moved anything.
func (a *recnIQArch) postProcess(ii int32) bool {
	f := a.f
	if a.in[ii].inUse == 0 {
		return false
	}
	ip := &f.in[ii]
	moved := false
	for again := true; again; {
		again = false
		for v := range ip.queues {
			cur := v - a.saqBase
			for q := &ip.queues[v]; q.head != nil; {
				if cur >= 0 && !a.in[ii].saqs[cur].active {
					break
				}
				k := a.match(ii, q.head, cur)
				if k < 0 {
					break
				}
				a.move(ii, v, k)
				moved, again = true, true
			}
		}
	}
	if moved && !ip.xbarBusy {
		a.kick(ip.sw)
	}
	return moved
}

// move takes the head of queue v of ii to the tail of SAQ k.
func (a *recnIQArch) move(ii int32, v, k int) {
	f := a.f
	ip := &f.in[ii]
	src := &ip.queues[v]
	p := ip.popQ(v)
	if src.candsFor == p {
		src.candsFor = nil
	}
	a.headChanged(ii, v, src.head)
	if v < a.saqBase {
		a.redetect(ii) // the cold queue has a new head
	}
	dst := ip.pushQ(a.saqBase+k, p)
	a.stats.Moves++
	a.entered(ii, k, p, dst.n)
	a.note("move", ii, k, dst.n)
	if cur := v - a.saqBase; cur >= 0 {
		if src.head != nil && a.in[ii].saqs[cur].gated() {
			maskHead(src, src.head)
		}
		a.left(ii, cur)
	}
}

// kick schedules an allocation at switch sw (once per instant).
func (a *recnIQArch) kick(sw int32) {
	if a.kickPending[sw] {
		return
	}
	a.kickPending[sw] = true
	a.f.eng.Schedule(a.f.eng.Now(), a.f, opRECNIQKick, sw, nil)
}

// regate updates the allocator's view of SAQ k of ii after its Xoff bit
// changed.
func (a *recnIQArch) regate(ii int32, k int) {
	f := a.f
	q := &f.in[ii].queues[a.saqBase+k]
	if a.hidden(ii, a.saqBase+k) {
		if q.head != nil {
			maskHead(q, q.head)
		}
		return
	}
	if q.candsFor == q.head {
		q.candsFor = nil
	}
	if q.head != nil {
		a.kick(f.in[ii].sw)
	}
}

// forward: the granted packet leaves its queue and goes onto the link
// (iq). On its way the output's CAM is searched (§3.3.5): a line in Xoff
// that its later turns match sends an internal Xoff to its input. Then
// the input's queues have new heads to post-process, and the CQ a new
// head for detection.
func (a *recnIQArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	k, inSAQ := a.where[p]
	if inSAQ {
		delete(a.where, p)
	}
	if ro := &a.out[oi]; ro.inUse > 0 {
		if r := a.route(ii, p); len(r) > hopBytes {
			if j := longestMatch(ro.saqs, int8(vl), r[hopBytes:]); j >= 0 && ro.saqs[j].xoff {
				a.internalXoff(ii, p.inVL, r[:hopBytes]+ro.saqs[j].path)
			}
		}
	}
	a.recnIQDatapath.forward(ii, oi, p, vl)
	cq := a.coldQueue(&f.sw[f.in[ii].sw], int(p.inVL), int(f.out[oi].port))
	if inSAQ {
		a.headChanged(ii, a.saqBase+int(k), f.in[ii].queues[a.saqBase+int(k)].head)
	} else {
		a.headChanged(ii, cq, f.in[ii].queues[cq].head)
	}
	if inSAQ {
		a.left(ii, int(k))
	}
	a.postProcess(ii)
	if q := &f.in[ii].queues[cq]; q.head != nil && q.n >= a.detect {
		a.detectAt(ii, cq, q.head)
	}
}

// internalXoff: an output CAM line in Xoff matched a packet from input
// ii: the input allocates a SAQ in Xoff for path (the turn at this switch
// plus the line's path), or sets Xoff on the SAQ it has for it (§3.3.5).
func (a *recnIQArch) internalXoff(ii int32, vl int8, path string) {
	a.stats.InternalXoff++
	rp := &a.in[ii]
	k := findExact(rp.saqs, vl, path)
	if k < 0 {
		if k = a.allocate(ii, vl, path); k < 0 {
			return
		}
	}
	if s := &rp.saqs[k]; !s.xoff {
		s.xoff = true
		a.regate(ii, k)
		a.note("xoff-in", ii, k, 0)
	}
}

// control handles Xoff and Xon at output port oi (§3.3.5, §3.3.6).
func (a *recnIQArch) control(oi int32, c *Control) {
	a.setup()
	f := a.f
	o := &f.out[oi]
	if o.sw < 0 {
		a.nicControl(oi, c)
		return
	}
	path, _ := c.Data.(string)
	ro := &a.out[oi]
	j := findExact(ro.saqs, c.VL, path)
	switch c.Kind {
	case ctlXoff:
		if j < 0 {
			if j = freeSAQ(ro.saqs); j < 0 {
				a.stats.Exhausted++
				a.stats.ExhaustedOutput++
				a.note("exhausted-out", oi, -1, 0)
				return
			}
			ro.saqs[j] = saq{active: true, vl: c.VL, path: path}
			ro.inUse++
			a.stats.OutputLines++
			a.stats.MaxCAMLinesPerOutput = max(a.stats.MaxCAMLinesPerOutput, ro.inUse)
		}
		ro.saqs[j].xoff = true
		a.note("xoff-out", oi, j, 0)
	case ctlXon:
		if j < 0 {
			return
		}
		// The line leaves Xoff and broadcasts an internal Xon: every
		// input of the switch with a SAQ for the point leaves Xoff. The
		// line, in Xon and holding nothing, is freed.
		ro.saqs[j] = saq{}
		ro.inUse--
		a.note("xon-out", oi, j, 0)
		full := turn(o.port, int(c.VL)) + path
		for _, ii := range f.sw[o.sw].in {
			if ii < 0 {
				continue
			}
			rp := &a.in[ii]
			for k := range rp.saqs {
				s := &rp.saqs[k]
				if !s.active || !s.xoff || s.path != full {
					continue
				}
				s.xoff = false
				a.regate(ii, k)
				a.note("xon-in", ii, k, 0)
				a.maybeFree(ii, k)
			}
		}
	}
}

func (a *recnIQArch) handle(kind int, ai int32, vl, blocks int, ref any) {
	switch kind {
	case opRECNIQKick:
		a.kickPending[ai] = false
		a.f.alloc.arbitrate(&a.f.sw[ai])
	case opRECNIQDetect:
		a.detectAll(ai)
	case opRECNIQReady:
		a.ready(ai, blocks, ref.(*Packet))
	default:
		a.recnIQDatapath.handle(kind, ai, vl, blocks, ref)
	}
}

// check verifies the RECN-IQ bookkeeping against the queues (for tests):
// SAQs in use per port and per read port within max_saqs, each SAQ in the
// read port of its first turn, free SAQs empty, every packet in a SAQ
// recorded there, and a SAQ in Xoff with a head hiding it.
func (a *recnIQArch) check() []string {
	if a.in == nil {
		return nil
	}
	f := a.f
	var bad []string
	for ii := range a.in {
		if f.in[ii].sw < 0 {
			continue
		}
		rp := &a.in[ii]
		n := 0
		perGroup := make([]int, a.groups)
		for k := range rp.saqs {
			s := &rp.saqs[k]
			q := &f.in[ii].queues[a.saqBase+k]
			if !s.active {
				if q.n != 0 {
					bad = append(bad, fmt.Sprintf("in-port %d: free SAQ %d holds %d packets", ii, k, q.n))
				}
				continue
			}
			n++
			g := k / a.cfg.MaxSAQs
			if perGroup[g]++; perGroup[g] > a.cfg.MaxSAQs || a.group(int32(ii), s.path) != g {
				bad = append(bad, fmt.Sprintf("in-port %d: SAQ %d [% x] in read port %d (%d SAQs there, max %d)", ii, k, s.path, g, perGroup[g], a.cfg.MaxSAQs))
			}
			for p := q.head; p != nil; p = p.next {
				if w, ok := a.where[p]; !ok || int(w) != k {
					bad = append(bad, fmt.Sprintf("in-port %d: packet %d in SAQ %d recorded in %d (%v)", ii, p.ID, k, w, ok))
				}
			}
			if s.gated() && q.head != nil && (q.candsFor != q.head || len(q.cands) != 0) {
				bad = append(bad, fmt.Sprintf("in-port %d: SAQ %d in Xoff offers its head to the allocator", ii, k))
			}
		}
		if n != rp.inUse || n > a.saqs() {
			bad = append(bad, fmt.Sprintf("in-port %d: %d SAQs active, %d counted, max %d", ii, n, rp.inUse, a.saqs()))
		}
	}
	for oi := range a.out {
		ro := &a.out[oi]
		n := 0
		for k := range ro.saqs {
			if ro.saqs[k].active {
				n++
			}
		}
		if n != ro.inUse || n > a.saqs() {
			bad = append(bad, fmt.Sprintf("out-port %d: %d CAM lines active, %d counted, max %d", oi, n, ro.inUse, a.saqs()))
		}
	}
	return append(bad, a.nicCheck()...)
}

// RECNIQ returns the RECN-IQ report of the run so far with SAQs over time
// in bins bins of width bin from 0, or nil when the switch has no RECN-IQ.
func (f *Fabric) RECNIQ(bin des.Time, bins int) *RECNIQReport {
	has, ok := f.arch.(interface{ recnIQ() *recnIQArch })
	if !ok {
		return nil
	}
	a := has.recnIQ()
	r := &RECNIQReport{RECNIQStats: a.stats, SAQsAtEnd: a.total}
	if now := f.eng.Now(); now > 0 && len(a.series) > 0 {
		var area float64
		for i, s := range a.series {
			end := now
			if i+1 < len(a.series) {
				end = a.series[i+1].at
			}
			area += float64(s.total) * float64(end-s.at)
		}
		ports := 0
		for i := range f.in {
			if f.in[i].sw >= 0 {
				ports++
			}
		}
		r.MeanSAQsPerInput = area / float64(now) / float64(ports)
	}
	if bin > 0 && bins > 0 {
		r.SAQsOverTime = saqPeaks(a.series, bin, bins)
	}
	return r
}

// saqPeaks returns, per bin of width bin from 0, the most SAQs in use
// during the bin.
func saqPeaks(series []saqSample, bin des.Time, bins int) []int {
	out := make([]int, bins)
	cur, j := 0, 0
	for b := range out {
		end := des.Time(b+1) * bin
		peak := cur
		for ; j < len(series) && series[j].at < end; j++ {
			cur = series[j].total
			peak = max(peak, cur)
		}
		out[b] = peak
	}
	return out
}
