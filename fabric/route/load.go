package route

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/topo"
)

// UniformLinkLoads follows the escape path of every ordered pair of
// distinct hosts and returns, per directed switch-to-switch link (switch,
// output port), the load it carries when every host injects at the link
// rate to uniformly random other hosts: each pair adds 1/(N-1), so a load
// above 1 is a link that saturates before the hosts do. It is the
// analytic check behind the MIN routing of newMINEscape (busiest link
// (N-k)/(N-1)) and costs N^2 route evaluations.
func (r *Router) UniformLinkLoads() (map[topo.PortRef]float64, error) {
	t := r.t
	n := t.NumHosts()
	load := map[topo.PortRef]float64{}
	if n < 2 {
		return load, nil
	}
	share := 1 / float64(n-1)
	err := r.WalkEscapePaths(func(_, _ int, l topo.PortRef) { load[l] += share })
	if err != nil {
		return nil, err
	}
	return load, nil
}

// WalkEscapePaths follows the escape path of every ordered pair of
// distinct hosts and calls visit for each directed switch-to-switch link
// (switch, output port) the path from src to dst takes.
func (r *Router) WalkEscapePaths(visit func(src, dst int, l topo.PortRef)) error {
	t := r.t
	n := t.NumHosts()
	var buf []Candidate
	for src := 0; src < n; src++ {
		for dst := 0; dst < n; dst++ {
			if src == dst {
				continue
			}
			s, inPort := r.HostSwitch(src)
			dsw, _ := r.HostSwitch(dst)
			inVL := 0
			for hops := 0; s != dsw; hops++ {
				if hops > t.NumSwitches() {
					return fmt.Errorf("route: host %d -> host %d does not arrive within %d hops", src, dst, hops)
				}
				buf = r.Candidates(s, inPort, inVL, dst, buf)
				c, ok := escapeCandidate(buf)
				if !ok {
					return fmt.Errorf("route: host %d -> host %d: switch %d offers no escape candidate", src, dst, s)
				}
				visit(src, dst, topo.PortRef{Switch: s, Port: int(c.Port)})
				pr, _ := t.Peer(s, int(c.Port))
				s, inPort, inVL = pr.Switch, pr.Port, int(c.VL)
			}
		}
	}
	return nil
}

func escapeCandidate(cs []Candidate) (Candidate, bool) {
	for _, c := range cs {
		if c.Escape {
			return c, true
		}
	}
	return Candidate{}, false
}
