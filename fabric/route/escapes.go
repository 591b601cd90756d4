package route

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/topo"
)

// EscapeInfo describes one escape routing function of the table.
type EscapeInfo struct {
	Name        string
	Description string
	Source      string
	build       func(t *topo.Topology, c Config) (escaper, error)
}

// escapeTable lists the escape functions routing.escape may name ("auto"
// picks one by topology family in New). To add one, write its escaper in a
// file of its own and add a line here; New then checks its channel
// dependency graph like any other's.
func escapeTable() []EscapeInfo {
	return []EscapeInfo{
		{Name: "updown", Source: "paper 004 §4.1", Description: "up*/down* on a BFS spanning tree from routing.updown_root; any topology",
			build: func(t *topo.Topology, c Config) (escaper, error) {
				if c.UpDownRoot < 0 || c.UpDownRoot >= t.NumSwitches() {
					return nil, fmt.Errorf("updown_root %d: topology has switches 0..%d", c.UpDownRoot, t.NumSwitches()-1)
				}
				return newUpDown(t, c.UpDownRoot), nil
			}},
		{Name: "dor", Source: "papers 001 §4.1, 002 §2", Description: "dimension order with two dateline lanes per torus dimension; tori and meshes",
			build: func(t *topo.Topology, c Config) (escaper, error) {
				if t.Kind != topo.KindTorus && t.Kind != topo.KindMesh {
					return nil, fmt.Errorf("escape routing dor needs a torus or mesh, topology %q is %s", t.Name, t.Kind)
				}
				return newCube(t, c.Dateline), nil
			}},
		{Name: "bubble", Source: "paper 002 §3, §5.1", Description: "dimension order on one escape lane without datelines; bubble flow control lets a packet enter a ring (injection, adaptive to escape, dimension change) only with room for two packets at the ring's next buffer; tori",
			build: func(t *topo.Topology, _ Config) (escaper, error) { return newBubbleCube(t) }},
		{Name: "min", Source: "paper 000 §4.1", Description: "destination-selected minimal paths (up, then down) on bidirectional multistage networks",
			build: func(t *topo.Topology, _ Config) (escaper, error) {
				if t.Kind != topo.KindMIN {
					return nil, fmt.Errorf("escape routing min needs a multistage network, topology %q is %s", t.Name, t.Kind)
				}
				return newMINEscape(t), nil
			}},
	}
}

// Escapes returns the escape functions routing.escape accepts.
func Escapes() []EscapeInfo { return escapeTable() }

func lookupEscape(name string) (EscapeInfo, bool) {
	for _, e := range escapeTable() {
		if e.Name == name {
			return e, true
		}
	}
	return EscapeInfo{}, false
}

func escapeNames() string {
	var ns []string
	for _, e := range escapeTable() {
		ns = append(ns, e.Name)
	}
	if len(ns) > 1 {
		return strings.Join(ns[:len(ns)-1], ", ") + " or " + ns[len(ns)-1]
	}
	return strings.Join(ns, "")
}
