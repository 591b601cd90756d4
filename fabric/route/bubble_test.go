package route

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/topo"
)

// TestBubbleRingAccepted: a torus with one escape lane and no dateline is
// refused by the dependency check under plain dimension order (the rings
// are cycles) and accepted under bubble flow control, whose rings the
// check contracts to one node each (paper 002 §3). The note counts the
// rings: two directions of every line of every dimension.
func TestBubbleRingAccepted(t *testing.T) {
	for _, tc := range []struct {
		k     []int
		rings int
	}{{[]int{4, 4}, 2 * 2 * 4}, {[]int{5, 5}, 2 * 2 * 5}, {[]int{8, 8}, 2 * 2 * 8}, {[]int{4, 4, 4}, 3 * 2 * 16}, {[]int{6}, 2}, {[]int{16, 16}, 2 * 2 * 16}} {
		t.Run(topo.CubeShape(tc.k), func(t *testing.T) {
			tp, err := topo.Torus(tc.k, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, mode := range []Mode{Deterministic, Adaptive} {
				cfg := DefaultConfig()
				cfg.Mode, cfg.Check = mode, "full"
				cfg.Dateline = false
				if _, err := New(tp, cfg); err == nil || !strings.Contains(err.Error(), "not deadlock-free") {
					t.Fatalf("%s: dor without dateline accepted or wrong error: %v", mode, err)
				}
				cfg.Escape = "bubble"
				r, err := New(tp, cfg)
				if err != nil {
					t.Fatalf("%s: bubble refused: %v", mode, err)
				}
				if r.EscapeVLs() != 1 || r.Bubble() != 2 {
					t.Fatalf("bubble: %d escape lanes, bubble %d; want 1 and 2", r.EscapeVLs(), r.Bubble())
				}
				if want := "(" + strconv.Itoa(tc.rings) + " rings"; !strings.Contains(r.CheckNote, want) {
					t.Errorf("check note %q does not say %s", r.CheckNote, want)
				}
			}
		})
	}
	mesh, err := topo.Mesh([]int{4, 4}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Escape = "bubble"
	if _, err := New(mesh, cfg); err == nil || !strings.Contains(err.Error(), "needs a torus") {
		t.Errorf("bubble on a mesh: %v, want a refusal", err)
	}
}

// TestBubbleRingEntries works the entries out by hand on a 4x4 torus,
// switch s = x + 4y, DimPorts[d] = {+, -}. A packet from switch 0 (0,0)
// to switch 6 (2,1) goes X+ first, then Y+. It needs the bubble (two
// packets) when injected, when it falls from an adaptive lane to the
// escape lane, and when it turns from the X ring to the Y ring; moving on
// within the X ring it needs room for itself only.
func TestBubbleRingEntries(t *testing.T) {
	tp, err := topo.Torus([]int{4, 4}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Escape, cfg.Mode, cfg.AdaptiveVLs = "bubble", Adaptive, 2
	r, err := New(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hostAt := hostOn(tp)
	dst := hostAt[6]
	xp, xm := tp.DimPorts[0][0], tp.DimPorts[0][1]
	yp := tp.DimPorts[1][0]
	_, hostPort := r.HostSwitch(hostAt[0])
	for _, tc := range []struct {
		name         string
		s, inPort    int
		inVL         int
		port, bubble int
	}{
		{"injected at (0,0)", 0, hostPort, 0, xp, 2},
		{"injected on an adaptive lane of the host link", 0, hostPort, 2, xp, 2},
		{"X ring transit at (1,0)", 1, xm, 0, xp, 0},
		{"adaptive lane to escape at (1,0)", 1, xm, 1, xp, 2},
		{"turn from the X ring to the Y ring at (2,0)", 2, xm, 0, yp, 2},
	} {
		cands := r.Candidates(tc.s, tc.inPort, tc.inVL, dst, nil)
		esc := escapeOf(t, cands)
		if int(esc.Port) != tc.port || esc.VL != 0 || int(esc.Bubble) != tc.bubble {
			t.Errorf("%s: escape candidate %+v, want port %d lane 0 bubble %d", tc.name, esc, tc.port, tc.bubble)
		}
		for _, c := range cands {
			if !c.Escape && c.Bubble != 0 {
				t.Errorf("%s: adaptive candidate %+v has a bubble", tc.name, c)
			}
		}
	}
	// At the destination the host port is a sink: no bubble.
	if c := r.Candidates(6, tp.DimPorts[1][1], 0, dst, nil); len(c) != 1 || c[0].Bubble != 0 {
		t.Errorf("ejection candidates %+v, want one without a bubble", c)
	}
	// Dateline routing marks nothing.
	cfg.Escape = "dor"
	rd, err := New(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rd.Candidates(0, hostPort, 0, dst, nil) {
		if c.Bubble != 0 {
			t.Errorf("dor candidate %+v has a bubble", c)
		}
	}
}

// TestSelectBubble: a candidate with a bubble of n is taken only when its
// output has room for n packets (need = 4 blocks per packet here).
func TestSelectBubble(t *testing.T) {
	room := func(pairs ...int) map[[2]int32]int {
		m := map[[2]int32]int{}
		for i := 0; i < len(pairs); i += 3 {
			m[[2]int32{int32(pairs[i]), int32(pairs[i+1])}] = pairs[i+2]
		}
		return m
	}
	esc := []Candidate{{Port: 4, VL: 0, Escape: true, Bubble: 2}}
	for _, tc := range []struct {
		name  string
		cands []Candidate
		free  map[[2]int32]int
		want  int
	}{
		{"entry with room for one packet is refused", esc, room(4, 0, 4), -1},
		{"entry with room for 1.75 packets is refused", esc, room(4, 0, 7), -1},
		{"entry with room for two packets is taken", esc, room(4, 0, 8), 0},
		{"transit needs one packet", []Candidate{{Port: 4, VL: 0, Escape: true}}, room(4, 0, 4), 0},
		{"4-All: adaptive with 3 packets skipped for escape with 4",
			[]Candidate{{Port: 5, VL: 1, Bubble: 4}, {Port: 4, VL: 0, Escape: true, Bubble: 4}}, room(5, 1, 12, 4, 0, 16), 1},
		{"4-All: adaptive with 4 packets taken",
			[]Candidate{{Port: 5, VL: 1, Bubble: 4}, {Port: 4, VL: 0, Escape: true, Bubble: 4}}, room(5, 1, 16, 4, 0, 16), 0},
		{"4-All: the bubble outranks more room",
			[]Candidate{{Port: 5, VL: 1, Bubble: 4}, {Port: 6, VL: 1, Bubble: 4}, {Port: 4, VL: 0, Escape: true, Bubble: 4}}, room(5, 1, 15, 6, 1, 16, 4, 0, 99), 1},
		{"6-All: nothing has room for six", []Candidate{{Port: 5, VL: 1, Bubble: 6}, {Port: 4, VL: 0, Escape: true, Bubble: 6}}, room(5, 1, 20, 4, 0, 23), -1},
	} {
		if got := Select(tc.cands, roomTable{free: tc.free, need: 4}); got != tc.want {
			t.Errorf("%s: Select = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// crossedCube routes dimension 0 first for even destinations and
// dimension 1 first for odd ones: X rings feed Y rings and Y rings feed X
// rings, a cycle between rings that bubble flow control does not break.
type crossedCube struct{ *bubbleCube }

func (c crossedCube) next(s, inPort, inVL int, inEscape bool, dst, dstHost int) (int, int) {
	order := []int{0, 1}
	if dst%2 == 1 {
		order = []int{1, 0}
	}
	for _, d := range order {
		if dir, _ := c.dir(s, dst, d); dir != 0 {
			return c.portFor(d, dir), 0
		}
	}
	panic("at destination")
}

// TestBubbleCycleBetweenRingsRefused: the check still refuses a cycle
// between bubble-protected rings, naming the rings.
func TestBubbleCycleBetweenRingsRefused(t *testing.T) {
	tp, err := topo.Torus([]int{4, 4}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Escape = "bubble"
	r, err := New(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bc := r.esc.(*bubbleCube)
	r.esc, r.rings = crossedCube{bc}, crossedCube{bc}
	err = r.CheckEscape()
	if err == nil || !strings.Contains(err.Error(), "cycle: ring d") {
		t.Fatalf("a cycle between rings was not refused by name: %v", err)
	}
	if !strings.Contains(err.Error(), "d0") || !strings.Contains(err.Error(), "d1") {
		t.Errorf("the cycle should run through rings of both dimensions: %v", err)
	}
}
