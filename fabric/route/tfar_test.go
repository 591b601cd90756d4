package route

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/topo"
)

func tfarConfig(vls int) Config {
	c := DefaultConfig()
	c.Mode, c.Escape, c.AdaptiveVLs = Adaptive, EscapeNone, vls
	return c
}

// TestTFARCandidates: TFAR offers every lane of every minimal output
// (paper 001 §4: "any virtual channel of those physical channels that
// forwards a message closer to its destination"), no escape candidate,
// and every lane at injection.
func TestTFARCandidates(t *testing.T) {
	for _, nw := range []network{torusNet(1, 4, 4), torusNet(1, 3, 3, 3), meshNet(2, 3, 5)} {
		tp, err := nw.build()
		if err != nil {
			t.Fatal(err)
		}
		r, err := New(tp, tfarConfig(3))
		if err != nil {
			t.Fatalf("%s: %v", nw.name, err)
		}
		if !r.RelyOnRecovery() || r.NumVLs() != 3 || r.EscapeVLs() != 0 {
			t.Fatalf("%s: relies on recovery %v, %d lanes, %d escape lanes; want true, 3, 0", nw.name, r.RelyOnRecovery(), r.NumVLs(), r.EscapeVLs())
		}
		inj := r.InjectionCandidates(nil)
		if len(inj) != 3 {
			t.Errorf("%s: %d injection candidates, want one per lane (3)", nw.name, len(inj))
		}
		d := allDistances(tp)
		var buf []Candidate
		for h, host := range tp.Hosts {
			dsw := host.At.Switch
			for s := 0; s < tp.NumSwitches(); s++ {
				buf = r.Candidates(s, -1, 0, h, buf[:0])
				if s == dsw {
					if len(buf) != 1 || int(buf[0].Port) != host.At.Port {
						t.Fatalf("%s: at the destination switch candidates %v, want the host's port %d", nw.name, buf, host.At.Port)
					}
					continue
				}
				ports := map[int32]int{}
				for _, c := range buf {
					if c.Escape {
						t.Fatalf("%s: TFAR offered an escape candidate %v", nw.name, c)
					}
					pr, ok := tp.Peer(s, int(c.Port))
					if !ok || d[pr.Switch][dsw] != d[s][dsw]-1 {
						t.Fatalf("%s: s%d -> host %d: port %d is not on a minimal path", nw.name, s, h, c.Port)
					}
					ports[c.Port]++
				}
				want := 0
				for _, p := range tp.Neighbors(s) {
					if pr, _ := tp.Peer(s, p); d[pr.Switch][dsw] == d[s][dsw]-1 {
						want++
					}
				}
				if len(ports) != want {
					t.Fatalf("%s: s%d -> host %d: %d minimal outputs offered, want %d", nw.name, s, h, len(ports), want)
				}
				for p, n := range ports {
					if n != 3 {
						t.Fatalf("%s: port %d offered on %d lanes, want all 3", nw.name, p, n)
					}
				}
			}
		}
	}
}

// TestTFAREscapeVerdict: the escape check does not fail on TFAR and does
// not claim deadlock freedom: it says the dependency graph is cyclic (on
// a torus ring and on a mesh's turns), names a cycle, and that the
// function relies on deadlock recovery. On a line of switches (no cycle
// possible with minimal paths) it says acyclic, still naming recovery.
func TestTFAREscapeVerdict(t *testing.T) {
	for _, nw := range []network{torusNet(1, 4, 4), meshNet(1, 3, 3), torusNet(1, 8, 8, 8)} {
		tp, err := nw.build()
		if err != nil {
			t.Fatal(err)
		}
		r, err := New(tp, tfarConfig(3))
		if err != nil {
			t.Fatalf("%s: %v", nw.name, err)
		}
		if !strings.Contains(r.CheckNote, "cyclic (s") || !strings.Contains(r.CheckNote, "relies on deadlock detection and recovery") {
			t.Errorf("%s: check note %q: want a named cycle and reliance on recovery", nw.name, r.CheckNote)
		}
		if err := r.CheckEscape(); err != nil {
			t.Errorf("%s: CheckEscape on TFAR: %v", nw.name, err)
		}
	}
	line, err := topo.Mesh([]int{4}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(line, tfarConfig(2))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.CheckNote, "acyclic on this topology") || !strings.Contains(r.CheckNote, "relies on deadlock detection and recovery") {
		t.Errorf("line of 4: check note %q", r.CheckNote)
	}
}

// TestTFARNeedsAdaptive: deterministic routing with no escape function
// is refused, naming the keys.
func TestTFARNeedsAdaptive(t *testing.T) {
	c := tfarConfig(3)
	c.Mode = Deterministic
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "routing.mode adaptive") || !strings.Contains(err.Error(), "routing.escape none") {
		t.Fatalf("deterministic TFAR: %v", err)
	}
	c = tfarConfig(0)
	if err := c.Validate(); err == nil {
		t.Fatal("TFAR with 0 lanes accepted")
	}
}
