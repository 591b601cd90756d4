package route

import (
	"fmt"
	"sort"

	"github.com/fabemu/fabemu/fabric/topo"
)

// distTable holds all-pairs switch hop distances (BFS on the switch graph)
// for topologies without arithmetic structure.
type distTable struct {
	t *topo.Topology
	n int
	d []uint16 // d[src*n+dst]
}

func newDistTable(t *topo.Topology) *distTable {
	n := t.NumSwitches()
	dt := &distTable{t: t, n: n, d: make([]uint16, n*n)}
	queue := make([]int, 0, n)
	for src := 0; src < n; src++ {
		row := dt.d[src*n : (src+1)*n]
		for i := range row {
			row[i] = 0xffff
		}
		row[src] = 0
		queue = append(queue[:0], src)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, p := range t.Neighbors(u) {
				pr, _ := t.Peer(u, p)
				if row[pr.Switch] == 0xffff {
					row[pr.Switch] = row[u] + 1
					queue = append(queue, pr.Switch)
				}
			}
		}
	}
	return dt
}

func (dt *distTable) dist(a, b int) int { return int(dt.d[a*dt.n+b]) }

// minimal appends the ports of s that lie on a shortest path to dst.
func (dt *distTable) minimal(s, dst int, buf []int32) []int32 {
	want := dt.dist(s, dst) - 1
	for _, p := range dt.t.Neighbors(s) {
		pr, _ := dt.t.Peer(s, p)
		if dt.dist(pr.Switch, dst) == want {
			buf = append(buf, int32(p))
		}
	}
	return buf
}

// newMINEscape routes on bidirectional multistage networks with up*/down*
// oriented by stage: a link towards a higher stage goes up. Minimal paths
// climb to the nearest common ancestor stage and descend; with this
// orientation the escape function never takes a "valley" (down then up),
// which shortest-path routing on the switch graph alone may do, since
// such detours through a lower stage can be as short as the climb.
//
// Among the equal minimal paths the function picks one per destination
// host d, as a forwarding table does (self-routing on paper 000 §4.1's
// perfect-shuffle MIN). Write d = D*k + h (leaf switch D of m = N/k, down
// port h). Climbing, stage 0 takes up port h and stage j >= 1 takes up
// port u_j, the j-th base-k digit of the fraction D/m (D/m = 0.u_1 u_2 ...
// in base k). Descending, where a switch has several minimal down ports,
// it takes the one to d's canonical ancestor: the switch reached from D
// by climbing with d's own up ports u_0 = h, u_1, u_2, ...
//
// Why every down link then carries one destination. With the shuffle of
// topo.MIN, up port u of switch s leads to switch (k*s + u) mod m, so
// climbing j stages from leaf S with ports v_0 ... v_{j-1} reaches
// (S*k^j + v_0 k^(j-1) + ... + v_{j-1}) mod m. For every source whose
// nearest common ancestor with d is at stage L, the up ports above depend
// on d alone, so every source of that class reaches the same switch
// A_L(d) = (S*k^L + h k^(L-1) + u_1 k^(L-2) + ...) mod m, which equals the
// canonical ancestor (S and D agree in the digits that survive the mod).
// The descent from A_L(d) passes through A_(L-1)(d), ..., A_1(d) (it is
// unique where m is a power of k, and takes the canonical child where it
// is not), so all traffic for d crosses the same down link at every stage
// boundary, named by (canonical ancestor, its up port on d's path). For
// m = k^(n-1) (N = k^n) this is d-mod-k with digit 0 at stage 0 and digit
// n-i at stage i; the name of the link out of stage j holds every digit of
// d. For paper 000's 512 hosts of 8-port switches (m = 128 = 2*4^3, D is
// 7 bits) the rule reads D from its top: u_1 = D[6..5], u_2 = D[4..3],
// u_3 = D[2..1]; the top stage has two minimal down ports and the
// canonical child restores h's high bit, which the 7-bit switch number
// dropped on the way up. Reading D from its low digits instead (the rule
// before) mixed destinations on the down links and loaded the busiest
// link with 1.94x the link rate under uniform traffic.
//
// The busiest link under uniform load is then a link into a leaf switch,
// carrying the packets of one destination from the N-k hosts off its
// leaf: (N-k)/(N-1) of the link rate when every host injects at the link
// rate. No routing does better: the k links into a leaf carry everything
// the N-k other hosts send to its k hosts, k(N-k)/(N-1) in total. The
// route tests check the bound on every MIN size a preset uses.
func newMINEscape(t *topo.Topology) *upDown {
	levels := make([]int, t.NumSwitches())
	for s, sw := range t.Switches {
		levels[s] = t.Stages - 1 - sw.Stage
	}
	u := buildUpDown(t, levels)
	u.desc = "min (up*/down* by stage, d-mod-k)"
	u.minUp, u.minCanon = minRoutingTable(t)
	return u
}

