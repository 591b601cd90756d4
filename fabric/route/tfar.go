package route

import (
	"fmt"
	"strings"
)

// EscapeNone (routing.escape none) is True Fully Adaptive Routing (TFAR,
// Pinkston and Warnakulasuriya, ISCA 1997; Martínez, López and Duato,
// IEEE TPDS 2001), the routing of paper 001 §4 ("This routing algorithm
// allows the use of any virtual channel of those physical channels that
// forwards a message closer to its destination"): every virtual lane of
// every minimal output is a candidate and there is no escape
// sub-network. Its channel dependency graph is cyclic on tori and meshes,
// so it is not deadlock-free by construction; it relies on deadlock
// detection and recovery in the fabric (fabric.deadlock.recovery
// software, paper 001 §4: "software-based deadlock recovery [12]"),
// which fabric.New requires. routing.adaptive_vls is the number of
// virtual channels per physical channel (3 or 4 in paper 001).
const EscapeNone = "none"

// tfarRecovery ends the escape check's verdict on TFAR, whatever the graph.
const tfarRecovery = "deadlock freedom relies on deadlock detection and recovery (fabric.deadlock.recovery software; paper 001 §4, refs. [10], [12])"

// RelyOnRecovery reports whether the routing function has no escape
// sub-network and needs deadlock recovery (TFAR, routing.escape none).
func (r *Router) RelyOnRecovery() bool { return r.tfar }

// tfarCandidates appends every lane of every minimal output of switch s
// towards switch dsw: no escape candidate.
func (r *Router) tfarCandidates(s, dsw int, buf []Candidate) []Candidate {
	var ports [16]int32
	for _, p := range r.minimal(s, dsw, ports[:0]) {
		for v := 0; v < r.adVLs; v++ {
			buf = append(buf, Candidate{Port: p, VL: int32(v)})
		}
	}
	return buf
}

// tfarCheckCost estimates the route evaluations of checkTFAR: every
// (switch, destination switch) pair, times the minimal outputs there and
// at the next switch.
func (r *Router) tfarCheckCost() int {
	n, deg := r.t.NumSwitches(), 0
	for s := 0; s < n; s++ {
		deg = max(deg, len(r.t.Neighbors(s)))
	}
	return n * n * deg * deg
}

// checkTFAR builds the dependency graph of TFAR between physical
// channels (one lane stands for all: every lane of a channel may follow
// every lane of the previous one) and records what it is. A dependency
// c1 -> c2 exists when some destination has both c1 and then c2 on a
// minimal path, which is what TFAR may route a packet over. A cycle is
// expected (a torus ring, the turns of a mesh) and is not an error: the
// note names it and says that the function relies on recovery.
func (r *Router) checkTFAR() {
	t := r.t
	n := t.NumSwitches()
	var g depGraph
	var b1, b2 [16]int32
	for dst := 0; dst < n; dst++ {
		for s := 0; s < n; s++ {
			if s == dst {
				continue
			}
			for _, p := range r.minimal(s, dst, b1[:0]) {
				pr, _ := t.Peer(s, int(p))
				if pr.Switch == dst {
					continue
				}
				a := g.node(channel{int32(s), p, 0})
				for _, q := range r.minimal(pr.Switch, dst, b2[:0]) {
					g.edge(a, g.node(channel{int32(pr.Switch), q, 0}))
				}
			}
		}
	}
	cyc := findCycle(g.adj)
	if cyc == nil {
		r.CheckNote = fmt.Sprintf("no escape sub-network (TFAR, %d lanes per channel): its channel dependency graph is acyclic on this topology (%d channels); %s", r.adVLs, len(g.chans), tfarRecovery)
		return
	}
	names := make([]string, len(cyc))
	for i, c := range cyc {
		ch := g.chans[c]
		names[i] = fmt.Sprintf("s%d/p%d", ch.sw, ch.port)
	}
	r.CheckNote = fmt.Sprintf("no escape sub-network (TFAR, %d lanes per channel): its channel dependency graph is cyclic (%s), so it is not deadlock-free by construction; %s",
		r.adVLs, strings.Join(names, " -> "), tfarRecovery)
}
