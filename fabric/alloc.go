package fabric

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fabemu/fabemu/fabric/route"
)

// An allocator grants the crossbar of a switch: it matches input ports
// holding head packets with outputs that can take them, one packet per
// input and per output at a time (a non-multiplexed crossbar, paper 004
// §4.1), and calls Fabric.grant for each match. Which heads an input
// offers (its queues) and whether an output can take a packet (room) are
// the switch architecture's; an allocator only decides who wins.
type allocator interface {
	// arbitrate allocates switch s after anything that may let a head
	// move: a crossbar transfer or a transmission ended, credits arrived.
	arbitrate(s *Switch)
	// arrived: a packet became the head of a queue of idle input pi of s
	// (the only input that can have changed).
	arrived(s *Switch, pi int)
}

// AllocInfo describes one allocator of the table.
type AllocInfo struct {
	Name        string // as fabric.allocator names it, without parameters
	Syntax      string // the accepted forms
	Description string
	Source      string
	// Random: grants are drawn at random (from the run's seeded
	// streams), so shares are fair in expectation only.
	Random bool
	// new builds the allocator with its parameter (0 when none is given).
	new func(f *Fabric, param int) allocator
	// param validates a parameter; nil means the allocator takes none.
	param func(n int) error
}

// allocTable lists the allocators fabric.allocator may name, as
// NAME or NAME(PARAM). To add one, write it in a file of its own and add a
// line here; the conformance suite then runs it with every architecture.
func allocTable() []AllocInfo {
	return []AllocInfo{
		{Name: "rr", Syntax: "rr", Source: "paper 004 §4.1",
			Description: "round robin: inputs in round-robin order from the one after the last granted, and the queues of an input in round-robin order; the first head an output can take wins it at once",
			new:         newRR},
		{Name: "islip", Syntax: "islip[(N)]", Source: "McKeown, iSLIP (IEEE/ACM ToN 1999); paper 003 §2.1",
			Description: "iSLIP with N = 1..16 iterations (islip = islip(1)): every free input requests the outputs its heads select; each output grants the requesting input next after its grant pointer, each input accepts the granting output next after its accept pointer; pointers move only on a first-iteration accept; N iterations match what is left",
			new:         newISLIP,
			param: func(n int) error {
				if n < 1 || n > 16 {
					return fmt.Errorf("%d iterations: want 1 to 16", n)
				}
				return nil
			}},
		{Name: "pim", Syntax: "pim[(N)]", Source: "Anderson, Owicki, Saxe, Thacker, parallel iterative matching (ACM TOCS 1993) §4",
			Description: "parallel iterative matching with N = 1..16 iterations (pim = pim(1)): every free input requests the outputs its heads select; each output grants one request chosen at random, each input accepts one grant chosen at random (from a stream per switch seeded by run.seed); N iterations match what is left",
			new:         newPIM, Random: true,
			param: func(n int) error {
				if n < 1 || n > 16 {
					return fmt.Errorf("%d iterations: want 1 to 16", n)
				}
				return nil
			}},
		{Name: "random", Syntax: "random", Source: "paper 002 §3 (the adaptive bubble router's arbitration)",
			Description: "random arbitration: every allocation visits the inputs holding heads in a random order and the queues of each input in a random order; the first head an output can take wins it at once (from a stream per switch seeded by run.seed)",
			new:         newRandom, Random: true},
		{Name: "hrr", Syntax: "hrr", Source: "paper 003 §2.2.4, §2.10, Fig. 2.4", new: newHRR,
			Description: "packet-based hierarchical round robin: at every input a round-robin arbiter per read port picks the first queue head whose selected output can take it and requests that output; every output grants one requester with a two-level round-robin arbiter (8:1 sub-arbiters, then a round robin over the groups); no iterations"},
	}
}

// Allocators returns the allocators fabric.allocator accepts.
func Allocators() []AllocInfo { return allocTable() }

// allocSpec is a parsed fabric.allocator value.
type allocSpec struct {
	info  AllocInfo
	param int
}

func (s allocSpec) new(f *Fabric) allocator { return s.info.new(f, s.param) }

