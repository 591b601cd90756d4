package fabrictest

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// Net is a small network under test: topology, router, fabric and the
// test endpoint on one engine.
type Net struct {
	Name string
	Eng  *des.Engine
	Topo *topo.Topology
	F    *fabric.Fabric
	EP   *Endpoint
}

// MaxPacket is the largest wire size the suite sends (a 256-byte MTU with
// InfiniBand headers).
const MaxPacket = 282

// Build assembles a network on topology t with fabric configuration fc and
// routing rc.
func Build(name string, t *topo.Topology, fc fabric.Config, rc route.Config) (*Net, error) {
	r, err := route.New(t, rc)
	if err != nil {
		return nil, fmt.Errorf("%s: routing: %w", name, err)
	}
	eng := des.New()
	ep := NewEndpoint(t.NumHosts())
	f, err := fabric.New(eng, fc, t, r, MaxPacket, ep)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ep.Attach(eng, f)
	return &Net{Name: name, Eng: eng, Topo: t, F: f, EP: ep}, nil
}

// Topology is a named topology builder.
type Topology struct {
	Name  string
	Build func() (*topo.Topology, error)
}

// Topologies returns small networks of each family: a line of switches, a
// 3x3 torus, a 2x3 mesh, a 16-host bidirectional MIN and a random
// irregular network.
func Topologies() []Topology {
	cfg := func(c topo.Config) func() (*topo.Topology, error) {
		return func() (*topo.Topology, error) { return topo.Build(c) }
	}
	torus := topo.DefaultConfig(topo.KindTorus)
	torus.K, torus.HostsPerSwitch = []int{3, 3}, 2
	mesh := topo.DefaultConfig(topo.KindMesh)
	mesh.K, mesh.HostsPerSwitch = []int{2, 3}, 2
	min := topo.DefaultConfig(topo.KindMIN)
	min.Hosts, min.MINRadix = 16, 4
	irr := topo.DefaultConfig(topo.KindIrregular)
	irr.Switches, irr.Ports, irr.HostsPerSwitch, irr.Seed = 8, 6, 2, 3
	return []Topology{
		{"line4", func() (*topo.Topology, error) { return Line(4, 3) }},
		{"torus3x3", cfg(torus)},
		{"mesh2x3", cfg(mesh)},
		{"min16", cfg(min)},
		{"irregular8", cfg(irr)},
	}
}

// Line builds n switches in a row, each with h hosts on ports 0..h-1 and
// its neighbours on ports h (left) and h+1 (right).
func Line(n, h int) (*topo.Topology, error) {
	tp := &topo.Topology{Name: "line", Kind: topo.KindGeneric}
	for s := 0; s < n; s++ {
		tp.Switches = append(tp.Switches, topo.Switch{Ports: h + 2})
		for i := 0; i < h; i++ {
			tp.Hosts = append(tp.Hosts, topo.Host{At: topo.PortRef{Switch: s, Port: i}})
		}
		if s > 0 {
			tp.Links = append(tp.Links, topo.Link{A: topo.PortRef{Switch: s - 1, Port: h + 1}, B: topo.PortRef{Switch: s, Port: h}})
		}
	}
	return tp, tp.Finish()
}

// Invariants checks the fabric's conservation laws now: credits per
// channel and lane conserved and never negative, buffers within capacity,
// packets conserved (queued at hosts + in the fabric + delivered = sent),
// no packet stored beyond those in the fabric, nothing delivered wrongly,
// and the allocators' index of non-empty input queues exact.
// It returns what failed, or nil.
func (n *Net) Invariants() error {
	var bad []string
	iv := n.F.CheckInvariants()
	if !iv.OK() {
		bad = append(bad, iv.Violations...)
	}
	ep := n.EP
	if got := uint64(ep.Queued()) + n.F.InFabric() + ep.Delivered; got != ep.Sent() {
		bad = append(bad, fmt.Sprintf("packets not conserved: %d queued at hosts + %d in the fabric + %d delivered = %d, sent %d",
			ep.Queued(), n.F.InFabric(), ep.Delivered, got, ep.Sent()))
	}
	if err := n.F.CheckQueueIndex(); err != nil {
		bad = append(bad, err.Error())
	}
	if n.F.Stats.Delivered != ep.Delivered {
		bad = append(bad, fmt.Sprintf("fabric counted %d deliveries, the endpoint %d", n.F.Stats.Delivered, ep.Delivered))
	}
	if st := uint64(n.F.Occupancy()) + uint64(n.F.Absorbed()); st > n.F.InFabric() {
		bad = append(bad, fmt.Sprintf("%d packets stored in switches or absorbed by nodes for reinjection but only %d in the fabric", st, n.F.InFabric()))
	}
	if ds := n.F.DeadlockStats(); ds.Recoveries != ds.Reinjections+uint64(n.F.Absorbed()) {
		bad = append(bad, fmt.Sprintf("deadlock recovery: %d absorbed, %d reinjected, %d waiting", ds.Recoveries, ds.Reinjections, n.F.Absorbed()))
	}
	bad = append(bad, ep.Errors...)
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", n.Name, strings.Join(bad, "; "))
}

// Drain runs until every packet sent has been delivered or limit has
// passed, and reports a deadlock, a stall or lost packets.
func (n *Net) Drain(limit des.Time) error {
	end := n.Eng.Now() + limit
	for n.EP.Delivered < n.EP.Sent() && n.Eng.Now() < end {
		n.Eng.RunUntil(min(n.Eng.Now()+10*des.Microsecond, end))
		if n.F.Deadlock != nil {
			return fmt.Errorf("%s: %w", n.Name, n.F.Deadlock)
		}
	}
	if n.EP.Delivered != n.EP.Sent() {
		return fmt.Errorf("%s: %d of %d packets delivered after draining for %v", n.Name, n.EP.Delivered, n.EP.Sent(), limit)
	}
	if n.F.InFabric() != 0 || n.F.Occupancy() != 0 || n.F.Absorbed() != 0 {
		return fmt.Errorf("%s: drained, yet %d packets in the fabric and %d stored", n.Name, n.F.InFabric(), n.F.Occupancy())
	}
	return n.Invariants()
}
