package fabric

import (
	"math/rand/v2"

	"github.com/fabemu/fabemu/internal/rng"
)

// pimAllocator is parallel iterative matching (Anderson, Owicki, Saxe,
// Thacker, "High-speed switch scheduling for local-area networks", ACM
// TOCS 11(4), 1993, §4) at packet granularity. Each iteration over the
// inputs and outputs not matched yet:
//
//  1. Request: every unmatched idle input requests, for each of its
//     queues, the output the selection function picks for that queue's
//     head among the outputs not matched yet (as iSLIP does).
//  2. Grant: every output with requests grants one of them chosen
//     uniformly at random.
//  3. Accept: every input with grants accepts one of them chosen
//     uniformly at random.
//
// There are no pointers: the randomness is what breaks the ties, and it
// comes from a stream per switch derived from the run's seed (component
// "switch.pim"), so a run stays deterministic. Anderson et al. show that
// the expected number of iterations to a maximal match is at most
// log2(N) + 4/3, and that one iteration on a full request matrix matches
// N(1-(1-1/N)^N) pairs on average, 1-1/e ~ 63% of the ports for large N.
type pimAllocator struct {
	f     *Fabric
	iters int
	rnd   []*rand.Rand // per switch
	matching
	edges []pimEdge
	m     pimMatcher
	// rows > 1 (rowed architectures, hc): every row of inputs has its own
	// sub-switch output at each output, which grants on its own.
	rows int
}

func newPIM(f *Fabric, iters int) allocator {
	if iters == 0 {
		iters = 1
	}
	a := &pimAllocator{f: f, iters: iters, rnd: make([]*rand.Rand, len(f.sw)),
		matching: newMatching(f), rows: 1}
	if r, ok := f.arch.(rowed); ok {
		a.rows = r.inputRows()
	}
	for s := range a.rnd {
		a.rnd[s] = rng.Stream(f.cfg.Seed, "switch.pim", s)
	}
	return a
}

// arrived runs a whole allocation, as iSLIP does.
func (a *pimAllocator) arrived(s *Switch, _ int) { a.arbitrate(s) }

func (a *pimAllocator) arbitrate(s *Switch) {
	f := a.f
	n := len(s.in)
	if !a.start(f, s) {
		return
	}
	rnd := a.rnd[s.ID]
	for it := 0; it < a.iters; it++ {
		reqs := a.request(f, s)
		if len(reqs) == 0 {
			break
		}
		a.edges = a.edges[:0]
		for _, r := range reqs {
			out := r.c.Port
			if a.rows > 1 {
				out = out*int32(a.rows) + int32(f.arch.(rowed).inputRow(s, int(r.in)))
			}
			a.edges = append(a.edges, pimEdge{in: r.in, out: out})
		}
		// Grant and accept.
		// With rows, two inputs of different rows may win one output in
		// the same iteration (one per sub-switch output); later iterations
		// leave that output alone.
		for _, ri := range a.m.round(rnd, n*a.rows, n, a.edges) {
			a.match(reqs[ri])
		}
	}
	f.grantMatches(s, a.matches)
}

// pimEdge is one request of a PIM iteration: local input in asks for
// output out (a local output, or with rows a sub-switch output
// port*rows+row).
type pimEdge struct{ in, out int32 }

// pimMatcher holds the scratch of the grant and accept steps.
type pimMatcher struct {
	start   []int32 // per port + 1: where its requests begin in byPort
	byPort  []int32 // request indices grouped by output, then by input
	granted []int32 // request indices granted
	matches []int32
}

// group fills m.byPort with the indices of items 0..k-1 grouped by
// port(i) < n, each group in index order (a counting sort), and m.start
// with where each group begins.
func (m *pimMatcher) group(n, k int, port func(i int) int32) {
	if cap(m.start) < n+1 {
		m.start = make([]int32, n+1)
	}
	start := m.start[:n+1]
	clear(start)
	for i := 0; i < k; i++ {
		start[port(i)+1]++
	}
	for p := 1; p <= n; p++ {
		start[p] += start[p-1]
	}
	if cap(m.byPort) < k {
		m.byPort = make([]int32, k)
	}
	m.byPort = m.byPort[:k]
	for i := 0; i < k; i++ {
		p := port(i)
		m.byPort[start[p]] = int32(i)
		start[p]++
	}
	// start[p] is now the end of group p: shift back.
	copy(start[1:], start[:n])
	start[0] = 0
}

// round runs the grant and accept steps of one PIM iteration over the
// requests edges (no two equal) from nIn inputs to nOut outputs and
// returns the indices of the requests matched, at most one per input and
// per output, in input order. Outputs draw in port order, then inputs,
// so the draws from rnd depend only on the requests.
func (m *pimMatcher) round(rnd *rand.Rand, nOut, nIn int, edges []pimEdge) []int32 {
	// Grant: each output picks one of its requests uniformly at random.
	m.group(nOut, len(edges), func(i int) int32 { return edges[i].out })
	m.granted = m.granted[:0]
	for po := 0; po < nOut; po++ {
		if c := m.byPort[m.start[po]:m.start[po+1]]; len(c) > 0 {
			m.granted = append(m.granted, pick(rnd, c))
		}
	}
	// Accept: each input picks one of its grants uniformly at random.
	g := m.granted
	m.group(nIn, len(g), func(i int) int32 { return edges[g[i]].in })
	m.matches = m.matches[:0]
	for pi := 0; pi < nIn; pi++ {
		if c := m.byPort[m.start[pi]:m.start[pi+1]]; len(c) > 0 {
			m.matches = append(m.matches, g[pick(rnd, c)])
		}
	}
	return m.matches
}

// pick returns one of c uniformly at random (c not empty); a single
// choice draws nothing.
func pick(rnd *rand.Rand, c []int32) int32 {
	if len(c) == 1 {
		return c[0]
	}
	return c[rnd.IntN(len(c))]
}
