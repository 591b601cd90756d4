package traffic

import (
	"math"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/internal/units"
)

// recnLink is paper 000 §4.1's 8 Gb/s link; 64-byte packets (no overhead
// counted here, so one packet takes exactly 64 ns).
var recnLink = Link{Rate: 8 * units.Gbps}

func runAll(t *testing.T, cfg Config, until int64) [][]Packet {
	t.Helper()
	n := cfg.Pattern.Hosts()
	out := make([][]Packet, n)
	for h := range n {
		g, err := NewGenerator(cfg, h)
		if err != nil {
			t.Fatal(err)
		}
		for {
			p, ok := g.Next()
			if !ok || p.Time >= until {
				break
			}
			out[h] = append(out[h], p)
		}
	}
	return out
}

// Paper 000 Table 1 on 64 hosts: 48 random sources at 50 % (case 1) or
// 100 % (case 2) from time 0; 16 sources to host 32 at 100 % in
// [800 µs, 970 µs) and silent otherwise.
func TestCornerCasesTable1(t *testing.T) {
	size, _ := FixedSize(64)
	const until = 1200 * units.Microsecond
	for _, tc := range []struct {
		spec       string
		randomLoad float64
		hot        func(int) bool
	}{
		{"corner1", 0.5, func(h int) bool { return h >= 48 }},
		{"corner2", 1.0, func(h int) bool { return h >= 48 }},
		{"corner1,sources=stride", 0.5, func(h int) bool { return h%4 == 3 }},
	} {
		pat := mustPattern(t, tc.spec, 64)
		cfg := Config{Pattern: pat, Process: Bernoulli, Load: 0.123 /* ignored */, Sizes: size, Link: recnLink, Seed: 9}
		all := runAll(t, cfg, until)
		hotSources, randomPkts := 0, 0
		for h, pkts := range all {
			if tc.hot(h) {
				hotSources++
				// Load 1 on a 64 ns slot grid: slots 12500 .. 15156.
				if len(pkts) != 2657 {
					t.Errorf("%s: hot source %d created %d packets, want 2657", tc.spec, h, len(pkts))
				}
				for _, p := range pkts {
					if p.Dst != 32 || p.Time < 800*units.Microsecond || p.Time >= 970*units.Microsecond {
						t.Fatalf("%s: hot source %d: %+v outside Table 1", tc.spec, h, p)
					}
				}
				continue
			}
			for _, p := range pkts {
				if p.Dst == h {
					t.Fatalf("%s: host %d sent to itself", tc.spec, h)
				}
			}
			randomPkts += len(pkts)
		}
		if hotSources != 16 {
			t.Errorf("%s: %d hot sources, want 16", tc.spec, hotSources)
		}
		// 48 sources × 18750 slots × load: sigma of the count is about
		// 0.1 %, tolerance 2 %.
		want := 48 * 18750 * tc.randomLoad
		if math.Abs(float64(randomPkts)-want)/want > 0.02 {
			t.Errorf("%s: random sources created %d packets, want %.0f ± 2%%", tc.spec, randomPkts, want)
		}
	}
	// Scaled times and another hot node.
	pat := mustPattern(t, "corner2:0.1@0", 256)
	if s, e := pat.(*corner).HotWindow(); s != 80*units.Microsecond || e != 97*units.Microsecond {
		t.Errorf("scale 0.1: window %d..%d", s, e)
	}
	if n := len(pat.(Scheduled).Schedule(200).List); n != 2 {
		t.Errorf("256 hosts: host 200 should be hot (last 64), schedule %v", pat.(Scheduled).Schedule(200))
	}
	// Scheduled patterns refuse extra phases.
	ph, _ := ParsePhases("1:1us")
	if _, err := NewGenerator(Config{Pattern: pat, Sizes: size, Link: recnLink, Phases: ph}, 0); err == nil || !strings.Contains(err.Error(), "Table 1") {
		t.Errorf("corner with phases: %v", err)
	}
}

// Same seed, same packets; another seed, other packets; and the size
// stream is separate: changing the size mix leaves times and destinations
// alone.
func TestGeneratorDeterminism(t *testing.T) {
	pat := mustPattern(t, "hotspot:0.3@7", 32)
	fixed, _ := FixedSize(512)
	mix, _ := ParseSizes("512:0.5,513:0.5") // same mean wire time to 1 byte
	link := Link{Rate: 10 * units.Gbps, Overhead: 30}
	base := Config{Pattern: pat, Process: Exponential, Load: 0.7, Sizes: fixed, Link: link, Seed: 42}
	gen := func(cfg Config, host, n int) []Packet {
		g, err := NewGenerator(cfg, host)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]Packet, n)
		for i := range out {
			out[i], _ = g.Next()
		}
		return out
	}
	a, b := gen(base, 5, 1000), gen(base, 5, 1000)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed differs at %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	other := base
	other.Seed = 43
	c := gen(other, 5, 1000)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same > 10 {
		t.Errorf("seeds 42 and 43 share %d of 1000 packets", same)
	}
	withMix := base
	withMix.Sizes = mix
	withMix.Process = Periodic
	base.Process = Periodic
	p, q := gen(base, 5, 200), gen(withMix, 5, 200)
	for i := range p {
		if p[i].Dst != q[i].Dst {
			t.Fatalf("changing the size mix changed destination %d", i)
		}
	}
}

func TestGeneratorSilentAndErrors(t *testing.T) {
	size, _ := FixedSize(256)
	pat := mustPattern(t, "bitrev", 16)
	g, err := NewGenerator(Config{Pattern: pat, Load: 0.5, Sizes: size, Link: recnLink}, 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Next(); ok {
		t.Error("silent bit-reversal fixed point 6 created a packet")
	}
	for _, tc := range []struct {
		cfg  Config
		host int
		want string
	}{
		{Config{Sizes: size, Link: recnLink}, 0, "no destination pattern"},
		{Config{Pattern: pat, Link: recnLink}, 0, "no message sizes"},
		{Config{Pattern: pat, Sizes: size}, 0, "rate must be positive"},
		{Config{Pattern: pat, Sizes: size, Link: recnLink}, 16, "out of range"},
		{Config{Pattern: pat, Sizes: size, Link: recnLink, Load: 200}, 1, "out of range"},
	} {
		_, err := NewGenerator(tc.cfg, tc.host)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error = %v, want it to mention %q", err, tc.want)
		}
	}
	// Packet-count phases resolve over the active (non-silent) sources.
	ph, _ := ParsePhases("1:12pkt")
	g, err = NewGenerator(Config{Pattern: pat, Process: Periodic, Phases: ph, Sizes: size, Link: recnLink}, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ok := g.Next(); ok; _, ok = g.Next() {
		n++
	}
	if n != 1 { // 12 packets over 12 active sources
		t.Errorf("12pkt over 12 sources: host 1 created %d, want 1", n)
	}
}