// minRoutingTable returns, per stage j and destination host d (index
// j*N + d), the up port d's packets take at stage j and d's canonical
// ancestor at stage j (see newMINEscape).
func minRoutingTable(t *topo.Topology) (up []int8, canon []int32) {
	n := t.NumHosts()
	k := t.Switches[0].Ports / 2
	m := n / k
	up = make([]int8, t.Stages*n)
	canon = make([]int32, t.Stages*n)
	for d, h := range t.Hosts {
		s := h.At.Switch // stage 0: switch index = leaf number D
		rem := s
		for j := 0; j < t.Stages; j++ {
			canon[j*n+d] = int32(s)
			digit := h.At.Port
			if j > 0 {
				rem *= k
				digit = rem / m
				rem %= m
			}
			up[j*n+d] = int8(digit)
			pr, ok := t.Peer(s, k+digit)
			if !ok {
				break
			}
			s = pr.Switch
		}
	}
	return up, canon
}

// upDown is up*/down* routing (Autonet; the escape function of paper 004
// §4.1). A BFS from the root gives every switch a level; the "up" end of a
// link is the switch with the lower (level, index). A legal path takes
// zero or more up links, then zero or more down links. The next hop is
// chosen from two distance tables per destination: distDown (down links
// only) and distAny (legal up*/down* paths). A packet that arrived on an
// escape lane through a down link is in the down phase and may only go
// down; any other packet may start a fresh legal path.
type upDown struct {
	t        *topo.Topology
	n        int
	level    []int
	distDown []uint16 // [dst*n+s]
	distAny  []uint16 // [dst*n+s]
	desc     string
	// MIN (newMINEscape): per stage*hosts + destination host, the up port
	// digit and the canonical ancestor switch; nil elsewhere.
	minUp    []int8
	minCanon []int32
}

// newUpDown orients links by BFS level from root (Autonet).
func newUpDown(t *topo.Topology, root int) *upDown {
	n := t.NumSwitches()
	level := make([]int, n)
	for i := range level {
		level[i] = -1
	}
	level[root] = 0
	queue := []int{root}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, p := range t.Neighbors(x) {
			pr, _ := t.Peer(x, p)
			if level[pr.Switch] < 0 {
				level[pr.Switch] = level[x] + 1
				queue = append(queue, pr.Switch)
			}
		}
	}
	u := buildUpDown(t, level)
	u.desc = fmt.Sprintf("up*/down* (root switch %d)", root)
	return u
}

// buildUpDown computes the distance tables for a given orientation: the
// up end of a link is the switch with the lower (level, index).
func buildUpDown(t *topo.Topology, level []int) *upDown {
	n := t.NumSwitches()
	u := &upDown{t: t, n: n, level: level}
	// Switches sorted by (level, index): up links go to smaller keys.
	byKey := make([]int, n)
	for i := range byKey {
		byKey[i] = i
	}
	sort.SliceStable(byKey, func(a, b int) bool { return u.level[byKey[a]] < u.level[byKey[b]] })
	const inf = 0xffff
	u.distDown = make([]uint16, n*n)
	u.distAny = make([]uint16, n*n)
	for dst := 0; dst < n; dst++ {
		down := u.distDown[dst*n : (dst+1)*n]
		for i := range down {
			down[i] = inf
		}
		down[dst] = 0
		// Down-only distances: walk backwards from dst over links whose
		// traversal toward dst goes down, i.e. from a higher switch.
		q := []int{dst}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			for _, p := range t.Neighbors(x) {
				pr, _ := t.Peer(x, p)
				y := pr.Switch
				if u.isUp(x, y) && down[y] == inf { // y above x: y->x is down
					down[y] = down[x] + 1
					q = append(q, y)
				}
			}
		}
		any := u.distAny[dst*n : (dst+1)*n]
		copy(any, down)
		// A legal path from s either goes down only, or up to a higher
		// switch first; process higher switches first.
		for _, s := range byKey {
			for _, p := range t.Neighbors(s) {
				pr, _ := t.Peer(s, p)
				y := pr.Switch
				if u.isUp(s, y) && any[y] != inf && any[y]+1 < any[s] {
					any[s] = any[y] + 1
				}
			}
		}
	}
	return u
}

