package injection

import (
	"strings"
	"testing"
)

// fakeView is a hand-set View: one cycle is 1000 ps (a 16-byte flit at 128
// bits/ns), a 256-byte packet takes 16 cycles.
type fakeView struct {
	now       int64
	useful    []int
	marked    map[int]int64
	full      int
	total     int
	delivered uint64
}

func (v *fakeView) Now() int64                { return v.now }
func (v *fakeView) Serialization(b int) int64 { return int64(b) * 1000 / 16 }
func (v *fakeView) Lanes() int                { return 3 }
func (v *fakeView) InjectionCredits(int) int  { return 100 }
func (v *fakeView) LocalFreeBlocks(int) int   { return 100 }
func (v *fakeView) UsefulChannels(_ int, buf []int) []int {
	return append(buf[:0], v.useful...)
}
func (v *fakeView) ChannelRatio(int) (float64, int64, bool) { return 0, 0, false }
func (v *fakeView) ChannelMarked(ch int) (int64, bool) {
	at, ok := v.marked[ch]
	return at, ok
}
func (v *fakeView) GlobalFullBuffers() (int, int) { return v.full, v.total }
func (v *fakeView) GlobalDelivered() uint64       { return v.delivered }

const cyc = 1000 // ps per cycle in fakeView

func transTGate(t *testing.T) (Gate, Control) {
	t.Helper()
	c := DefaultControlConfig()
	c.Policy, c.U1 = TransT, 4
	ctl, err := NewControl(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := ctl.Measure(nil); got != 4 {
		t.Fatalf("Measure = %g, want u1 = 4", got)
	}
	return ctl.Gate(0), ctl
}

// TestTransTOpen: with no channel marked, every packet goes and all four
// injection channels stay open (§3: "the mechanism does not introduce any
// penalty for low and medium network loads").
func TestTransTOpen(t *testing.T) {
	g, _ := transTGate(t)
	v := &fakeView{useful: []int{1, 2, 3}}
	for i := 0; i < 5; i++ {
		if ok, _ := g.Admit(7, 256, v); !ok {
			t.Fatalf("packet %d refused with no congestion", i)
		}
		g.Injected(256, v.now, v)
		v.now += 16 * cyc
	}
	if g.Open() != 4 {
		t.Errorf("Open = %d, want 4", g.Open())
	}
}

// TestTransTSoft: some useful channels marked within u2 halve the open
// channels for u3; the NIC then injects at half its rate (§3 footnote 2).
func TestTransTSoft(t *testing.T) {
	g, _ := transTGate(t)
	v := &fakeView{useful: []int{1, 2}, marked: map[int]int64{1: 0}}
	v.now = 7 * cyc // marked 7 cycles ago: within u2 = 8
	if ok, _ := g.Admit(7, 256, v); !ok {
		t.Fatal("soft congestion must not close injection")
	}
	if g.Open() != 2 {
		t.Fatalf("Open = %d, want 2 (halved from 4)", g.Open())
	}
	g.Injected(256, v.now, v)
	// A 256-byte packet takes 16 cycles; with 2 of 4 channels the next
	// may start 32 cycles after.
	v.now += 16 * cyc
	ok, retry := g.Admit(7, 256, v)
	if ok || retry != 7*cyc+32*cyc {
		t.Fatalf("Admit at +16 cycles = %v, retry %d; want refused until %d", ok, retry, 7*cyc+32*cyc)
	}
	v.now = 7*cyc + 32*cyc
	if ok, _ := g.Admit(7, 256, v); !ok {
		t.Fatal("refused at the halved rate's next slot")
	}
}

// TestTransTMarkExpires: a mark older than u2 is not congestion.
func TestTransTMarkExpires(t *testing.T) {
	g, _ := transTGate(t)
	v := &fakeView{useful: []int{1, 2}, marked: map[int]int64{1: 0, 2: 0}}
	v.now = 8 * cyc // exactly u2 later: no longer congested
	if ok, _ := g.Admit(7, 256, v); !ok || g.Open() != 4 {
		t.Fatalf("mark u2 old: ok %v open %d, want injection with 4 open", ok, g.Open())
	}
}

// TestTransTSeriousAndStarvation walks Fig. 2's serious-congestion path:
// all useful channels congested close injection for u3; then one channel
// opens for u4 whatever the network's state (the starvation guarantee);
// then the channels are looked at again.
func TestTransTSeriousAndStarvation(t *testing.T) {
	g, _ := transTGate(t)
	v := &fakeView{useful: []int{1, 2, 3}, marked: map[int]int64{1: 0, 2: 0, 3: 0}}
	ok, retry := g.Admit(7, 256, v)
	if ok || g.Open() != 0 || retry != 16*cyc {
		t.Fatalf("all congested: ok %v open %d retry %d, want closed until u3 = %d", ok, g.Open(), retry, 16*cyc)
	}
	// Still closed just before u3, even if congestion has gone.
	v.now = 16*cyc - 1
	v.marked = nil
	if ok, _ := g.Admit(7, 256, v); ok {
		t.Fatal("injection reopened before u3")
	}
	// After u3, one channel for u4 although every channel is congested
	// again.
	v.now = 16 * cyc
	v.marked = map[int]int64{1: v.now, 2: v.now, 3: v.now}
	if ok, _ := g.Admit(7, 256, v); !ok || g.Open() != 1 {
		t.Fatalf("after u3: ok %v open %d, want one channel (starvation guarantee)", ok, g.Open())
	}
	g.Injected(256, v.now, v)
	// During u4 the rate is one channel's: the next packet waits 4x16
	// cycles, past u4; when it is asked again after u4 the channels are
	// looked at: all still congested, so closed again for u3.
	v.now = 16*cyc + 8*cyc
	v.marked = map[int]int64{1: v.now - 1, 2: v.now - 2, 3: v.now - 3}
	if ok, _ := g.Admit(7, 256, v); ok || g.Open() != 0 {
		t.Fatalf("after u4 with all congested: ok %v open %d, want closed again", ok, g.Open())
	}
	// Congestion gone: after this u3 and its u4, channels reopen one per
	// look, at least u4 apart.
	v.marked = nil
	v.now += 16 * cyc
	g.Admit(7, 256, v) // starvation channel
	v.now += 8 * cyc
	for want := 2; want <= 4; want++ {
		g.Admit(7, 256, v)
		if g.Open() != want {
			t.Fatalf("reopening: Open = %d, want %d", g.Open(), want)
		}
		v.now += 8 * cyc
	}
	g.Admit(7, 256, v)
	if g.Open() != 4 {
		t.Fatalf("Open = %d past 4", g.Open())
	}
}

// TestTransTSoftHalvesAgain: persistent soft congestion halves again
// after u3 (4 -> 2 -> 1) but never closes.
func TestTransTSoftHalvesAgain(t *testing.T) {
	g, _ := transTGate(t)
	v := &fakeView{useful: []int{1, 2}}
	for i, want := range []int{2, 1, 1} {
		v.marked = map[int]int64{1: v.now}
		if ok, _ := g.Admit(7, 256, v); !ok && want > 0 && i == 0 {
			t.Fatal("soft congestion closed injection")
		}
		if g.Open() != want {
			t.Fatalf("look %d: Open = %d, want %d", i, g.Open(), want)
		}
		v.now += 16 * cyc
	}
}

// TestSelfTunedThrottle: every NIC stops while the global full buffers
// exceed the threshold, and all NICs share the decision.
func TestSelfTunedThrottle(t *testing.T) {
	c := DefaultControlConfig()
	c.Policy, c.Threshold = SelfTuned, 0.25
	ctl, err := NewControl(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ctl.Measure(nil) != 0 {
		t.Error("Self-Tuned needs no transmission-time marking")
	}
	g0, g1 := ctl.Gate(0), ctl.Gate(1)
	v := &fakeView{full: 20, total: 100}
	if ok, _ := g0.Admit(1, 256, v); !ok {
		t.Fatal("throttled below the threshold")
	}
	v.full = 30 // above, but the next gather is 32 cycles away
	if ok, _ := g1.Admit(0, 256, v); !ok {
		t.Fatal("decision changed before the gather period")
	}
	v.now = 32 * cyc
	ok, retry := g1.Admit(0, 256, v)
	if ok || retry != 64*cyc {
		t.Fatalf("above threshold: ok %v retry %d, want throttled until the next gather %d", ok, retry, 64*cyc)
	}
	if ok, _ := g0.Admit(1, 256, v); ok || g0.Open() != 0 {
		t.Fatal("the throttle must hold for every NIC (global decision)")
	}
}

// TestSelfTunedTuning: the threshold rises by 1% of the buffers after a
// throttled period whose throughput did not fall, and falls by 4% after a
// drop of more than a quarter.
func TestSelfTunedTuning(t *testing.T) {
	c := DefaultControlConfig()
	c.Policy, c.Threshold = SelfTuned, 0.25
	ctl, _ := NewControl(c, 1)
	st := ctl.(*selfTunedControl)
	g := ctl.Gate(0)
	v := &fakeView{full: 30, total: 100}
	g.Admit(0, 256, v) // gather: throttled
	v.now, v.delivered = 192*cyc, 1000
	g.Admit(0, 256, v)
	if d := st.Threshold() - 0.26; d > 1e-9 || d < -1e-9 {
		t.Fatalf("threshold %g, want 0.26 after a throttled period", st.Threshold())
	}
	v.now, v.delivered = 384*cyc, 1500 // 500 < 3/4 of 1000
	g.Admit(0, 256, v)
	if d := st.Threshold() - 0.22; d > 1e-9 || d < -1e-9 {
		t.Fatalf("threshold %g, want 0.22 after a throughput drop", st.Threshold())
	}
}

func TestControlConfig(t *testing.T) {
	if ctl, err := NewControl(DefaultControlConfig(), 4); err != nil || ctl != nil {
		t.Fatalf("No-Lim must make no gate: %v, %v", ctl, err)
	}
	if !DefaultControlConfig().IsZero() {
		t.Error("No-Lim is the zero configuration")
	}
	for _, s := range []string{"trans-t", "Self-Tuned", "no-lim"} {
		if !IsControlKind(s) {
			t.Errorf("%s must be a control kind", s)
		}
	}
	for _, k := range Kinds() {
		if IsControlKind(string(k)) {
			t.Errorf("delivery policy %s must not also name a gate (the --injection shorthand relies on it)", k)
		}
	}
	bad := []struct {
		mod  func(*ControlConfig)
		want string
	}{
		{func(c *ControlConfig) { c.Policy = "bubble:8-all" }, `policy "bubble:8-all"`},
		{func(c *ControlConfig) { c.Policy = "leaky" }, `policy "leaky"`},
		{func(c *ControlConfig) { c.U1 = -1 }, "u1"},
		{func(c *ControlConfig) { c.U3 = 0 }, "u2/u3/u4"},
		{func(c *ControlConfig) { c.Channels = 0 }, "channels"},
		{func(c *ControlConfig) { c.Threshold = 2 }, "threshold"},
	}
	for _, b := range bad {
		c := DefaultControlConfig()
		b.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("err %v, want %q", err, b.want)
		}
	}
}

// TestDefaultU1 is paper 001 Table 1, and the fallback outside it.
func TestDefaultU1(t *testing.T) {
	cases := []struct {
		k     []int
		lanes int
		u1    float64
		in    bool
	}{
		{[]int{8, 8, 8}, 3, 4, true}, {[]int{8, 8, 8}, 4, 5, true},
		{[]int{16, 16}, 3, 2.5, true}, {[]int{16, 16}, 4, 3.75, true},
		{[]int{16, 16, 16}, 3, 2.25, true}, {[]int{32, 32}, 4, 3.25, true},
		{[]int{8, 8}, 3, 3, false}, {nil, 5, 5, false},
	}
	for _, c := range cases {
		u1, in := DefaultU1(c.k, c.lanes)
		if u1 != c.u1 || in != c.in {
			t.Errorf("DefaultU1(%v, %d) = %g, %v; want %g, %v", c.k, c.lanes, u1, in, c.u1, c.in)
		}
	}
}

func FuzzParseControlKind(f *testing.F) {
	for _, s := range []string{"trans-t", "No-Lim", "self-tuned", "", "li", "bubble:4-all"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseControlKind(s)
		if err != nil {
			if !strings.Contains(err.Error(), "injection control") {
				t.Fatalf("error does not say what was wrong: %v", err)
			}
			return
		}
		if err := (ControlConfig{Policy: k, U2: 1, U3: 1, U4: 1, Channels: 1, FlitBytes: 1, GatherPeriod: 1, TunePeriod: 1, Threshold: 1}).Validate(); err != nil {
			t.Fatalf("ParseControlKind(%q) = %q, which does not validate: %v", s, k, err)
		}
	})
}