// parseAllocator reads "name" or "name(N)".
func parseAllocator(spec string) (allocSpec, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(spec), "(")
	var names []string
	for _, a := range allocTable() {
		names = append(names, a.Syntax)
		if a.Name != name {
			continue
		}
		if !hasArg {
			return allocSpec{info: a}, nil
		}
		if a.param == nil {
			return allocSpec{}, fmt.Errorf("%q: the %s allocator takes no parameter", spec, a.Name)
		}
		num, ok := strings.CutSuffix(arg, ")")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if !ok || err != nil {
			return allocSpec{}, fmt.Errorf("%q: want %s", spec, a.Syntax)
		}
		if err := a.param(n); err != nil {
			return allocSpec{}, fmt.Errorf("%q: %w", spec, err)
		}
		return allocSpec{info: a, param: n}, nil
	}
	return allocSpec{}, fmt.Errorf("unknown allocator %q; known: %s", spec, strings.Join(names, "; "))
}

// TakesParameter reports whether the allocator accepts NAME(N).
func (a AllocInfo) TakesParameter() bool { return a.param != nil }

// request is one request of an iterative allocation (islip, pim, hrr):
// the head of queue q of local input in asks for output candidate c.
type request struct {
	in, q int32
	c     route.Candidate
}

// requested reports whether local input pi already asks for output port
// in this iteration (from another of its queues); reqs ends with pi's.
func requested(reqs []request, pi, port int32) bool {
	for i := len(reqs) - 1; i >= 0 && reqs[i].in == pi; i-- {
		if reqs[i].c.Port == port {
			return true
		}
	}
	return false
}

// grantMatches grants the matches of one allocation of switch s and
// moves each matched input's round-robin queue pointer past the queue it
// served.
func (f *Fabric) grantMatches(s *Switch, matches []request) {
	f.room.taken = nil
	for _, m := range matches {
		ii := s.in[m.in]
		ip := &f.in[ii]
		f.grant(s, ii, int(m.q), m.c)
		if ip.rrQ = int(m.q) + 1; ip.rrQ == len(ip.queues) {
			ip.rrQ = 0
		}
	}
}

// matching is the scratch of an iterative matching allocation (islip,
// pim), sized to the widest switch.
type matching struct {
	taken   []bool // outputs matched
	matched []bool // inputs matched
	reqs    []request
	matches []request
	order   []int32 // an input's non-empty queues, past 64 queues
}

func newMatching(f *Fabric) matching {
	widest := 0
	for s := range f.sw {
		widest = max(widest, len(f.sw[s].in))
	}
	return matching{taken: make([]bool, widest), matched: make([]bool, widest)}
}

// start clears the scratch for an allocation of switch s and reports
// whether s has a head to allocate.
func (m *matching) start(f *Fabric, s *Switch) bool {
	n := len(s.in)
	if s.ready == 0 && n <= 64 {
		return false
	}
	clear(m.taken[:n])
	clear(m.matched[:n])
	m.matches = m.matches[:0]
	f.room.sw, f.room.taken = s, m.taken[:n]
	return true
}

// request is an iteration's request phase: every unmatched input whose
// crossbar port is free asks, for the head of each of its non-empty
// queues in round-robin order from rrQ on (inqueues.go), for the output
// routing selects among those with room, once per output. It returns the
// requests, the inputs' in increasing order.
func (m *matching) request(f *Fabric, s *Switch) []request {
	m.reqs = m.reqs[:0]
	for pi := range s.in {
		ii := s.in[pi]
		if ii < 0 || m.matched[pi] {
			continue
		}
		ip := &f.in[ii]
		if ip.xbarBusy || ip.queued == 0 {
			continue
		}
		order := ip.nonEmptyFrom(ip.rrQ, m.order)
		m.order = order.list
		for qi, ok := order.next(); ok; qi, ok = order.next() {
			cands, c := f.selectHead(s, pi, ii, &ip.queues[qi])
			if c < 0 || requested(m.reqs, int32(pi), cands[c].Port) {
				continue
			}
			m.reqs = append(m.reqs, request{in: int32(pi), q: int32(qi), c: cands[c]})
		}
	}
	return m.reqs
}

// match records request r as a match of this allocation.
func (m *matching) match(r request) {
	m.matched[r.in], m.taken[r.c.Port] = true, true
	m.matches = append(m.matches, r)
}
