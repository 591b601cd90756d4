package route

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/topo"
)

// network is one real topology the routing tests run on.
type network struct {
	name   string
	build  func() (*topo.Topology, error)
	escape string // escape function auto picks
}

func torusNet(hosts int, k ...int) network {
	return network{fmt.Sprintf("torus-%s", topo.CubeShape(k)), func() (*topo.Topology, error) { return topo.Torus(k, hosts, 0) }, "dor"}
}

func meshNet(hosts int, k ...int) network {
	return network{fmt.Sprintf("mesh-%s", topo.CubeShape(k)), func() (*topo.Topology, error) { return topo.Mesh(k, hosts, 0) }, "dor"}
}

func minNetwork(hosts, radix int) network {
	return network{fmt.Sprintf("min-%d-%d", hosts, radix), func() (*topo.Topology, error) { return topo.MIN(hosts, radix, 0) }, "min"}
}

func irregularNet(switches int, seed uint64) network {
	return network{fmt.Sprintf("irregular-%d-seed%d", switches, seed),
		func() (*topo.Topology, error) { return topo.Irregular(switches, 8, 4, seed) }, "updown"}
}

// networks covers every family the issue names: tori in 2 and 3
// dimensions with even, odd and k=2 rings, meshes, MINs (64 hosts of
// 8-port switches, 256 of 8-port and of 32-port) and irregular networks of
// 16 and 64 switches with several seeds (paper 004 §4.1).
func networks() []network {
	return []network{
		torusNet(1, 4, 4), torusNet(2, 5, 5), torusNet(1, 8, 8), torusNet(1, 3, 7),
		torusNet(1, 2, 2), torusNet(2, 2, 4), torusNet(1, 3, 3, 3), torusNet(1, 4, 4, 4), torusNet(1, 2, 2, 2),
		meshNet(1, 4, 4), meshNet(2, 3, 5), meshNet(1, 3, 3, 3),
		minNetwork(64, 8), minNetwork(256, 8), minNetwork(256, 32),
		irregularNet(16, 1), irregularNet(16, 2), irregularNet(16, 3),
		irregularNet(64, 1), irregularNet(64, 2), irregularNet(64, 7),
	}
}

// allDistances returns the switch-to-switch hop distances.
func allDistances(t *topo.Topology) [][]int {
	d := make([][]int, t.NumSwitches())
	for s := range d {
		d[s] = t.HopDistances(s)
	}
	return d
}

// hostOn returns one host of every switch that has hosts (dst switch ->
// host).
func hostOn(t *topo.Topology) map[int]int {
	m := map[int]int{}
	for h, host := range t.Hosts {
		if _, ok := m[host.At.Switch]; !ok {
			m[host.At.Switch] = h
		}
	}
	return m
}

func escapeOf(t *testing.T, cands []Candidate) Candidate {
	t.Helper()
	var esc []Candidate
	for _, c := range cands {
		if c.Escape {
			esc = append(esc, c)
		}
	}
	if len(esc) != 1 {
		t.Fatalf("want exactly one escape candidate, got %v", cands)
	}
	if !cands[len(cands)-1].Escape {
		t.Fatalf("the escape candidate must come last (after the adaptive ones): %v", cands)
	}
	return esc[0]
}

