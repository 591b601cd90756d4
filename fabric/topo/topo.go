// Package topo owns the shapes of fabrics: which switches exist, how many
// ports each has, which port of which switch a host hangs on, and which
// switch ports are cabled together. It builds k-ary n-cubes (tori and
// meshes), bidirectional multistage networks with perfect-shuffle wiring,
// seeded random irregular networks, and topologies read from files
// (a YAML/JSON edge list and ibnetdiscover output).
//
// A Topology is plain data. It knows nothing of link rates, buffers or
// routing; fabric/route reads it to build forwarding tables and fabric reads
// it to instantiate switches and links.
package topo

import (
	"fmt"
	"sort"
)

// Kind names the family a topology was built from. Routing uses it to
// offer family-specific algorithms (dimension order on cubes, up/down
// stages on multistage networks); KindGeneric topologies get up*/down*.
type Kind string

const (
	KindTorus     Kind = "torus"
	KindMesh      Kind = "mesh"
	KindMIN       Kind = "min"
	KindIrregular Kind = "irregular"
	KindGeneric   Kind = "generic"
)

// PortRef names one port of one switch.
type PortRef struct {
	Switch int `json:"switch"`
	Port   int `json:"port"`
}

func (p PortRef) String() string { return fmt.Sprintf("s%d/p%d", p.Switch, p.Port) }

// Link is one bidirectional cable between two switch ports. It becomes two
// unidirectional channels in the fabric.
type Link struct {
	A PortRef `json:"a"`
	B PortRef `json:"b"`
}

// Host is an end node (a NIC) attached to one switch port.
type Host struct {
	Name string  `json:"name"`
	At   PortRef `json:"at"`
}

// Switch is one switch. Ports are numbered 0..Ports-1. Coord is set for
// k-ary n-cubes (one entry per dimension, dimension 0 first); Stage is set
// for multistage networks (0 is the stage hosts attach to).
type Switch struct {
	Name  string `json:"name"`
	Ports int    `json:"ports"`
	Coord []int  `json:"coord,omitempty"`
	Stage int    `json:"stage"`
}

// Topology is a complete fabric graph.
type Topology struct {
	Name     string   `json:"name"`
	Kind     Kind     `json:"kind"`
	Switches []Switch `json:"-"`
	Hosts    []Host   `json:"-"`
	Links    []Link   `json:"-"`

	// Cube parameters (KindTorus, KindMesh): K[d] switches along dimension d.
	K []int `json:"k,omitempty"`
	// DimPorts[d] = {plus, minus}: the port numbers used for the +d and -d
	// neighbours on every switch of a cube. Unused for other kinds.
	DimPorts [][2]int `json:"-"`

	// MIN parameters: number of stages and switch radix (k down + k up ports).
	Stages int `json:"stages,omitempty"`

	// peer[s][p] is the port at the other end of switch s port p, or
	// {-1,-1} if unconnected; hostAt[s][p] is the host index on that port
	// or -1. Built by Finish.
	peer   [][]PortRef
	hostAt [][]int
	nbrs   [][]int // switch-link ports per switch, in port order
}

