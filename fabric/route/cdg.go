package route

import (
	"fmt"
	"strings"
)

// channel identifies a unidirectional switch-to-switch channel on one lane
// by its sending end.
type channel struct{ sw, port, vl int32 }

func (c channel) String() string { return fmt.Sprintf("s%d/p%d/vl%d", c.sw, c.port, c.vl) }

// CheckEscape builds the channel dependency graph of the escape function
// (Dally and Seitz; Duato's condition applies it to the escape
// sub-network) and returns an error naming a cycle if there is one. A
// dependency c1 -> c2 exists when a packet on escape channel c1 may be
// routed by the escape function onto escape channel c2. The graph is built
// from the states packets can really be in: for every switch where a
// packet may enter the escape sub-network afresh (from a host or an
// adaptive lane) and every destination, the escape path is followed hop by
// hop and each consecutive pair of channels is a dependency. Under virtual
// cut-through a blocked packet occupies a single buffer, so direct
// dependencies are all there is to check. A path that does not reach its
// destination within as many hops as there are channels is reported too.
//
// Under bubble flow control (bubble.go) a ring's channels depend on each
// other in a cycle that the bubble breaks (paper 002 §3): a ring always
// keeps room for one packet, so a packet of it can always advance. The
// graph then has one node per ring, with an edge wherever a packet turns
// from one ring into another; a cycle between rings is refused, naming the
// rings.
//
// TFAR (routing.escape none) has no escape sub-network: the check builds
// the dependency graph of the whole routing function between physical
// channels instead and records in CheckNote whether it is cyclic and that
// deadlock freedom relies on recovery (tfar.go); it never fails.
func (r *Router) CheckEscape() error {
	if r.tfar {
		r.checkTFAR()
		return nil
	}
	t := r.t
	n := t.NumSwitches()
	var g depGraph
	maxHops := 0
	for s := 0; s < n; s++ {
		maxHops += len(t.Neighbors(s))
	}
	maxHops *= r.escVLs
	// Packets are only ever addressed to hosts; the escape function may
	// choose among equal paths by host.
	for src := 0; src < n; src++ {
		for dstHost := range t.Hosts {
			dst := t.Hosts[dstHost].At.Switch
			if dst == src {
				continue
			}
			s, inPort, inVL, inEscape := src, -1, 0, false
			prev := -1
			for hops := 0; s != dst; hops++ {
				if hops > maxHops {
					return fmt.Errorf("escape routing %s does not reach host %d (switch %d) from switch %d: the path loops", r.esc.name(), dstHost, dst, src)
				}
				p, v := r.esc.next(s, inPort, inVL, inEscape, dst, dstHost)
				pr, ok := t.Peer(s, p)
				if !ok {
					return fmt.Errorf("escape routing %s sends a packet for switch %d out of switch %d port %d, which is not a switch link", r.esc.name(), dst, s, p)
				}
				ch := channel{int32(s), int32(p), int32(v)}
				if r.rings != nil {
					ch = channel{sw: -1, port: int32(r.rings.ring(s, p)), vl: int32(v)}
				}
				c := g.node(ch)
				if prev >= 0 && prev != c {
					g.edge(prev, c)
				}
				prev = c
				s, inPort, inVL, inEscape = pr.Switch, pr.Port, v, true
			}
		}
	}
	if cyc := findCycle(g.adj); cyc != nil {
		names := make([]string, len(cyc))
		for i, c := range cyc {
			names[i] = g.chans[c].String()
			if r.rings != nil {
				names[i] = r.rings.ringName(int(g.chans[c].port))
			}
		}
		return fmt.Errorf("escape routing %s is not deadlock-free: its channel dependency graph has a cycle: %s",
			r.esc.name(), strings.Join(names, " -> "))
	}
	r.CheckNote = fmt.Sprintf("escape channel dependency graph acyclic (%d channels used, %s)", len(g.chans), r.esc.name())
	if r.rings != nil {
		r.CheckNote = fmt.Sprintf("escape dependency graph acyclic between rings (%d rings, each protected by bubble flow control, paper 002 §3; %s)", len(g.chans), r.esc.name())
	}
	return nil
}

// depGraph is a channel dependency graph being built: channels numbered
// in the order they are first met, each edge kept once, in the order it
// is first added (CheckEscape's escape channels, checkTFAR's physical
// channels).
type depGraph struct {
	id    map[channel]int
	chans []channel
	adj   [][]int
	seen  map[[2]int]bool
}

// node returns c's number, numbering it if it is new.
func (g *depGraph) node(c channel) int {
	if i, ok := g.id[c]; ok {
		return i
	}
	if g.id == nil {
		g.id, g.seen = map[channel]int{}, map[[2]int]bool{}
	}
	g.id[c] = len(g.chans)
	g.chans = append(g.chans, c)
	g.adj = append(g.adj, nil)
	return len(g.chans) - 1
}

// edge adds the dependency a -> b unless it is there already.
func (g *depGraph) edge(a, b int) {
	if e := [2]int{a, b}; !g.seen[e] {
		g.seen[e] = true
		g.adj[a] = append(g.adj[a], b)
	}
}

// findCycle returns one cycle of the directed graph (first node repeated
// at the end), or nil. Iterative DFS with colours.
func findCycle(adj [][]int) []int {
	const (
		white = 0
		grey  = 1
		black = 2
	)
	colour := make([]uint8, len(adj))
	parent := make([]int, len(adj))
	type frame struct{ v, i int }
	for root := range adj {
		if colour[root] != white {
			continue
		}
		stack := []frame{{root, 0}}
		colour[root] = grey
		parent[root] = -1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.i < len(adj[top.v]) {
				w := adj[top.v][top.i]
				top.i++
				switch colour[w] {
				case white:
					colour[w] = grey
					parent[w] = top.v
					stack = append(stack, frame{w, 0})
				case grey:
					// Cycle: w -> ... -> top.v -> w.
					cyc := []int{top.v}
					for x := top.v; x != w; {
						x = parent[x]
						cyc = append(cyc, x)
					}
					for i, j := 0, len(cyc)-1; i < j; i, j = i+1, j-1 {
						cyc[i], cyc[j] = cyc[j], cyc[i]
					}
					return append(cyc, w)
				}
				continue
			}
			colour[top.v] = black
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}

// checkCost estimates the route evaluations of CheckEscape: one path per
// (switch, host) pair, times a typical path length.
func (r *Router) checkCost() int {
	return r.t.NumSwitches() * r.t.NumHosts() * 8
}
