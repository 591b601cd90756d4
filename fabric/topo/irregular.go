package topo

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Random irregular networks as in paper 004 §4.1: "every switch in the
// network has the same number of ports (we used 8 ports) and the same number
// of nodes connected to every switch (4 ports in our simulations). And
// second, neighboring switches will be interconnected by just one link."
//
// Each switch has P ports: hosts on ports 0..H-1, links to other switches on
// ports H, H+1, ... in increasing order of the neighbour's index. The switch
// graph is a random simple graph (no self-links, at most one link between
// two switches) in which every switch tries to use all D = P-H inter-switch
// ports, and which is connected.
//
// Generation, for attempt a = 0, 1, 2, ...: a generator
// rand.New(rand.NewPCG(seed, a)) (math/rand/v2, so the same seed gives the
// same network on every platform and Go release that keeps PCG) pairs free
// ports at random: repeatedly pick a switch with free ports, and link it to a
// random other switch that has free ports and is not yet its neighbour.
// When no such pair is left, a repair step rewires existing links to use the
// remaining free ports: a switch u with two free ports takes over a link
// a-b (u, a, b distinct, u adjacent to neither) as u-a and u-b; two adjacent
// switches u, v with a free port each replace a link a-b by u-a and v-b.
// Ports that still cannot be used stay free (this can only happen when the
// degree D is close to the switch count, e.g. N*D odd leaves one port free).
// If the graph is disconnected the attempt is discarded and the next one is
// tried; the first connected graph wins.
//
// With D > N-1 a switch cannot have D distinct neighbours, so at most N-1
// of its inter-switch ports are used (the complete graph).

// maxIrregularAttempts bounds the retries for a connected graph.
const maxIrregularAttempts = 1000

// MaxIrregularSwitches bounds the size of a random irregular network (the
// generator is quadratic in the switch count; the papers use 16 to 64).
const MaxIrregularSwitches = 4096

// Irregular builds a random irregular network of `switches` switches with
// `ports` ports each and hostsPerSwitch hosts on each, reproducible from
// seed (see the comment above for the algorithm and port layout).
func Irregular(switches, ports, hostsPerSwitch int, seed uint64) (*Topology, error) {
	switch {
	case switches <= 0:
		return nil, fmt.Errorf("irregular: switches = %d: must be at least 1", switches)
	case switches > MaxIrregularSwitches:
		return nil, fmt.Errorf("irregular: switches = %d: more than %d", switches, MaxIrregularSwitches)
	case hostsPerSwitch <= 0:
		return nil, fmt.Errorf("irregular: hosts_per_switch = %d: must be at least 1", hostsPerSwitch)
	case ports <= 0:
		return nil, fmt.Errorf("irregular: ports = %d: must be at least 1", ports)
	}
	d := ports - hostsPerSwitch
	if switches > 1 && d < 1 {
		return nil, fmt.Errorf("irregular: ports = %d is fewer than %d hosts + 1 neighbour port: %d switches cannot be connected",
			ports, hostsPerSwitch, switches)
	}
	if switches > 2 && d < 2 {
		return nil, fmt.Errorf("irregular: %d ports - %d hosts leaves 1 inter-switch port per switch: %d switches cannot be connected (need at least 2)",
			ports, hostsPerSwitch, switches)
	}
	d = min(d, switches-1)
	var adj [][]int
	for a := uint64(0); ; a++ {
		if a == maxIrregularAttempts {
			return nil, fmt.Errorf("irregular: no connected network of %d switches with %d inter-switch ports each after %d attempts (seed %d)",
				switches, d, maxIrregularAttempts, seed)
		}
		adj = randomGraph(rand.New(rand.NewPCG(seed, a)), switches, d)
		if graphConnected(adj) {
			break
		}
	}
	t := &Topology{
		Name:     fmt.Sprintf("irregular-%ds-%dp-h%d-seed%d", switches, ports, hostsPerSwitch, seed),
		Kind:     KindIrregular,
		Switches: make([]Switch, switches),
		Hosts:    make([]Host, 0, switches*hostsPerSwitch),
	}
	portOf := make([]map[int]int, switches) // portOf[u][v]: port of u toward v
	for u := range t.Switches {
		t.Switches[u] = Switch{Name: fmt.Sprintf("s%d", u), Ports: ports}
		for j := 0; j < hostsPerSwitch; j++ {
			t.Hosts = append(t.Hosts, Host{Name: fmt.Sprintf("h%d", u*hostsPerSwitch+j), At: PortRef{u, j}})
		}
		slices.Sort(adj[u])
		portOf[u] = make(map[int]int, len(adj[u]))
		for i, v := range adj[u] {
			portOf[u][v] = hostsPerSwitch + i
		}
	}
	for u := range adj {
		for _, v := range adj[u] {
			if u < v {
				t.Links = append(t.Links, Link{A: PortRef{u, portOf[u][v]}, B: PortRef{v, portOf[v][u]}})
			}
		}
	}
	if err := t.Finish(); err != nil {
		return nil, err
	}
	return t, nil
}