// TestEscapePathsReachEveryDestination follows the escape function alone
// from every switch (entering the escape sub-network afresh: from a host
// on host switches, from an adaptive lane elsewhere) to every destination
// switch. Every path must end at the destination's host port within the
// diameter of the legal-path space (dimension order and MIN escape paths
// are minimal; up*/down* paths are at most twice the tree depth, bounded
// here by the switch count), and the channel dependency check must pass
// with Check "full".
func TestEscapePathsReachEveryDestination(t *testing.T) {
	for _, nw := range networks() {
		t.Run(nw.name, func(t *testing.T) {
			tp, err := nw.build()
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Mode = Adaptive
			cfg.Check = "full"
			r, err := New(tp, cfg)
			if err != nil {
				t.Fatalf("route.New with the escape check: %v", err)
			}
			if !strings.Contains(r.CheckNote, "acyclic") {
				t.Errorf("check note %q does not say the escape graph is acyclic", r.CheckNote)
			}
			if !strings.HasPrefix(r.EscapeName(), map[string]string{"dor": "dimension order", "min": "min", "updown": "up*/down*"}[nw.escape]) {
				t.Errorf("escape %q, want the %s family's", r.EscapeName(), nw.escape)
			}
			dist := allDistances(tp)
			hosts := hostOn(tp)
			var buf []Candidate
			maxHops := tp.NumSwitches()
			for src := 0; src < tp.NumSwitches(); src++ {
				for dsw, dst := range hosts {
					s, inPort, inVL := src, -1, r.EscapeVLs() // adaptive lane: fresh entry
					if h, ok := hosts[src]; ok {
						_, inPort = r.HostSwitch(h)
						inVL = 0
					} else {
						inPort = tp.Neighbors(src)[0]
					}
					for hops := 0; ; hops++ {
						if hops > maxHops {
							t.Fatalf("escape path s%d -> s%d does not arrive within %d hops", src, dsw, maxHops)
						}
						buf = r.Candidates(s, inPort, inVL, dst, buf)
						c := escapeOf(t, buf)
						if s == dsw {
							if _, hp := r.HostSwitch(dst); int(c.Port) != hp {
								t.Fatalf("at the destination switch s%d the escape candidate is port %d, want host port %d", s, c.Port, hp)
							}
							if nw.escape != "updown" && hops != dist[src][dsw] {
								t.Errorf("%s escape path s%d -> s%d took %d hops, minimal is %d", nw.escape, src, dsw, hops, dist[src][dsw])
							}
							if hops < dist[src][dsw] {
								t.Fatalf("path shorter than the hop distance: impossible")
							}
							break
						}
						if !r.IsEscape(int(c.VL)) {
							t.Fatalf("escape candidate on lane %d, which is not an escape lane", c.VL)
						}
						pr, ok := tp.Peer(s, int(c.Port))
						if !ok {
							t.Fatalf("escape candidate s%d/p%d is not a switch link", s, c.Port)
						}
						s, inPort, inVL = pr.Switch, pr.Port, int(c.VL)
					}
				}
			}
		})
	}
}

// TestAdaptiveCandidatesAreMinimal: every adaptive candidate leads one hop
// closer to the destination, every adaptive lane is offered on each
// minimal port, and at least one adaptive candidate exists away from the
// destination switch (paper 004 §4.1: adaptive lanes may take any minimal
// output).
func TestAdaptiveCandidatesAreMinimal(t *testing.T) {
	for _, nw := range networks() {
		t.Run(nw.name, func(t *testing.T) {
			tp, err := nw.build()
			if err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Mode, cfg.AdaptiveVLs, cfg.Check = Adaptive, 2, "off"
			r, err := New(tp, cfg)
			if err != nil {
				t.Fatal(err)
			}
			dist := allDistances(tp)
			var buf []Candidate
			for s := 0; s < tp.NumSwitches(); s++ {
				inPort := tp.Neighbors(s)[0]
				for dsw, dst := range hosts(tp) {
					buf = r.Candidates(s, inPort, r.EscapeVLs(), dst, buf)
					if s == dsw {
						if len(buf) != 1 {
							t.Fatalf("at the destination switch: %d candidates, want the host port only", len(buf))
						}
						continue
					}
					perPort := map[int32]int{}
					for _, c := range buf[:len(buf)-1] {
						if c.Escape || r.IsEscape(int(c.VL)) {
							t.Fatalf("s%d -> s%d: adaptive candidate %+v on an escape lane", s, dsw, c)
						}
						pr, ok := tp.Peer(s, int(c.Port))
						if !ok {
							t.Fatalf("s%d -> s%d: adaptive candidate port %d is not a switch link", s, dsw, c.Port)
						}
						if dist[pr.Switch][dsw] != dist[s][dsw]-1 {
							t.Fatalf("s%d -> s%d (distance %d): adaptive candidate p%d leads to s%d at distance %d, not minimal",
								s, dsw, dist[s][dsw], c.Port, pr.Switch, dist[pr.Switch][dsw])
						}
						perPort[c.Port]++
					}
					if len(perPort) == 0 {
						t.Fatalf("s%d -> s%d: no adaptive candidate", s, dsw)
					}
					minimalPorts := 0
					for _, p := range tp.Neighbors(s) {
						pr, _ := tp.Peer(s, p)
						if dist[pr.Switch][dsw] == dist[s][dsw]-1 {
							minimalPorts++
						}
					}
					if len(perPort) != minimalPorts {
						t.Fatalf("s%d -> s%d: %d minimal ports offered, topology has %d", s, dsw, len(perPort), minimalPorts)
					}
					for p, n := range perPort {
						if n != 2 {
							t.Fatalf("s%d -> s%d: port %d offered on %d adaptive lanes, want 2", s, dsw, p, n)
						}
					}
				}
			}
		})
	}
}

