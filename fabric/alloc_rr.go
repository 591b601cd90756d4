package fabric

import "math/bits"

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
// every queue from ip.rrQ on would reach them. With up to 64 queues the
// bit set is one word, rotated so that rrQ's bit comes first: its bits
// in increasing order are then the queues in round-robin order. Each word
// is read once: trying a head changes no queue's contents, and a grant
// ends the scan.
func (a *rrAllocator) tryInput(s *Switch, pi int) bool {
	ii := s.in[pi]
	if ii < 0 {
		return false
	}
	ip := &a.f.in[ii]
	if ip.xbarBusy || ip.queued == 0 {
		return false
	}
	if len(ip.nonEmpty) != 1 {
		return a.tryWide(s, pi, ip)
	}
	m := ip.nonEmpty[0]
	if a.pref != 0 {
		m &= wordRange(0, a.lo, a.hi) // this pass's queues
	}
	start := ip.rrQ
	for m = bits.RotateLeft64(m, -start); m != 0; m &= m - 1 {
		if a.tryHead(s, pi, ip, (bits.TrailingZeros64(m)+start)&63) {
			return true
		}
	}
	return false
}

// tryWide is tryInput for an input with more than 64 queues: its bit set
// word by word in round-robin order from rrQ on (inPort.wideWord).
func (a *rrAllocator) tryWide(s *Switch, pi int, ip *inPort) bool {
	start := ip.rrQ
	for k := 0; k <= len(ip.nonEmpty); k++ {
		w, m := ip.wideWord(start, k)
		if a.pref != 0 {
			m &= wordRange(w, a.lo, a.hi)
		}
		for ; m != 0; m &= m - 1 {
			if a.tryHead(s, pi, ip, w<<6+bits.TrailingZeros64(m)) {
				return true
			}
		}
	}
	return false
}

// tryHead grants the head packet of queue v of input ip (port pi of s) an
// output that can take it, if one can, and moves the round-robin position
// past v.
func (a *rrAllocator) tryHead(s *Switch, pi int, ip *inPort, v int) bool {
	f := a.f
	q := &ip.queues[v]
	p := q.head
	if q.candsFor == p && q.blockedAt == f.candEpochs(s, q.cands) {
		return false // none of its outputs has freed room since
	}
	ii := s.in[pi]
	f.room.sw = s
	cands, c := f.selectHead(s, pi, ii, q)
	if c >= 0 {
		f.grant(s, ii, v, cands[c])
		if ip.rrQ = v + 1; ip.rrQ == len(ip.queues) {
			ip.rrQ = 0
		}
		return true
	}
	q.blockedAt = f.candEpochs(s, cands)
	return false
}

// wordRange returns the bits of word w of a queue bit set that stand for
// queues lo to hi-1.
func wordRange(w, lo, hi int) uint64 {
	base := w << 6
	m := ^uint64(0)
	if lo > base {
		m = 0
		if lo < base+64 {
			m = ^uint64(0) << uint(lo-base)
		}
	}
	if hi < base+64 {
		if hi <= base {
			return 0
		}
		m &= 1<<uint(hi-base) - 1
	}
	return m
}
