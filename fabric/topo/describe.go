package topo

import "fmt"

// Describe returns a one-line description, e.g.
// "4x4 torus, 16 switches, 128 hosts, 32 links".
func (t *Topology) Describe() string {
	var shape string
	switch t.Kind {
	case KindTorus, KindMesh:
		shape = fmt.Sprintf("%s %s", CubeShape(t.K), t.Kind)
	case KindMIN:
		ports := 0
		if len(t.Switches) > 0 {
			ports = t.Switches[0].Ports
		}
		shape = fmt.Sprintf("%d-stage perfect-shuffle MIN of %d-port switches", t.Stages, ports)
	case KindIrregular:
		shape = fmt.Sprintf("irregular (%s)", t.Name)
	default:
		shape = fmt.Sprintf("%s (%s)", t.Kind, t.Name)
	}
	return fmt.Sprintf("%s, %d switches, %d hosts, %d links", shape, len(t.Switches), len(t.Hosts), len(t.Links))
}

// Summary is a stable, JSON-friendly description of a topology for result
// files and the control API.
type Summary struct {
	Name        string `json:"name"`
	Kind        Kind   `json:"kind"`
	Description string `json:"description"`
	Switches    int    `json:"switches"`
	Hosts       int    `json:"hosts"`
	Links       int    `json:"links"`
	K           []int  `json:"k,omitempty"`
	Stages      int    `json:"stages,omitempty"`
	// Diameter is the largest switch-to-switch hop count.
	Diameter int `json:"diameter"`
}

// Summarize returns the Summary of a finished topology.
func (t *Topology) Summarize() Summary {
	return Summary{
		Name: t.Name, Kind: t.Kind, Description: t.Describe(),
		Switches: len(t.Switches), Hosts: len(t.Hosts), Links: len(t.Links),
		K: t.K, Stages: t.Stages, Diameter: t.Diameter(),
	}
}

// HopDistances returns the number of switch-to-switch hops from switch s
// to every switch (breadth-first search; -1 if unreachable, which a
// finished topology never has).
func (t *Topology) HopDistances(s int) []int {
	dist := make([]int, len(t.Switches))
	for i := range dist {
		dist[i] = -1
	}
	dist[s] = 0
	queue := []int{s}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, r := range t.peer[u] {
			if r.Switch >= 0 && dist[r.Switch] < 0 {
				dist[r.Switch] = dist[u] + 1
				queue = append(queue, r.Switch)
			}
		}
	}
	return dist
}

// HopDistance returns the minimal number of switch-to-switch hops from
// switch a to switch b.
func (t *Topology) HopDistance(a, b int) int { return t.HopDistances(a)[b] }

// Diameter returns the largest HopDistance over all pairs of switches
// (one BFS per switch).
func (t *Topology) Diameter() int {
	d := 0
	for s := range t.Switches {
		for _, x := range t.HopDistances(s) {
			d = max(d, x)
		}
	}
	return d
}
