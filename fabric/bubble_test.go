package fabric

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

func torus44(t *testing.T) *topo.Topology {
	t.Helper()
	tp, err := topo.Torus([]int{4, 4}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// TestBubbleSlots: under bubble flow control every packet takes a slot of
// the largest packet (282 bytes: 5 blocks of 64) in every buffer; without
// it a 64-byte packet takes one block.
func TestBubbleSlots(t *testing.T) {
	tp := torus44(t)
	for _, tc := range []struct {
		escape string
		want   int32
	}{{"bubble", 5}, {"dor", 1}} {
		rc := route.DefaultConfig()
		rc.Escape = tc.escape
		eng, f, ep := build(t, tp, DefaultConfig(), rc)
		p := ep.send(0, 10, 64, 0)
		if p.blocks != tc.want {
			t.Errorf("%s: a 64-byte packet takes %d blocks, want %d", tc.escape, p.blocks, tc.want)
		}
		eng.RunUntil(des.Millisecond)
		if len(ep.got) != 1 {
			t.Fatalf("%s: %d packets delivered, want 1", tc.escape, len(ep.got))
		}
		if iv := f.CheckInvariants(); !iv.OK() {
			t.Fatalf("%s: %v", tc.escape, iv.Violations)
		}
	}
}

// TestRoomerBubble works the bubble condition out on one cioq output lane
// of 8 KB (128 blocks) with 5-block packets: room for two packets needs 10
// free blocks; 9 is not enough.
func TestRoomerBubble(t *testing.T) {
	tp := torus44(t)
	rc := route.DefaultConfig()
	rc.Escape = "bubble"
	_, f, _ := build(t, tp, DefaultConfig(), rc)
	s := &f.sw[0]
	port := int32(tp.DimPorts[0][0])
	o := &f.out[s.out[port]]
	f.room.sw, f.room.blocks = s, 5
	for _, tc := range []struct {
		free, packets int32
		want          bool
	}{{9, 2, false}, {10, 2, true}, {128, 2, true}, {19, 4, false}, {20, 4, true}, {29, 6, false}, {30, 6, true}, {5, 1, true}} {
		o.lanes[0].used = o.lanes[0].cap - tc.free
		if got := f.room.Bubble(port, 0, int(tc.packets)); got != tc.want {
			t.Errorf("%d free blocks, bubble of %d packets: %v, want %v", tc.free, tc.packets, got, tc.want)
		}
	}
	o.lanes[0].used = 0
	f.room.taken = make([]bool, len(s.out))
	f.room.taken[port] = true
	if f.room.Bubble(port, 0, 2) {
		t.Error("an output already matched in the round has room")
	}
	f.room.taken = nil
}

// TestRestrictInjection: the restriction raises the bubble of the
// candidates of heads that came from the host's port, on the escape lane
// only (2-Esc) or on every lane (4-All), and leaves heads from other
// switches and the ejection port alone.
func TestRestrictInjection(t *testing.T) {
	tp := torus44(t)
	rc := route.DefaultConfig()
	rc.Mode, rc.AdaptiveVLs = route.Adaptive, 2
	cfg := DefaultConfig()
	cfg.EscapeVLBuffer = 8 * 320 // 8 packets of 5 blocks per escape lane
	cfg.InputBuffer, cfg.OutputBuffer = 2*8*320+2*8*320, 2*8*320+2*8*320
	_, f, _ := build(t, tp, cfg, rc)
	hs, hp := f.router.HostSwitch(0)
	s := &f.sw[hs]
	dst := 10
	xm := tp.DimPorts[0][1]
	for _, tc := range []struct {
		esc, ad       int
		wantE, wantA  int8
		transitE, trA int8
	}{{2, 1, 2, 0, 0, 0}, {2, 2, 2, 2, 0, 0}, {4, 4, 4, 4, 0, 0}, {6, 6, 6, 6, 0, 0}} {
		if err := f.RestrictInjection(tc.esc, tc.ad); err != nil {
			t.Fatal(err)
		}
		for _, from := range []struct {
			port         int
			wantE, wantA int8
		}{{hp, tc.wantE, tc.wantA}, {xm, tc.transitE, tc.trA}} {
			cands := f.router.Candidates(s.ID, from.port, 0, dst, nil)
			if !f.restrict {
				t.Fatal("restriction not active")
			}
			f.restrictInjection(s, from.port, cands)
			for _, c := range cands {
				want := from.wantA
				if c.Escape {
					want = from.wantE
				}
				if c.Bubble != want {
					t.Errorf("%d/%d from port %d: candidate %+v, want bubble %d", tc.esc, tc.ad, from.port, c, want)
				}
			}
		}
	}
	// The ejection port of a packet injected for a host of the same switch
	// is a sink: no bubble.
	tp2, err := topo.Torus([]int{4, 4}, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, f2, _ := build(t, tp2, cfg, rc)
	if err := f2.RestrictInjection(6, 6); err != nil {
		t.Fatal(err)
	}
	sw, p0 := f2.router.HostSwitch(0)
	cands := f2.router.Candidates(sw, p0, 0, 1, nil)
	f2.restrictInjection(&f2.sw[sw], p0, cands)
	if len(cands) != 1 || cands[0].Bubble != 0 {
		t.Errorf("ejection candidates %+v, want one without a bubble", cands)
	}
}

// TestBubbleLanesTooSmall: a lane that cannot hold the bubble is refused
// with the keys to change.
func TestBubbleLanesTooSmall(t *testing.T) {
	tp := torus44(t)
	rc := route.DefaultConfig()
	rc.Mode, rc.AdaptiveVLs, rc.Escape = route.Adaptive, 2, "bubble"
	r, err := route.New(tp, rc)
	if err != nil {
		t.Fatal(err)
	}
	// The default escape lane holds one packet.
	_, err = New(des.New(), DefaultConfig(), tp, r, 282, &testEP{})
	if err == nil || !strings.Contains(err.Error(), "escape_vl_buffer") || !strings.Contains(err.Error(), "two packets") {
		t.Fatalf("a one-packet escape lane under bubble: %v", err)
	}
	rc.Escape = "dor"
	_, f, _ := build(t, tp, DefaultConfig(), rc)
	if err := f.RestrictInjection(2, 1); err == nil || !strings.Contains(err.Error(), "lane 0") {
		t.Fatalf("2-Esc with one-packet escape lanes: %v", err)
	}
	if err := f.RestrictInjection(0, 1); err == nil {
		t.Fatal("a bubble of 0 packets was accepted")
	}
	if f.restrict {
		t.Fatal("a refused restriction is active")
	}
}

// TestLaneReport works one packet out by hand: from switch 0 to switch 1
// of a 4x4 torus (one hop in d0+) on the bubble escape lane. Its 282 bytes
// take 1128 ns on the 2 Gb/s data rate, on one of the 16 d0+ channels, in
// a window of 10 us: utilisation 1128/16/10000 on d0+ lane 0, none
// elsewhere. It sits in the transit queue for part of one 1 us sample.
func TestLaneReport(t *testing.T) {
	tp := torus44(t)
	rc := route.DefaultConfig()
	rc.Escape = "bubble"
	eng, f, ep := build(t, tp, DefaultConfig(), rc)
	f.MeasureLanes(0, des.Microsecond)
	ep.send(0, 1, 282, 0)
	eng.RunUntil(10 * des.Microsecond)
	r := f.LaneReport()
	if r == nil || len(r.Directions) != 4 || r.Directions[0] != "d0+" || len(r.Lanes) != 1 {
		t.Fatalf("report %+v", r)
	}
	want := 1128.0 / 16 / 10000
	for d := range r.Utilisation {
		u := r.Utilisation[d][0]
		if d == 0 && (u < want*0.999 || u > want*1.001) {
			t.Errorf("d0+ utilisation %g, want %g", u, want)
		}
		if d != 0 && u != 0 {
			t.Errorf("%s utilisation %g, want 0", r.Directions[d], u)
		}
	}
	if r.Occupancy[0][0] <= 0 || r.Occupancy[0][0] > 1.0/16 {
		t.Errorf("d0+ occupancy %g packets, want in (0, 1/16]", r.Occupancy[0][0])
	}
	if f.tt != nil {
		t.Error("lane measurement turned on transmission-time marking")
	}
}