// TestTransTPorts: with the channels as the NIC's four injection ports
// (PortGate), soft congestion closes ports 2 and 3 for u3 while ports 0
// and 1 start packets back to back at the link's full rate (no pacing);
// serious congestion closes all four for u3, then port 0 alone opens for
// u4; with no congestion the ports reopen one per look, each u4 apart.
func TestTransTPorts(t *testing.T) {
	g, _ := transTGate(t)
	pg, ok := g.(PortGate)
	if !ok {
		t.Fatal("Trans-t's gate is not a PortGate")
	}
	pg.UsePorts(4)
	v := &fakeView{useful: []int{1, 2}, marked: map[int]int64{1: 0}}
	v.now = 7 * cyc
	for q, want := range []bool{true, true, false, false} {
		ok, retry := pg.AdmitPort(q, 7, 256, v)
		if ok != want {
			t.Fatalf("soft congestion, port %d: admitted %v, want %v", q, ok, want)
		}
		if !ok && retry != 7*cyc+16*cyc {
			t.Errorf("port %d: retry %d, want the end of u3 %d", q, retry, 7*cyc+16*cyc)
		}
	}
	pg.Injected(256, v.now, v)
	if ok, _ := pg.AdmitPort(0, 7, 256, v); !ok {
		t.Error("port 0 paced after a packet started: ports are not rate-limited")
	}
	// Serious congestion after u3: every port closed for u3.
	v.now = 7*cyc + 16*cyc
	v.marked = map[int]int64{1: v.now, 2: v.now}
	for q := range 4 {
		if ok, _ := pg.AdmitPort(q, 7, 256, v); ok {
			t.Fatalf("serious congestion: port %d admitted", q)
		}
	}
	// After u3 port 0 opens for u4 (starvation guarantee), the others not.
	v.now += 16 * cyc
	for q, want := range []bool{true, false, false, false} {
		if ok, _ := pg.AdmitPort(q, 7, 256, v); ok != want {
			t.Fatalf("starvation interval, port %d: admitted %v, want %v", q, ok, want)
		}
	}
	// Congestion gone: one more port per look, u4 apart.
	v.marked = nil
	for open := 2; open <= 4; open++ {
		v.now += 8 * cyc
		pg.AdmitPort(0, 7, 256, v)
		if g.Open() != open {
			t.Fatalf("reopening: %d ports open, want %d", g.Open(), open)
		}
		if ok, _ := pg.AdmitPort(open-1, 7, 256, v); !ok {
			t.Fatalf("port %d refused once %d are open", open-1, open)
		}
	}
}