// Finish indexes the links and hosts and validates the graph: port numbers
// in range, no port used twice, no self-loop, every switch reachable from
// every other, every host on an existing port, and at least one host.
// Every builder and loader calls it; a Topology is not usable before.
func (t *Topology) Finish() error {
	if len(t.Switches) == 0 {
		return fmt.Errorf("topology %q has no switches", t.Name)
	}
	if len(t.Hosts) == 0 {
		return fmt.Errorf("topology %q has no hosts", t.Name)
	}
	t.peer = make([][]PortRef, len(t.Switches))
	t.hostAt = make([][]int, len(t.Switches))
	for s, sw := range t.Switches {
		if sw.Ports <= 0 {
			return fmt.Errorf("switch %d (%s) has %d ports; need at least 1", s, sw.Name, sw.Ports)
		}
		t.peer[s] = make([]PortRef, sw.Ports)
		t.hostAt[s] = make([]int, sw.Ports)
		for p := range t.peer[s] {
			t.peer[s][p] = PortRef{-1, -1}
			t.hostAt[s][p] = -1
		}
	}
	used := func(r PortRef) error {
		if r.Switch < 0 || r.Switch >= len(t.Switches) {
			return fmt.Errorf("switch %d does not exist (topology has %d switches)", r.Switch, len(t.Switches))
		}
		if r.Port < 0 || r.Port >= t.Switches[r.Switch].Ports {
			return fmt.Errorf("port %s out of range: switch %d has %d ports", r, r.Switch, t.Switches[r.Switch].Ports)
		}
		if t.peer[r.Switch][r.Port].Switch >= 0 || t.hostAt[r.Switch][r.Port] >= 0 {
			return fmt.Errorf("port %s is used twice", r)
		}
		return nil
	}
	for i, l := range t.Links {
		if err := used(l.A); err != nil {
			return fmt.Errorf("link %d (%s-%s): %w", i, l.A, l.B, err)
		}
		if l.A == l.B {
			return fmt.Errorf("link %d connects port %s to itself", i, l.A)
		}
		t.peer[l.A.Switch][l.A.Port] = l.B // reserve A before checking B
		if err := used(l.B); err != nil {
			return fmt.Errorf("link %d (%s-%s): %w", i, l.A, l.B, err)
		}
		t.peer[l.B.Switch][l.B.Port] = l.A
	}
	for h, host := range t.Hosts {
		if err := used(host.At); err != nil {
			return fmt.Errorf("host %d (%s): %w", h, host.Name, err)
		}
		t.hostAt[host.At.Switch][host.At.Port] = h
	}
	t.nbrs = make([][]int, len(t.Switches))
	for s := range t.Switches {
		for p, r := range t.peer[s] {
			if r.Switch >= 0 {
				t.nbrs[s] = append(t.nbrs[s], p)
			}
		}
	}
	if comp := t.components(); len(comp) > 1 {
		return fmt.Errorf("topology %q is disconnected: %d components; switch %d cannot reach switch %d",
			t.Name, len(comp), comp[0][0], comp[1][0])
	}
	return nil
}

// components returns the connected components of the switch graph, each
// sorted, ordered by their smallest switch.
func (t *Topology) components() [][]int {
	seen := make([]bool, len(t.Switches))
	var out [][]int
	for s := range t.Switches {
		if seen[s] {
			continue
		}
		comp := []int{}
		stack := []int{s}
		seen[s] = true
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			comp = append(comp, u)
			for _, pr := range t.peer[u] {
				if pr.Switch >= 0 && !seen[pr.Switch] {
					seen[pr.Switch] = true
					stack = append(stack, pr.Switch)
				}
			}
		}
		sort.Ints(comp)
		out = append(out, comp)
	}
	return out
}

// NumSwitches returns the number of switches.
func (t *Topology) NumSwitches() int { return len(t.Switches) }

// NumHosts returns the number of hosts.
func (t *Topology) NumHosts() int { return len(t.Hosts) }

// Peer returns the switch port cabled to switch s port p, and false if that
// port is not a switch-to-switch link (free, or a host port).
func (t *Topology) Peer(s, p int) (PortRef, bool) {
	r := t.peer[s][p]
	return r, r.Switch >= 0
}

// HostAt returns the host on switch s port p, and false if none.
func (t *Topology) HostAt(s, p int) (int, bool) {
	h := t.hostAt[s][p]
	return h, h >= 0
}

// Neighbors returns, for switch s, the ports that lead to other switches,
// in port order. The slice is shared: callers must not modify it. Routing
// calls this for every packet at every switch, so it does not allocate.
func (t *Topology) Neighbors(s int) []int { return t.nbrs[s] }

// HostsOn returns the hosts attached to switch s, in port order.
func (t *Topology) HostsOn(s int) []int {
	var hs []int
	for _, h := range t.hostAt[s] {
		if h >= 0 {
			hs = append(hs, h)
		}
	}
	return hs
}
