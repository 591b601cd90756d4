package fabric

import (
	"math/bits"

	"github.com/fabemu/fabemu/fabric/route"
)

// rrAllocator is packet-based round-robin arbitration (paper 004 §4.1):
// inputs are visited in round-robin order starting after the last input
// granted, the queues of an input in round-robin order starting after the
// last queue granted there, and the first head whose selected output can
// take it is granted at once. It is greedy: one pass, no iterations.
//
// With an architecture that prefers some queues (queuePreference: recn's
// normal queues over its SAQs under fabric.recn.normal_first, paper 000
// §4.1 "requests from packets in normal queues have preference over
// requests from packets in SAQs"), it makes the pass twice: first over the
// preferred queues of every input, then over the others.
type rrAllocator struct {
	f *Fabric
	// pref: queues [0, pref) of every input are preferred; 0: none.
	pref int
	// lo, hi bound the queues the current pass considers.
	lo, hi int
}

// queuePreference is implemented by an architecture whose crossbar
// requests from the first preferredQueues() queues of every input win
// over requests from the others (0: no preference).
type queuePreference interface{ preferredQueues() int }

func newRR(f *Fabric, _ int) allocator {
	a := &rrAllocator{f: f, hi: 1 << 30}
	if p, ok := f.arch.(queuePreference); ok {
		a.pref = p.preferredQueues()
	}
	return a
}

func (a *rrAllocator) arrived(s *Switch, pi int) {
	if a.pref == 0 {
		a.tryInput(s, pi)
		return
	}
	a.lo, a.hi = 0, a.pref
	if !a.tryInput(s, pi) {
		a.lo, a.hi = a.pref, 1<<30
		a.tryInput(s, pi)
	}
	a.lo, a.hi = 0, 1<<30
}

func (a *rrAllocator) arbitrate(s *Switch) {
	if a.pref == 0 {
		a.pass(s)
		return
	}
	a.lo, a.hi = 0, a.pref
	a.pass(s)
	a.lo, a.hi = a.pref, 1<<30
	a.pass(s)
	a.lo, a.hi = 0, 1<<30
}

// pass visits the inputs of s once, in round-robin order.
func (a *rrAllocator) pass(s *Switch) {
	n := len(s.in)
	if n <= 64 {
		// The same visiting order, skipping ports whose bit in s.ready is
		// clear (tryInput would return false at once for them). The mask
		// is read afresh at every step, as a grant changes it.
		start := s.rr
		for pi := start; pi < n; pi++ {
			m := s.ready &^ (1<<uint(pi) - 1)
			if m == 0 {
				break
			}
			pi = bits.TrailingZeros64(m)
			if a.tryInput(s, pi) {
				if s.rr = pi + 1; s.rr == n {
					s.rr = 0
				}
			}
		}
		for pi := 0; pi < start; pi++ {
			m := s.ready &^ (1<<uint(pi) - 1) & (1<<uint(start) - 1)
			if m == 0 {
				break
			}
			pi = bits.TrailingZeros64(m)
			if a.tryInput(s, pi) {
				s.rr = pi + 1 // < start < n
			}
		}
		return
	}
	pi := s.rr
	for k := 0; k < n; k++ {
		if a.tryInput(s, pi) {
			s.rr = pi + 1
			if s.rr == n {
				s.rr = 0
			}
		}
		if pi++; pi == n {
			pi = 0
		}
	}
}

// tryInput grants the crossbar to one head packet of input port pi,
// queues in round-robin order, and reports whether it did. It visits only
// the queues holding packets (inPort.nonEmpty), in the order a scan of
// every queue from ip.rrQ on would reach them: first those from rrQ to
// the last, then those before rrQ.
func (a *rrAllocator) tryInput(s *Switch, pi int) bool {
	f := a.f
	ii := s.in[pi]
	if ii < 0 {
		return false
	}
	ip := &f.in[ii]
	if ip.xbarBusy || ip.queued == 0 {
		return false
	}
	nq := len(ip.queues)
	start := ip.rrQ
	// The two runs of the round robin, each cut to this pass's queues.
	from, to := max(start, a.lo), min(nq, a.hi)
	for run := 0; run < 2; run++ {
		// The set is read afresh at every step, as the scan it replaces
		// read every queue's head when it reached it.
		for v := ip.nextQueue(from, to); v >= 0; v = ip.nextQueue(v+1, to) {
			q := &ip.queues[v]
			p := q.head
			if q.candsFor == p && q.blockedAt == f.candEpochs(s, q.cands) {
				continue // none of its outputs has freed room since
			}
			cands := f.headCandidates(s, pi, q, p)
			f.room.sw, f.room.blocks, f.room.in = s, p.blocks, ii
			if c := route.Select(cands, &f.room); c >= 0 {
				f.grant(s, ii, v, cands[c])
				if ip.rrQ = v + 1; ip.rrQ == nq {
					ip.rrQ = 0
				}
				return true
			}
			q.blockedAt = f.candEpochs(s, cands)
		}
		from, to = a.lo, min(start, a.hi)
	}
	return false
}