// isUp reports whether the link a->b goes up (b is closer to the root).
func (u *upDown) isUp(a, b int) bool {
	return u.level[b] < u.level[a] || (u.level[b] == u.level[a] && b < a)
}

func (u *upDown) name() string { return u.desc }
func (u *upDown) vls() int     { return 1 }

func (u *upDown) next(s, inPort, inVL int, inEscape bool, dst, dstHost int) (int, int) {
	downPhase := false
	if inEscape {
		if pr, ok := u.t.Peer(s, inPort); ok && u.isUp(s, pr.Switch) {
			downPhase = true // came from a higher switch over a down link
		}
	}
	row := func(tab []uint16) []uint16 { return tab[dst*u.n : (dst+1)*u.n] }
	down, any := row(u.distDown), row(u.distAny)
	var buf [16]int
	cands := buf[:0]
	if downPhase {
		for _, p := range u.t.Neighbors(s) {
			pr, _ := u.t.Peer(s, p)
			if u.isUp(pr.Switch, s) && down[pr.Switch]+1 == down[s] {
				cands = append(cands, p)
			}
		}
	} else {
		for _, p := range u.t.Neighbors(s) {
			pr, _ := u.t.Peer(s, p)
			y := pr.Switch
			if u.isUp(s, y) && any[y]+1 == any[s] {
				cands = append(cands, p)
			} else if u.isUp(y, s) && down[y]+1 == any[s] {
				cands = append(cands, p)
			}
		}
	}
	if len(cands) == 0 {
		panic(fmt.Sprintf("route: %s has no legal path from switch %d to switch %d (down phase %v)", u.desc, s, dst, downPhase))
	}
	// Spread destination hosts over equal-length legal paths, as a
	// forwarding table built per destination would: on a MIN by the table
	// of newMINEscape (d's up port at this stage, or the down port to d's
	// canonical ancestor), so every down link carries one destination;
	// elsewhere by the host modulo the choices.
	if u.minUp != nil {
		if p, ok := u.minPort(s, dstHost, cands); ok {
			return p, 0
		}
	}
	return cands[dstHost%len(cands)], 0
}

// minPort returns the candidate newMINEscape's table names for dstHost at
// switch s, if it is among cands.
func (u *upDown) minPort(s, dstHost int, cands []int) (int, bool) {
	nh := u.t.NumHosts()
	st := u.t.Switches[s].Stage
	k := u.t.Switches[s].Ports / 2
	for _, p := range cands {
		if p >= k {
			if p == k+int(u.minUp[st*nh+dstHost]) {
				return p, true
			}
			continue
		}
		if st == 0 {
			continue
		}
		if pr, _ := u.t.Peer(s, p); pr.Switch == int(u.minCanon[(st-1)*nh+dstHost]) {
			return p, true
		}
	}
	return 0, false
}

// cube routes on k-ary n-cubes. Dimension order: correct dimension 0
// first, then 1, ...; on a torus take the shorter way round (the + way on a
// tie). Deadlock freedom on the rings comes from two dateline lanes per
// dimension (Dally and Seitz): a packet uses lane 0 in a dimension until it
// crosses the wrap-around link, and lane 1 from that hop on.
type cube struct {
	t        *topo.Topology
	k        []int
	torus    bool
	dateline bool
	stride   []int
	// Tables filled by newCube so that routing a packet needs no division:
	// coords[s*len(k)+d] is switch s's coordinate in dimension d;
	// steps[d][a*k[d]+b] is the step from coordinate a towards b (see
	// step); portDim[p] is the dimension of port p, -1 for host ports.
	coords  []int32
	steps   [][]int8
	portDim []int8
}

