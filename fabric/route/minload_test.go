package route

import (
	"testing"

	"github.com/fabemu/fabemu/fabric/topo"
)

// minDestinations returns, per directed switch link, the destinations
// whose escape path crosses it.
func minDestinations(t *testing.T, r *Router) map[topo.PortRef]map[int]bool {
	t.Helper()
	dsts := map[topo.PortRef]map[int]bool{}
	err := r.WalkEscapePaths(func(_, dst int, l topo.PortRef) {
		if dsts[l] == nil {
			dsts[l] = map[int]bool{}
		}
		dsts[l][dst] = true
	})
	if err != nil {
		t.Fatal(err)
	}
	return dsts
}

// minSizes are the (hosts, radix) pairs of every MIN a preset or an
// embedded experiment builds; the experiment package's
// TestMINPresetsBalanced checks that none is missing here.
var minSizes = []struct{ hosts, radix int }{
	{8, 16},   // paper 003 §4.2 single switch as a 1-stage MIN (paper003-recniq)
	{16, 8},   // paper 003 §2.9.2 (paper003-min)
	{64, 8},   // paper 000 §4.1 (paper000-min64)
	{256, 8},  // paper 000 / 003 (paper000-min256, paper003-min256)
	{256, 32}, // paper 003 §4.2 (paper003-min256-32)
	{512, 8},  // paper 000 §4.5 (paper000-min512): N not a power of k
}

// TestMINUniformLinkLoad: the MIN escape function (newMINEscape) loads
// the links of the perfect-shuffle MIN evenly under uniform traffic. The
// bound: the k links into a leaf switch carry everything the N-k hosts
// off that leaf send to its k hosts, k(N-k)/(N-1) of the link rate when
// every host injects at the link rate, so some link carries at least
// (N-k)/(N-1), whatever the routing. The test asks for exactly that
// busiest load on every MIN size a preset uses, including paper 000's 512
// hosts of 8-port switches (not a power of k = 4; the previous digit
// choice, reading the leaf number from its low digits, loaded a link with
// 1.94x the link rate there), and that every down link carries the
// packets of exactly one destination: the reason the bound is reached.
// Before the d-mod-k rule, digit i at stage i gave 3.05 on 64 hosts and
// 3.77 on 256.
func TestMINUniformLinkLoad(t *testing.T) {
	for _, sz := range minSizes {
		nw := minNetwork(sz.hosts, sz.radix)
		t.Run(nw.name, func(t *testing.T) {
			tp, err := nw.build()
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(tp, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if err := r.CheckEscape(); err != nil {
				t.Fatalf("escape dependency graph: %v", err)
			}
			load, err := r.UniformLinkLoads()
			if err != nil {
				t.Fatal(err)
			}
			n, k := tp.NumHosts(), sz.radix/2
			want := float64(n-k) / float64(n-1)
			if tp.Stages == 1 {
				want = 0 // one switch: no switch-to-switch link
			}
			mx := 0.0
			for _, l := range load {
				mx = max(mx, l)
			}
			if mx < want-1e-9 || mx > want+1e-9 {
				t.Errorf("busiest link carries %.4f of the link rate, want exactly (N-k)/(N-1) = %.4f", mx, want)
			}
			for l, ds := range minDestinations(t, r) {
				pr, _ := tp.Peer(l.Switch, l.Port)
				if tp.Switches[pr.Switch].Stage < tp.Switches[l.Switch].Stage && len(ds) != 1 {
					t.Fatalf("down link %v carries %d destinations, want 1", l, len(ds))
				}
			}
			// Every switch-to-switch link is used (192 of 256 were before
			// the d-mod-k rule on 64 hosts: the top stage sent everything
			// down one port).
			used := 0
			for s := range tp.Switches {
				for _, p := range tp.Neighbors(s) {
					if load[topo.PortRef{Switch: s, Port: p}] > 0 {
						used++
					}
				}
			}
			if want := 2 * len(tp.Links); used != want {
				t.Errorf("%d of %d directed switch links carry traffic", used, want)
			}
		})
	}
}

// TestMINPathsMinimal: on every MIN size, each pair's escape path climbs
// to the lowest stage at which a common ancestor exists and descends
// (hops = 2 * that stage), the minimal up*/down* length.
func TestMINPathsMinimal(t *testing.T) {
	for _, sz := range minSizes {
		tp, err := topo.MIN(sz.hosts, sz.radix, 0)
		if err != nil {
			t.Fatal(err)
		}
		r, err := New(tp, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		// anc[st][leaf] = set of stage-st switches above leaf.
		m := sz.hosts / (sz.radix / 2)
		anc := make([][]map[int]bool, tp.Stages)
		for leaf := 0; leaf < m; leaf++ {
			cur := map[int]bool{leaf: true}
			for st := 0; st < tp.Stages; st++ {
				if anc[st] == nil {
					anc[st] = make([]map[int]bool, m)
				}
				anc[st][leaf] = cur
				next := map[int]bool{}
				for s := range cur {
					for _, p := range tp.MINUp(s) {
						pr, _ := tp.Peer(s, p)
						next[pr.Switch] = true
					}
				}
				cur = next
			}
		}
		var buf []Candidate
		for src := 0; src < sz.hosts; src++ {
			for dst := 0; dst < sz.hosts; dst++ {
				s, inPort := r.HostSwitch(src)
				dsw, _ := r.HostSwitch(dst)
				lca := 0
				for ; lca < tp.Stages; lca++ {
					common := false
					for a := range anc[lca][s] {
						common = common || anc[lca][dsw][a]
					}
					if common {
						break
					}
				}
				hops, inVL := 0, 0
				for ; s != dsw; hops++ {
					buf = r.Candidates(s, inPort, inVL, dst, buf)
					c := escapeOf(t, buf)
					pr, _ := tp.Peer(s, int(c.Port))
					s, inPort, inVL = pr.Switch, pr.Port, int(c.VL)
				}
				if hops != 2*lca {
					t.Fatalf("%d hosts, radix %d: host %d -> %d takes %d switch hops, want %d (common ancestor at stage %d)", sz.hosts, sz.radix, src, dst, hops, 2*lca, lca)
				}
			}
		}
	}
}
