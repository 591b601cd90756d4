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
// The up port is selected by a base-k digit of the destination host
// (destination-based d-mod-k, the self-routing of paper 000 §4.1's
// perfect-shuffle MIN): digit 0 at stage 0 and digit n-i at stage i >= 1,
// where N = k^n hosts. With the shuffle of topo.MIN a packet for host
// d = (d_{n-1} ... d_0) climbing with up ports u_0, u_1, ... reaches the
// top-stage switch (u_0 u_1 ... u_{n-2}) and descends from stage j through
// port d_{n-j}; the down link it takes out of stage j is therefore named by
// (d_{n-1-j} ... d_1, u_0 ... u_{j-1}, d_{n-j}). With u_0 = d_0 and
// u_i = d_{n-i} that name holds every digit of d, so every down link
// carries the packets of exactly one destination, and uniform traffic
// loads every link evenly (route tests check both). Selecting digit i at
// stage i instead, as fabemu did before, sends the k destinations that
// share a top switch down one of its links and caps uniform traffic near
// 1/3 of the link rate on 64 hosts (1/4 on 256). When N is not a power of
// k (paper 000's 512 hosts of 8-port switches) n is the number of whole
// base-k digits, floor(log_k N); the rule is then the best digit choice
// (a search over all of them finds none better) but not perfectly even.
func newMINEscape(t *topo.Topology) *upDown {
	levels := make([]int, t.NumSwitches())
	for s, sw := range t.Switches {
		levels[s] = t.Stages - 1 - sw.Stage
	}
	u := buildUpDown(t, levels)
	u.desc = "min (up*/down* by stage, d-mod-k)"
	u.divs = minDigitDivisors(t.NumHosts(), t.Switches[0].Ports/2, t.Stages)
	return u
}

// minDigitDivisors returns, per stage, the power of k by which the
// destination host is divided before taking it modulo the number of
// candidates (see newMINEscape): k^0 at stage 0 and k^(n-i) at stage
// i >= 1 with n = floor(log_k hosts), wrapping round the n digits on
// stages beyond the ones needed. The last stage only goes down; when N is
// not a power of k it can have several down paths to a host, and it
// selects by the partial top digit, floor(d / k^n).
func minDigitDivisors(hosts, k, stages int) []int {
	n := 0
	for span := k; span <= hosts && k > 1; span *= k {
		n++
	}
	pow := func(e int) int {
		d := 1
		for ; e > 0; e-- {
			d *= k
		}
		return d
	}
	divs := make([]int, stages)
	for st := range divs {
		digit := 0
		switch {
		case st == 0 || n == 0:
		case st == stages-1:
			digit = n
		default:
			digit = ((n-st)%n + n) % n
		}
		divs[st] = pow(digit)
	}
	return divs
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
	divs     []int // MIN: per stage, the divisor that selects the destination digit; nil elsewhere
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
	// forwarding table built per destination would: on a MIN by the base-k
	// digit of the host that newMINEscape assigns to this stage (d-mod-k),
	// so every down link carries one destination; elsewhere by the host
	// modulo the choices.
	pick := dstHost
	if u.divs != nil {
		pick /= u.divs[u.t.Switches[s].Stage]
	}
	return cands[pick%len(cands)], 0
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
