package fabric

// islipAllocator is iSLIP (McKeown, "The iSLIP scheduling algorithm for
// input-queued switches", IEEE/ACM ToN 7(2), 1999) at packet granularity,
// run whenever something at the switch may let a head move:
//
//  1. Request: every unmatched idle input requests, for each of its
//     queues in round-robin order, the output the selection function picks
//     for that queue's head among the outputs not matched yet.
//  2. Grant: every output with requests grants the requesting input that
//     comes first from its grant pointer on.
//  3. Accept: every input with grants accepts the output that comes first
//     from its accept pointer on. In the first iteration only, the output's
//     grant pointer moves to one past the accepting input and the input's
//     accept pointer to one past the accepted output (this is what
//     desynchronises the pointers and gives iSLIP its fairness).
//
// Iterations repeat the three steps over what is still unmatched; then
// every match crosses the crossbar.
type islipAllocator struct {
	f     *Fabric
	iters int
	// grantPtr per global out-port (a local input index), acceptPtr per
	// global in-port (a local output index).
	grantPtr  []int32
	acceptPtr []int32
	// rows > 1 (rowed architectures, hc): an output has a grant pointer
	// per row of inputs, at grantPtr[out-port*rows+row].
	rows int
	matching
	grants []int32 // per local input: request index of the accepted-to-be grant, -1 none
}

func newISLIP(f *Fabric, iters int) allocator {
	if iters == 0 {
		iters = 1
	}
	rows := 1
	if r, ok := f.arch.(rowed); ok {
		rows = r.inputRows()
	}
	m := newMatching(f)
	return &islipAllocator{f: f, iters: iters, rows: rows,
		grantPtr: make([]int32, len(f.out)*rows), acceptPtr: make([]int32, len(f.in)),
		matching: m, grants: make([]int32, len(m.taken))}
}

// arrived runs a whole allocation: with one new head the result equals
// trying that input alone, but the pointers must see it as iSLIP does.
func (a *islipAllocator) arrived(s *Switch, _ int) { a.arbitrate(s) }

func (a *islipAllocator) arbitrate(s *Switch) {
	f := a.f
	n := len(s.in)
	if !a.start(f, s) {
		return
	}
	for it := 0; it < a.iters; it++ {
		reqs := a.request(f, s)
		if len(reqs) == 0 {
			break
		}
		// Grant: each output picks one requesting input.
		grants := a.grants[:n]
		for i := range grants {
			grants[i] = -1
		}
		for po := 0; po < n; po++ {
			if a.taken[po] || s.out[po] < 0 {
				continue
			}
			best, bestDist := -1, int32(n)
			for ri := range reqs {
				r := &reqs[ri]
				if int(r.c.Port) != po {
					continue
				}
				ptr := a.grantPtr[a.ptr(s, po, r.in)]
				if d := (r.in - ptr + int32(n)) % int32(n); d < bestDist {
					best, bestDist = ri, d
				}
			}
			if best < 0 {
				continue
			}
			// Accept: the input keeps the grant whose output comes first
			// from its accept pointer on.
			in := reqs[best].in
			if g := grants[in]; g < 0 || a.acceptDist(s, in, po) < a.acceptDist(s, in, int(reqs[g].c.Port)) {
				grants[in] = int32(best)
			}
		}
		for pi := 0; pi < n; pi++ {
			g := grants[pi]
			if g < 0 {
				continue
			}
			r := reqs[g]
			a.match(r)
			if it == 0 {
				a.grantPtr[a.ptr(s, int(r.c.Port), int32(pi))] = int32((pi + 1) % n)
				a.acceptPtr[s.in[pi]] = int32((int(r.c.Port) + 1) % n)
			}
		}
	}
	f.grantMatches(s, a.matches)
}

// acceptDist is how far output po comes after input pi's accept pointer.
func (a *islipAllocator) acceptDist(s *Switch, pi int32, po int) int {
	n := len(s.in)
	return (po - int(a.acceptPtr[s.in[pi]]) + n) % n
}

// ptr is the index of the grant pointer of local output po of s that
// serves local input pi.
func (a *islipAllocator) ptr(s *Switch, po int, pi int32) int {
	i := int(s.out[po])
	if a.rows == 1 {
		return i
	}
	return i*a.rows + a.f.arch.(rowed).inputRow(s, int(pi))
}