func newCube(t *topo.Topology, dateline bool) *cube {
	c := &cube{t: t, k: t.K, torus: t.Kind == topo.KindTorus, dateline: dateline}
	c.stride = make([]int, len(c.k))
	st := 1
	for d := range c.k {
		c.stride[d] = st
		st *= c.k[d]
	}
	nd := len(c.k)
	c.coords = make([]int32, t.NumSwitches()*nd)
	for s := 0; s < t.NumSwitches(); s++ {
		for d := range c.k {
			c.coords[s*nd+d] = int32((s / c.stride[d]) % c.k[d])
		}
	}
	c.steps = make([][]int8, nd)
	for d, k := range c.k {
		c.steps[d] = make([]int8, k*k)
		for a := 0; a < k; a++ {
			for b := 0; b < k; b++ {
				c.steps[d][a*k+b] = c.step(a, b, d)
			}
		}
	}
	maxPort := 0
	for _, dp := range t.DimPorts {
		maxPort = max(maxPort, dp[0], dp[1])
	}
	c.portDim = make([]int8, maxPort+1)
	for p := range c.portDim {
		c.portDim[p] = -1
		for d, dp := range t.DimPorts {
			if dp[0] == p || dp[1] == p {
				c.portDim[p] = int8(d)
				break
			}
		}
	}
	return c
}

// step computes, from coordinate a towards b in dimension d, the direction
// (+1, -1 or 0), encoded as that value, or 2 for +1 when both ways are
// minimal (a torus tie).
func (c *cube) step(a, b, d int) int8 {
	if a == b {
		return 0
	}
	if !c.torus {
		if b > a {
			return 1
		}
		return -1
	}
	k := c.k[d]
	delta := ((b-a)%k + k) % k
	switch {
	case 2*delta < k:
		return 1
	case 2*delta > k:
		return -1
	}
	return 2
}

func (c *cube) name() string {
	switch {
	case !c.torus:
		return "dimension order (mesh)"
	case c.dateline:
		return "dimension order with dateline lanes (torus)"
	}
	return "dimension order without datelines (torus; cyclic)"
}

func (c *cube) vls() int {
	if c.torus && c.dateline {
		return 2
	}
	return 1
}

func (c *cube) coord(s, d int) int { return int(c.coords[s*len(c.k)+d]) }

// dir returns +1, -1 or 0 (and whether both are minimal) for dimension d.
func (c *cube) dir(s, dst, d int) (dir int, both bool) {
	st := c.steps[d][c.coord(s, d)*c.k[d]+c.coord(dst, d)]
	if st == 2 {
		return 1, true
	}
	return int(st), false
}

func (c *cube) portFor(d, dir int) int {
	if dir > 0 {
		return c.t.DimPorts[d][0]
	}
	return c.t.DimPorts[d][1]
}

// dimOf returns the dimension a port belongs to, or -1 (host port).
func (c *cube) dimOf(p int) int {
	if p < len(c.portDim) {
		return int(c.portDim[p])
	}
	return -1
}

// crossesWrap reports whether moving from s in dimension d direction dir
// takes the wrap-around link.
func (c *cube) crossesWrap(s, d, dir int) bool {
	a := c.coord(s, d)
	return (dir > 0 && a == c.k[d]-1) || (dir < 0 && a == 0)
}

func (c *cube) next(s, inPort, inVL int, inEscape bool, dst, _ int) (int, int) {
	for d := range c.k {
		dir, _ := c.dir(s, dst, d)
		if dir == 0 {
			continue
		}
		vl := 0
		if c.torus && c.dateline {
			if inEscape && inVL == 1 && c.dimOf(inPort) == d {
				vl = 1 // already past the dateline of this dimension
			}
			if c.crossesWrap(s, d, dir) {
				vl = 1
			}
		}
		return c.portFor(d, dir), vl
	}
	panic("route: cube.next called at the destination switch")
}

func (c *cube) minimal(s, dst int, buf []int32) []int32 {
	for d := range c.k {
		dir, both := c.dir(s, dst, d)
		if dir == 0 {
			continue
		}
		buf = append(buf, int32(c.portFor(d, dir)))
		if both {
			buf = append(buf, int32(c.portFor(d, -dir)))
		}
	}
	return buf
}
