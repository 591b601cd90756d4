package fabric

// hrrAllocator is the packet-based hierarchical round-robin arbiter of
// paper 003 §2.2.4 (Fig. 2.4) and §2.10, run whenever something at the
// switch may let a head move (a head arrived, a transfer or transmission
// ended, credits came back: "the arbiter will be waken up"):
//
//  1. At every input, one first-level round-robin arbiter per read port
//     (§2.10: "two round-robin arbiters per input port (one to handle
//     requests for odd ports and the other one for requests for the even
//     ports)") picks, among the input's queues in round-robin order, the
//     first head whose selected output can take it, and requests that
//     output. An input of a single-read-port architecture requests once.
//  2. Every output arbiter grants one of the inputs requesting it with a
//     hierarchical round-robin arbiter (hierRR: 8:1 sub-arbiters and a
//     final k/8:1 one, Fig. 2.4).
//
// A grant moves the whole packet (packet-based: §2.2.4); the first-level
// pointer moves past the granted queue and the output's pointers past the
// granted input. There are no iterations: an input that lost every output
// it requested waits for the next wake-up, which is what makes the
// asymmetric crossbars of §2.4 more efficient than symmetric ones.
type hrrAllocator struct {
	f *Fabric
	// qPtr per global in-port: the first-level pointer among its queues.
	qPtr []int32
	// arb per global out-port: the output's arbiter.
	arb  []hierRR // per global out-port and row (rowed)
	rows int
	reqs []request
	want []bool // scratch: inputs requesting one output
	// order is scratch: an input's non-empty queues, past 64 queues.
	order []int32
}

func newHRR(f *Fabric, _ int) allocator {
	widest := 0
	for s := range f.sw {
		widest = max(widest, len(f.sw[s].in))
	}
	rows := 1
	if r, ok := f.arch.(rowed); ok {
		rows = r.inputRows()
	}
	a := &hrrAllocator{f: f, qPtr: make([]int32, len(f.in)), arb: make([]hierRR, len(f.out)*rows), rows: rows, want: make([]bool, widest)}
	for s := range f.sw {
		for _, oi := range f.sw[s].out {
			for r := 0; oi >= 0 && r < rows; r++ {
				a.arb[int(oi)*rows+r] = newHierRR(len(f.sw[s].in))
			}
		}
	}
	return a
}

func (a *hrrAllocator) arrived(s *Switch, _ int) { a.arbitrate(s) }

func (a *hrrAllocator) arbitrate(s *Switch) {
	f := a.f
	n := len(s.in)
	if s.ready == 0 && n <= 64 {
		return
	}
	rp, multi := f.arch.(readPorter)
	a.reqs = a.reqs[:0]
	f.room.sw, f.room.taken = s, nil
	for pi := 0; pi < n; pi++ {
		ii := s.in[pi]
		if ii < 0 {
			continue
		}
		ip := &f.in[ii]
		if ip.xbarBusy || ip.queued == 0 {
			continue
		}
		var used uint64 // read ports this input has requested through
		// The queues holding packets, in round-robin order from
		// the first-level pointer on (inqueues.go).
		order := ip.nonEmptyFrom(int(a.qPtr[ii]), a.order)
		a.order = order.list
		for qi, ok := order.next(); ok; qi, ok = order.next() {
			cands, c := f.selectHead(s, pi, ii, &ip.queues[qi])
			if c < 0 {
				continue
			}
			port := 0
			if multi {
				port = rp.readPort(s, int(cands[c].Port))
			}
			if used&(1<<uint(port)) != 0 {
				continue
			}
			used |= 1 << uint(port)
			a.reqs = append(a.reqs, request{in: int32(pi), q: int32(qi), c: cands[c]})
			if !multi {
				break
			}
		}
	}
	if len(a.reqs) == 0 {
		return
	}
	want := a.want[:n]
	rows, byRow := f.arch.(rowed)
	nr := 1
	if byRow {
		nr = rows.inputRows()
	}
	for po := 0; po < n; po++ {
		oi := s.out[po]
		if oi < 0 {
			continue
		}
		for row := 0; row < nr; row++ {
			clear(want)
			has := false
			for _, r := range a.reqs {
				if int(r.c.Port) == po && (!byRow || rows.inputRow(s, int(r.in)) == row) {
					want[r.in], has = true, true
				}
			}
			if !has {
				continue
			}
			w := a.arb[int(oi)*a.rows+row].pick(want)
			for _, r := range a.reqs {
				if int(r.c.Port) == po && int(r.in) == w {
					ii := s.in[w]
					nq := int32(len(f.in[ii].queues))
					a.qPtr[ii] = (r.q + 1) % nq
					f.grant(s, ii, int(r.q), r.c)
					break
				}
			}
		}
	}
}

// rowed is implemented by the architectures whose outputs have one
// sub-switch output per row of inputs (hc): each has an arbiter of its
// own, and one input of every row may be granted an output at once.
type rowed interface {
	inputRows() int
	inputRow(s *Switch, pi int) int
}

// hrrGroup is the size of the first level of an output's arbiter (Fig.
// 2.4: "8 : 1 smaller sub-arbiters and a final k/8 : 1 sub-arbiter").
const hrrGroup = 8

// hierRR is a two-level round-robin arbiter over n requesters: groups of
// hrrGroup consecutive requesters, each with a round-robin sub-arbiter,
// and a round-robin root over the groups. The root picks the first group
// with a request from its pointer on; that group's sub-arbiter picks the
// first requester from its own pointer on. On a grant the root pointer
// moves one past the winning group and the group's pointer one past the
// winner; the other groups' pointers stay.
type hierRR struct {
	n    int
	root int
	leaf []int // per group: the next requester (index within the group)
}

func newHierRR(n int) hierRR {
	return hierRR{n: n, leaf: make([]int, (n+hrrGroup-1)/hrrGroup)}
}

// pick returns the requester granted among those with want[i] set, or
// -1 if none is, and moves the pointers.
func (h *hierRR) pick(want []bool) int {
	groups := len(h.leaf)
	for j := 0; j < groups; j++ {
		g := (h.root + j) % groups
		lo := g * hrrGroup
		size := min(hrrGroup, h.n-lo)
		for k := 0; k < size; k++ {
			i := (h.leaf[g] + k) % size
			if want[lo+i] {
				h.leaf[g] = (i + 1) % size
				h.root = (g + 1) % groups
				return lo + i
			}
		}
	}
	return -1
}