// hosts is hostOn under a shorter name for loops.
func hosts(t *topo.Topology) map[int]int { return hostOn(t) }

// TestDeterministicSingleCandidate: deterministic mode offers exactly the
// escape candidate, everywhere and on injection, so one pair's packets
// follow one path and stay in order.
func TestDeterministicSingleCandidate(t *testing.T) {
	for _, nw := range networks() {
		t.Run(nw.name, func(t *testing.T) {
			tp, err := nw.build()
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(tp, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if r.Mode() != Deterministic || r.NumVLs() != r.EscapeVLs() {
				t.Fatalf("deterministic router has %d lanes, %d escape", r.NumVLs(), r.EscapeVLs())
			}
			if inj := r.InjectionCandidates(nil); len(inj) != 1 || !inj[0].Escape || inj[0].VL != 0 {
				t.Fatalf("injection candidates %v, want escape lane 0 only", inj)
			}
			// Follow every source host's path to every destination switch:
			// each state a packet can reach offers one candidate.
			var buf []Candidate
			hs := hosts(tp)
			for _, src := range hs {
				for dsw, dst := range hs {
					s, inPort := r.HostSwitch(src)
					inVL := 0
					for hops := 0; ; hops++ {
						buf = r.Candidates(s, inPort, inVL, dst, buf)
						if len(buf) != 1 || !buf[0].Escape {
							t.Fatalf("s%d in p%d vl%d -> host %d: candidates %v, want one escape candidate", s, inPort, inVL, dst, buf)
						}
						if s == dsw {
							break
						}
						if hops > tp.NumSwitches() {
							t.Fatalf("host %d -> host %d: no arrival", src, dst)
						}
						pr, _ := tp.Peer(s, int(buf[0].Port))
						s, inPort, inVL = pr.Switch, pr.Port, int(buf[0].VL)
					}
				}
			}
		})
	}
}

var channelRE = regexp.MustCompile(`s(\d+)/p(\d+)/vl(\d+)`)

// TestCyclicEscapeRefused: a torus without dateline lanes has a cyclic
// escape channel dependency graph (Dally and Seitz); route.New refuses it
// and names the cycle, channel by channel. The test checks the named
// cycle is real: it closes, every channel is a switch link, and each
// channel starts at the switch the previous one leads to.
func TestCyclicEscapeRefused(t *testing.T) {
	for _, k := range [][]int{{4, 4}, {5, 5}, {8, 8}, {4, 4, 4}, {4}, {6}} {
		t.Run(topo.CubeShape(k), func(t *testing.T) {
			tp, err := topo.Torus(k, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, check := range []string{"full", "auto"} {
				cfg := DefaultConfig()
				cfg.Dateline, cfg.Check = false, check
				_, err := New(tp, cfg)
				if err == nil {
					t.Fatalf("check %s: a torus without datelines was accepted", check)
				}
				msg := err.Error()
				if !regexp.MustCompile(`cycle: s\d+/p\d+/vl\d+( -> s\d+/p\d+/vl\d+)+$`).MatchString(msg) {
					t.Fatalf("error does not name a cycle of channels: %v", err)
				}
				if !strings.Contains(msg, "without datelines") {
					t.Errorf("error does not name the escape function: %v", err)
				}
				cyc := msg[strings.Index(msg, "cycle: ")+len("cycle: "):]
				names := strings.Split(cyc, " -> ")
				if names[0] != names[len(names)-1] || len(names) < 3 {
					t.Fatalf("cycle %q does not close", cyc)
				}
				for i := 0; i+1 < len(names); i++ {
					var s, p, vl, s2, p2, vl2 int
					if _, err := fmt.Sscanf(names[i], "s%d/p%d/vl%d", &s, &p, &vl); err != nil {
						t.Fatal(err)
					}
					if _, err := fmt.Sscanf(names[i+1], "s%d/p%d/vl%d", &s2, &p2, &vl2); err != nil {
						t.Fatal(err)
					}
					pr, ok := tp.Peer(s, p)
					if !ok {
						t.Fatalf("channel %s in the cycle is not a switch link", names[i])
					}
					if pr.Switch != s2 {
						t.Fatalf("channel %s leads to s%d, but the cycle continues with %s", names[i], pr.Switch, names[i+1])
					}
					if vl != 0 || vl2 != 0 {
						t.Fatalf("without datelines there is one escape lane, cycle names %s", cyc)
					}
				}
				if n := len(channelRE.FindAllString(cyc, -1)); n != len(names) {
					t.Fatalf("cycle %q: %d channel names parsed of %d", cyc, n, len(names))
				}
			}
			// With the check off the cyclic router is built (deadlock tests use it).
			cfg := DefaultConfig()
			cfg.Dateline, cfg.Check = false, "off"
			r, err := New(tp, cfg)
			if err != nil {
				t.Fatalf("check off: %v", err)
			}
			if !strings.Contains(r.CheckNote, "disabled") {
				t.Errorf("check note %q does not say the check was disabled", r.CheckNote)
			}
		})
	}
}

// TestDatelineNotNeeded: rings of 2 or 3 switches and meshes have no cycle
// even without dateline lanes (minimal routing crosses at most one link
// per ring of 2 or 3), so the check accepts them.
func TestDatelineNotNeeded(t *testing.T) {
	for _, nw := range []network{torusNet(1, 2, 2), torusNet(1, 2, 2, 2), torusNet(1, 3, 3, 3), meshNet(1, 4, 4)} {
		tp, err := nw.build()
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.Dateline, cfg.Check = false, "full"
		if _, err := New(tp, cfg); err != nil {
			t.Errorf("%s without datelines: %v", nw.name, err)
		}
	}
}

// roomTable is a route.State from a table: (port, vl) -> free; ok when
// free >= need.
type roomTable struct {
	free map[[2]int32]int
	need int
}

func (r roomTable) Room(port, vl int32) (bool, int) {
	f := r.free[[2]int32{port, vl}]
	return f >= r.need, f
}

func (r roomTable) Bubble(port, vl int32, packets int) bool {
	return r.free[[2]int32{port, vl}] >= packets*r.need
}

// TestSelect: the adaptive candidate that can take the packet and has the
// most room wins, ties to the earlier one; the escape candidate is used
// only when no adaptive one can take the packet; -1 when nothing can.
func TestSelect(t *testing.T) {
	cands := []Candidate{{Port: 4, VL: 2}, {Port: 5, VL: 2}, {Port: 6, VL: 2}, {Port: 4, VL: 1, Escape: true}}
	room := func(pairs ...int) map[[2]int32]int {
		m := map[[2]int32]int{}
		for i := 0; i < len(pairs); i += 3 {
			m[[2]int32{int32(pairs[i]), int32(pairs[i+1])}] = pairs[i+2]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		free map[[2]int32]int
		want int
	}{
		{"most room wins", room(4, 2, 10, 5, 2, 30, 6, 2, 20, 4, 1, 99), 1},
		{"tie goes to the earlier", room(4, 2, 30, 5, 2, 30, 6, 2, 30, 4, 1, 99), 0},
		{"too small is skipped even with more room than others", room(4, 2, 3, 5, 2, 5, 6, 2, 4, 4, 1, 99), 1},
		{"escape when no adaptive fits", room(4, 2, 1, 5, 2, 2, 6, 2, 3, 4, 1, 5), 3},
		{"escape with less room than adaptive ones that do not fit", room(4, 1, 4), 3},
		{"nothing fits", room(4, 2, 1, 4, 1, 2), -1},
	} {
		if got := Select(cands, roomTable{free: tc.free, need: 4}); got != tc.want {
			t.Errorf("%s: Select = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := Select(cands[3:], roomTable{free: room(4, 1, 4), need: 4}); got != 0 {
		t.Errorf("deterministic (escape only): Select = %d, want 0", got)
	}
	if got := Select(nil, roomTable{}); got != -1 {
		t.Errorf("no candidates: Select = %d, want -1", got)
	}
}

// TestSelectSameRing: with the same-ring selection of paper 002 §3 an
// adaptive lane in the dimension the packet arrived on wins over one in
// another profitable dimension even with less room; the other dimension
// is taken when the same ring has no room, and the escape lane only when
// no adaptive lane can take the packet. A packet from a host has no ring:
// most room decides. With the default selection every Pref is 0.
func TestSelectSameRing(t *testing.T) {
	tp, err := topo.Torus([]int{4, 4}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Escape, cfg.Mode, cfg.AdaptiveVLs, cfg.Selection = "bubble", Adaptive, 2, SameRing
	r, err := New(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hostAt := hostOn(tp)
	dst := hostAt[2+4*1] // (2,1) from (1,0): +X and +Y profitable
	xp, xm, yp := int32(tp.DimPorts[0][0]), int32(tp.DimPorts[0][1]), int32(tp.DimPorts[1][0])
	cands := r.Candidates(1, int(xm), 1, dst, nil) // arrived on the X ring
	for _, c := range cands {
		want := int8(0)
		if !c.Escape && c.Port == yp {
			want = 1
		}
		if c.Pref != want {
			t.Errorf("candidate %+v: Pref %d, want %d", c, c.Pref, want)
		}
	}
	room := func(x, y, esc int) roomTable {
		return roomTable{need: 16, free: map[[2]int32]int{{xp, 1}: x, {xp, 2}: x, {yp, 1}: y, {yp, 2}: y, {xp, 0}: esc}}
	}
	for _, tc := range []struct {
		name      string
		st        roomTable
		port      int32
		escape    bool
		wantFound bool
	}{
		{"same ring with less room", room(16, 128, 128), xp, false, true},
		{"other dimension when the ring is full", room(15, 32, 128), yp, false, true},
		{"escape last", room(0, 0, 32), xp, true, true},
		{"nothing", room(0, 0, 0), 0, false, false},
	} {
		i := Select(cands, tc.st)
		if !tc.wantFound {
			if i != -1 {
				t.Errorf("%s: Select = %+v, want none", tc.name, cands[i])
			}
			continue
		}
		if i < 0 || cands[i].Port != tc.port || cands[i].Escape != tc.escape {
			t.Errorf("%s: Select = %d (%v), want port %d escape %v", tc.name, i, cands, tc.port, tc.escape)
		}
	}
	_, hostPort := r.HostSwitch(hostAt[1])
	for _, c := range r.Candidates(1, hostPort, 1, dst, nil) {
		if c.Pref != 0 {
			t.Errorf("injected: candidate %+v ranked, want every Pref 0", c)
		}
	}
	cfg.Selection = ""
	r, err = New(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Candidates(1, int(xm), 1, dst, nil) {
		if c.Pref != 0 {
			t.Errorf("most-room: candidate %+v ranked, want every Pref 0", c)
		}
	}
}

// TestConfigValidate covers the refusals of Config.Validate and New.
func TestConfigValidate(t *testing.T) {
	tp, err := topo.Irregular(16, 8, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"mode", func(c *Config) { c.Mode = "fast" }, `routing mode "fast"`},
		{"escape", func(c *Config) { c.Escape = "xy" }, `escape routing "xy"`},
		{"adaptive lanes", func(c *Config) { c.Mode, c.AdaptiveVLs = Adaptive, 0 }, "adaptive_vls = 0"},
		{"too many lanes", func(c *Config) { c.AdaptiveVLs = 15 }, "adaptive_vls = 15"},
		{"check", func(c *Config) { c.Check = "some" }, `check "some"`},
		{"selection", func(c *Config) { c.Selection = "best" }, `selection "best"`},
		{"same-ring off a cube", func(c *Config) { c.Selection = SameRing }, "needs a torus or a mesh"},
		{"root", func(c *Config) { c.UpDownRoot = 16 }, "updown_root 16"},
		{"dor on irregular", func(c *Config) { c.Escape = "dor" }, "needs a torus or mesh"},
		{"min on irregular", func(c *Config) { c.Escape = "min" }, "needs a multistage network"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := New(tp, c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// TestMINDeterministicSpreadsDestinations: on a MIN, deterministic routing
// must spread the hosts of one destination switch over its down links, as
// destination-based (d-mod-k) routing of k-ary n-trees does; otherwise
// every packet for the k hosts of a leaf switch funnels through one link
// and uniform traffic saturates at 1/k of the link rate. The test follows
// the escape path from every host to every host and counts the distinct
// links into each destination switch.
func TestMINDeterministicSpreadsDestinations(t *testing.T) {
	for _, nw := range []network{minNetwork(64, 8), minNetwork(256, 32)} {
		t.Run(nw.name, func(t *testing.T) {
			tp, err := nw.build()
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(tp, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			into := map[int]map[topo.PortRef]bool{} // dst switch -> last links used
			var buf []Candidate
			for src := range tp.Hosts {
				for dst := range tp.Hosts {
					s, inPort := r.HostSwitch(src)
					dsw, _ := r.HostSwitch(dst)
					if s == dsw {
						continue
					}
					inVL := 0
					var last topo.PortRef
					for hops := 0; s != dsw; hops++ {
						if hops > tp.NumSwitches() {
							t.Fatalf("host %d -> host %d does not arrive", src, dst)
						}
						buf = r.Candidates(s, inPort, inVL, dst, buf)
						c := escapeOf(t, buf)
						last = topo.PortRef{Switch: s, Port: int(c.Port)}
						pr, _ := tp.Peer(s, int(c.Port))
						s, inPort, inVL = pr.Switch, pr.Port, int(c.VL)
					}
					if into[dsw] == nil {
						into[dsw] = map[topo.PortRef]bool{}
					}
					into[dsw][last] = true
				}
			}
			for dsw, links := range into {
				want := min(len(tp.Neighbors(dsw)), len(tp.HostsOn(dsw)))
				if len(links) < want {
					t.Fatalf("packets for the %d hosts of switch s%d arrive over %d of its %d links; want at least %d",
						len(tp.HostsOn(dsw)), dsw, len(links), len(tp.Neighbors(dsw)), want)
				}
			}
		})
	}
}
