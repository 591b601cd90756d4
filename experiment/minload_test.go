package experiment

import (
	"fmt"
	"testing"

	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/workload/replay"
)

// TestMINPresetsBalanced: every MIN that a preset or a row of an embedded
// experiment builds routes uniform traffic with its busiest link at the
// lower bound (N-k)/(N-1) of the link rate (see fabric/route's
// TestMINUniformLinkLoad for the bound and the routing), so no paper
// experiment on a MIN saturates a link under its uniform background load
// before the hosts saturate. It covers the sizes the route test lists and
// any a new preset or row adds.
func TestMINPresetsBalanced(t *testing.T) {
	type use struct {
		tc    topo.Config
		rc    route.Config
		where string
	}
	seen := map[string]use{}
	add := func(m model.Model, where string) {
		if m.Topology.Kind != topo.KindMIN {
			return
		}
		key := fmt.Sprintf("%d hosts, radix %d, %d stages, escape %s", m.Topology.Hosts, m.Topology.MINRadix, m.Topology.Stages, m.Routing.Escape)
		if _, ok := seen[key]; !ok {
			seen[key] = use{m.Topology, m.Routing, where}
		}
	}
	for _, p := range model.Presets() {
		add(p.Config.Model, "preset "+p.Name)
	}
	for _, name := range Embedded() {
		e, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range e.Rows {
			c, _, err := e.RowConfig(r.Name, false)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, r.Name, err)
			}
			switch c := c.(type) {
			case *model.SimConfig:
				add(c.Model, name+"/"+r.Name)
			case *replay.ReplaySimConfig:
				add(c.Model, name+"/"+r.Name)
			}
		}
	}
	if len(seen) < 5 {
		t.Fatalf("found %d MIN configurations, want the papers' 5 or more: %v", len(seen), seen)
	}
	for key, u := range seen {
		t.Run(key, func(t *testing.T) {
			tp, err := topo.Build(u.tc)
			if err != nil {
				t.Fatalf("%s: %v", u.where, err)
			}
			rc := u.rc
			rc.Mode = route.Deterministic
			r, err := route.New(tp, rc)
			if err != nil {
				t.Fatalf("%s: %v", u.where, err)
			}
			load, err := r.UniformLinkLoads()
			if err != nil {
				t.Fatal(err)
			}
			n, k := tp.NumHosts(), tp.Switches[0].Ports/2
			want := float64(n-k) / float64(n-1)
			if tp.Stages == 1 {
				want = 0
			}
			mx := 0.0
			for _, l := range load {
				mx = max(mx, l)
			}
			if mx < want-1e-9 || mx > want+1e-9 {
				t.Errorf("%s: busiest link carries %.4f of the link rate under uniform load, want (N-k)/(N-1) = %.4f", u.where, mx, want)
			}
		})
	}
}
