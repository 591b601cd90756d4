package topo

import (
	"fmt"
	"strconv"
	"strings"
)

// Port layout of k-ary n-cubes (tori and meshes), which dimension-order and
// adaptive routing on cubes rely on:
//
//   - ports 0..h-1 carry the h hosts of the switch (host j of switch s is
//     host number s*h+j);
//   - for dimension d (0-based), port h+2d leads to the +d neighbour and
//     port h+2d+1 to the -d neighbour; Topology.DimPorts[d] = {h+2d, h+2d+1};
//   - ports from h+2n up to Ports-1 (when more ports are asked for than
//     needed) stay unconnected.
//
// Switch index = sum over d of Coord[d]*prod(K[0..d-1]): dimension 0 varies
// fastest. Every switch has the same port layout whatever its position, so
// a mesh switch on an edge simply has its outward port unconnected.
//
// A link always joins the +d port of a switch to the -d port of its +d
// neighbour. In a torus with K[d] = 2 the +d and -d neighbours are the same
// switch; the rule then yields two separate links between the pair (a's +d
// to b's -d, and b's +d to a's -d), so both directions of the ring exist as
// in any other torus. A dimension with K[d] = 1 has no links; its two ports
// stay unconnected but keep their numbers so the layout does not depend on k.

// CubePortsNeeded returns the ports a cube switch needs: hostsPerSwitch
// host ports plus two per dimension.
func CubePortsNeeded(dims, hostsPerSwitch int) int { return hostsPerSwitch + 2*dims }

// Torus builds a k-ary n-cube with wraparound links (papers 001 and 002
// evaluate 2D tori such as 16x16 and 32x32; paper 004 §4.1 a 4x4 torus with
// 8 hosts per switch). k[d] is the number of switches along dimension d;
// ports is the switch radix, or 0 for exactly hostsPerSwitch+2*len(k).
func Torus(k []int, hostsPerSwitch, ports int) (*Topology, error) {
	return cube(KindTorus, k, hostsPerSwitch, ports)
}

// Mesh builds a k-ary n-cube without wraparound links; see Torus for the
// parameters. Ports facing outside the mesh stay unconnected.
func Mesh(k []int, hostsPerSwitch, ports int) (*Topology, error) {
	return cube(KindMesh, k, hostsPerSwitch, ports)
}

// CubeShape formats k as "4x4" (dimension 0 first).
func CubeShape(k []int) string {
	parts := make([]string, len(k))
	for i, v := range k {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, "x")
}

// maxSwitches bounds every builder so that a typo in a config cannot make
// the process allocate gigabytes.
const maxSwitches = 1 << 20

func cube(kind Kind, k []int, h, ports int) (*Topology, error) {
	if len(k) == 0 {
		return nil, fmt.Errorf("%s: k is empty: need at least one dimension", kind)
	}
	total := 1
	for d, kd := range k {
		if kd <= 0 {
			return nil, fmt.Errorf("%s: k[%d] = %d: switches per dimension must be at least 1", kind, d, kd)
		}
		if total > maxSwitches/kd {
			return nil, fmt.Errorf("%s %s: more than %d switches", kind, CubeShape(k), maxSwitches)
		}
		total *= kd
	}
	if h <= 0 {
		return nil, fmt.Errorf("%s: hosts_per_switch = %d: must be at least 1", kind, h)
	}
	need := CubePortsNeeded(len(k), h)
	if ports == 0 {
		ports = need
	}
	if ports < need {
		return nil, fmt.Errorf("%s %s: ports = %d is fewer than %d hosts + %d neighbour ports (2 per dimension) = %d",
			kind, CubeShape(k), ports, h, 2*len(k), need)
	}
	t := &Topology{
		Name:     fmt.Sprintf("%s-%s-h%d", kind, CubeShape(k), h),
		Kind:     kind,
		K:        append([]int(nil), k...),
		Switches: make([]Switch, total),
		Hosts:    make([]Host, 0, total*h),
		DimPorts: make([][2]int, len(k)),
	}
	for d := range k {
		t.DimPorts[d] = [2]int{h + 2*d, h + 2*d + 1}
	}
	for s := range t.Switches {
		c := t.CoordOf(s)
		names := make([]string, len(c))
		for d, v := range c {
			names[d] = strconv.Itoa(v)
		}
		t.Switches[s] = Switch{Name: "s" + strings.Join(names, "."), Ports: ports, Coord: c}
		for j := 0; j < h; j++ {
			t.Hosts = append(t.Hosts, Host{Name: fmt.Sprintf("h%d", s*h+j), At: PortRef{s, j}})
		}
	}
	for s := range t.Switches {
		c := t.Switches[s].Coord
		for d, kd := range k {
			if kd == 1 {
				continue
			}
			if kind == KindMesh && c[d] == kd-1 {
				continue
			}
			n := t.CubeNeighbor(s, d, +1)
			t.Links = append(t.Links, Link{
				A: PortRef{s, t.DimPorts[d][0]},
				B: PortRef{n, t.DimPorts[d][1]},
			})
		}
	}
	if err := t.Finish(); err != nil {
		return nil, err
	}
	return t, nil
}

// CoordOf returns the cube coordinates of switch s (dimension 0 first),
// computed from K. It is only meaningful for KindTorus and KindMesh.
func (t *Topology) CoordOf(s int) []int {
	c := make([]int, len(t.K))
	for d, kd := range t.K {
		c[d] = s % kd
		s /= kd
	}
	return c
}

// SwitchAt returns the index of the switch at cube coordinates c:
// sum of c[d]*prod(K[0..d-1]).
func (t *Topology) SwitchAt(c []int) int {
	s, mul := 0, 1
	for d, kd := range t.K {
		s += c[d] * mul
		mul *= kd
	}
	return s
}

// CubeNeighbor returns the switch one step from s along dimension d in
// direction dir (+1 or -1), wrapping around as in a torus. Callers on a
// mesh must check the edge themselves.
func (t *Topology) CubeNeighbor(s, d, dir int) int {
	c := t.CoordOf(s)
	kd := t.K[d]
	c[d] = ((c[d]+dir)%kd + kd) % kd
	return t.SwitchAt(c)
}
