package fabric

import (
	"math/bits"
	"math/rand/v2"

	"github.com/fabemu/fabemu/internal/rng"
)

// randomAllocator is the random arbitration of the adaptive bubble router
// (paper 002 §3: "When several input channels (including injection
// channels) request the same virtual output, a random arbitration policy
// is used"). It is greedy like rr, one pass and no iterations, but every
// allocation visits the inputs holding heads in a random order and the
// non-empty queues of each input in a random order, and the first head
// whose selected output can take it wins that output at once. Among the
// inputs that request one output, the winner is therefore the first of
// them in a uniformly random order: each wins with equal probability,
// whatever the position of its port or its lane.
//
// The order comes from a stream per switch derived from the run's seed
// (component "switch.random"), so a run stays deterministic; a shuffle of
// one input or one queue draws nothing. With an architecture that prefers
// some queues (queuePreference), it makes the pass twice as rr does: the
// preferred queues of every input first, then the others.
type randomAllocator struct {
	rr     *rrAllocator // tryHead and the pass bounds lo, hi, pref
	rnd    []*rand.Rand // per switch
	inputs []int
	queues []int32
	wide   []int32 // the walk's list for inputs of more than 64 queues
}

func newRandom(f *Fabric, _ int) allocator {
	a := &randomAllocator{rr: newRR(f, 0).(*rrAllocator), rnd: make([]*rand.Rand, len(f.sw))}
	for s := range a.rnd {
		a.rnd[s] = rng.Stream(f.cfg.Seed, "switch.random", s)
	}
	return a
}

func (a *randomAllocator) arrived(s *Switch, pi int) {
	r := a.rr
	if r.pref == 0 {
		a.tryInput(s, pi)
		return
	}
	r.lo, r.hi = 0, r.pref
	if !a.tryInput(s, pi) {
		r.lo, r.hi = r.pref, 1<<30
		a.tryInput(s, pi)
	}
	r.lo, r.hi = 0, 1<<30
}

func (a *randomAllocator) arbitrate(s *Switch) {
	r := a.rr
	if r.pref == 0 {
		a.pass(s)
		return
	}
	r.lo, r.hi = 0, r.pref
	a.pass(s)
	r.lo, r.hi = r.pref, 1<<30
	a.pass(s)
	r.lo, r.hi = 0, 1<<30
}

// pass visits the inputs of s that may hold a head, in a random order.
func (a *randomAllocator) pass(s *Switch) {
	a.inputs = a.inputs[:0]
	if n := len(s.in); n <= 64 {
		for m := s.ready; m != 0; m &= m - 1 {
			a.inputs = append(a.inputs, bits.TrailingZeros64(m))
		}
	} else {
		for pi := range n {
			a.inputs = append(a.inputs, pi)
		}
	}
	rnd := a.rnd[s.ID]
	if len(a.inputs) > 1 {
		rnd.Shuffle(len(a.inputs), func(i, j int) { a.inputs[i], a.inputs[j] = a.inputs[j], a.inputs[i] })
	}
	for _, pi := range a.inputs {
		a.tryInput(s, pi) // an input granted earlier in the pass is busy and declines
	}
}

// tryInput tries the non-empty queues of input port pi (within the pass
// bounds) in a random order and reports whether one head was granted.
func (a *randomAllocator) tryInput(s *Switch, pi int) bool {
	r := a.rr
	ii := s.in[pi]
	if ii < 0 {
		return false
	}
	ip := &r.f.in[ii]
	if ip.xbarBusy || ip.queued == 0 {
		return false
	}
	order := ip.nonEmptyFrom(0, a.wide)
	a.wide = order.list
	a.queues = a.queues[:0]
	for qi, ok := order.next(); ok; qi, ok = order.next() {
		if qi >= r.lo && qi < r.hi {
			a.queues = append(a.queues, int32(qi))
		}
	}
	if len(a.queues) > 1 {
		a.rnd[s.ID].Shuffle(len(a.queues), func(i, j int) { a.queues[i], a.queues[j] = a.queues[j], a.queues[i] })
	}
	for _, qi := range a.queues {
		if r.tryHead(s, pi, ip, int(qi)) {
			return true
		}
	}
	return false
}