// randomGraph returns the adjacency lists of a random simple graph on n
// vertices with degree at most d, trying to reach degree d everywhere.
func randomGraph(r *rand.Rand, n, d int) [][]int {
	adj := make([][]int, n)
	linked := make(map[[2]int]bool)
	key := func(u, v int) [2]int {
		if u > v {
			u, v = v, u
		}
		return [2]int{u, v}
	}
	add := func(u, v int) {
		adj[u] = append(adj[u], v)
		adj[v] = append(adj[v], u)
		linked[key(u, v)] = true
	}
	remove := func(u, v int) {
		adj[u] = slices.DeleteFunc(adj[u], func(x int) bool { return x == v })
		adj[v] = slices.DeleteFunc(adj[v], func(x int) bool { return x == u })
		delete(linked, key(u, v))
	}
	free := func(u int) int { return d - len(adj[u]) }

	// Random pairing. open holds the switches that may still get a link.
	open := make([]int, n)
	for i := range open {
		open[i] = i
	}
	cands := make([]int, 0, n)
	for len(open) > 1 {
		i := r.IntN(len(open))
		u := open[i]
		cands = cands[:0]
		for _, v := range open {
			if v != u && !linked[key(u, v)] {
				cands = append(cands, v)
			}
		}
		if len(cands) == 0 {
			open = slices.Delete(open, i, i+1) // u is stuck; the repair step may still help it
			continue
		}
		v := cands[r.IntN(len(cands))]
		add(u, v)
		open = slices.DeleteFunc(open, func(x int) bool { return free(x) == 0 })
	}

	// Repair: rewire existing links to use leftover free ports. Each
	// successful step uses two free ports, so this terminates.
	for progress := true; progress; {
		progress = false
		var short []int
		for u := range adj {
			if free(u) > 0 {
				short = append(short, u)
			}
		}
		links := make([][2]int, 0, len(linked))
		for u := range adj {
			for _, v := range adj[u] {
				if u < v {
					links = append(links, [2]int{u, v})
				}
			}
		}
		r.Shuffle(len(links), func(i, j int) { links[i], links[j] = links[j], links[i] })
	search:
		for i, u := range short {
			for _, v := range short[i:] {
				if v == u && free(u) < 2 {
					continue
				}
				if v != u && !linked[key(u, v)] {
					add(u, v)
					progress = true
					break search
				}
				for _, l := range links {
					for _, ab := range [2][2]int{{l[0], l[1]}, {l[1], l[0]}} {
						a, b := ab[0], ab[1]
						if a == u || a == v || b == u || b == v || linked[key(u, a)] || linked[key(v, b)] {
							continue
						}
						remove(a, b)
						add(u, a)
						add(v, b)
						progress = true
						break search
					}
				}
			}
		}
	}
	return adj
}

func graphConnected(adj [][]int) bool {
	if len(adj) == 0 {
		return true
	}
	seen := make([]bool, len(adj))
	stack := []int{0}
	seen[0] = true
	n := 1
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, v := range adj[u] {
			if !seen[v] {
				seen[v] = true
				n++
				stack = append(stack, v)
			}
		}
	}
	return n == len(adj)
}
