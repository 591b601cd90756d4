package traffic

import (
	"math"
	"testing"

	"github.com/fabemu/fabemu/internal/units"
)

// Mean rate: n = 100 000 creations at each load. The relative standard
// deviation of the time to the n-th creation is 1/sqrt(n) = 0.32 % for the
// exponential process and sqrt((1-p)/n) <= 0.32 % for Bernoulli, so the
// ±2 % tolerance is over 6 sigma; periodic is exact up to the picosecond
// rounding.
func TestProcessMeanRate(t *testing.T) {
	const n = 100000
	const meanPicos = 1128000.0 // 282 wire bytes at 2 Gb/s
	for _, kind := range []ProcessKind{Bernoulli, Exponential, Periodic} {
		for _, load := range []float64{0.05, 0.3, 0.9, 1.0, 2.5} {
			proc, err := NewProcess(kind, load, meanPicos)
			if err != nil {
				t.Fatal(err)
			}
			rng := testRNG(uint64(load * 1000))
			t0 := proc.First(0, rng)
			last := t0
			for range n {
				next := proc.Next(last, rng)
				if next < last {
					t.Fatalf("%v: time went back: %d after %d", kind, next, last)
				}
				last = next
			}
			got := float64(n) * meanPicos / float64(last-t0)
			if math.Abs(got-load)/load > 0.02 {
				t.Errorf("%v at load %v: measured %.4f (%.2f%% off)", kind, load, got, 100*(got-load)/load)
			}
		}
	}
}

// Bernoulli creations fall exactly on slot starts floor(j·slot), strictly
// increasing; loads above 1 use ceil(load) sub-slots per message time.
func TestBernoulliSlotAlignment(t *testing.T) {
	for _, tc := range []struct {
		load, mean, slot float64
	}{
		{0.5, 1128000, 1128000},
		{0.37, 1000.5, 1000.5},
		{1, 64000, 64000},
		{1.5, 64000, 32000},
		{3.2, 1000, 250},
	} {
		proc, err := NewProcess(Bernoulli, tc.load, tc.mean)
		if err != nil {
			t.Fatal(err)
		}
		g := proc.(*grid)
		if g.SlotPicos() != tc.slot {
			t.Errorf("load %v: slot %v, want %v", tc.load, g.SlotPicos(), tc.slot)
		}
		rng := testRNG(7)
		last := int64(-1)
		tt := proc.First(0, rng)
		for range 10000 {
			if tt <= last {
				t.Fatalf("load %v: %d not after %d", tc.load, tt, last)
			}
			j := math.Round(float64(tt) / tc.slot)
			if int64(j*tc.slot) != tt && int64((j+1)*tc.slot) != tt && int64((j-1)*tc.slot) != tt {
				t.Fatalf("load %v: %d ps is not a slot start (slot %v ps)", tc.load, tt, tc.slot)
			}
			last = tt
			tt = proc.Next(tt, rng)
		}
	}
	// Load 1: every slot is used.
	proc, _ := NewProcess(Bernoulli, 1, 64000)
	rng := testRNG(8)
	tt := proc.First(0, rng)
	for i := range 100 {
		if tt != int64(i)*64000 {
			t.Fatalf("load 1: creation %d at %d, want %d", i, tt, i*64000)
		}
		tt = proc.Next(tt, rng)
	}
	// First from the middle of a slot waits for the next slot start.
	if got := proc.First(1, rng); got != 64000 {
		t.Errorf("First(1) = %d, want 64000", got)
	}
}

func TestPeriodicExact(t *testing.T) {
	proc, err := NewProcess(Periodic, 0.5, 1128000)
	if err != nil {
		t.Fatal(err)
	}
	tt := proc.First(0, nil)
	for i := range 1000 {
		if tt != int64(i)*2256000 {
			t.Fatalf("creation %d at %d, want %d", i, tt, i*2256000)
		}
		tt = proc.Next(tt, nil)
	}
}

func TestProcessEdges(t *testing.T) {
	p, err := NewProcess(Exponential, 0, 1000)
	if err != nil || p.First(0, nil) != Never || p.Next(5, nil) != Never {
		t.Errorf("load 0 must never create: %v", err)
	}
	for _, bad := range []float64{-0.1, MaxLoad + 1, math.NaN(), math.Inf(1)} {
		if _, err := NewProcess(Bernoulli, bad, 1000); err == nil {
			t.Errorf("load %v accepted", bad)
		}
	}
	if _, err := NewProcess(Bernoulli, 100, 50); err == nil {
		t.Error("sub-picosecond slot accepted")
	}
	for _, s := range []string{"bernoulli", "Poisson", "exp", "periodic", "cbr"} {
		if _, err := ParseProcess(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseProcess("gamma"); err == nil {
		t.Error("unknown process accepted")
	}
}

// The load definition: wire bytes (payload + per-packet overhead, per MTU
// segment) offered per unit time over the link's payload-carrying rate.
func TestLinkLoadDefinition(t *testing.T) {
	l := Link{Rate: 2 * units.Gbps, Overhead: 26, MTU: 256}
	for _, tc := range []struct{ payload, wire int64 }{{256, 282}, {1, 27}, {257, 257 + 52}, {1000, 1000 + 4*26}} {
		if got := l.WireBytes(int(tc.payload)); got != tc.wire {
			t.Errorf("WireBytes(%d) = %d, want %d", tc.payload, got, tc.wire)
		}
	}
	if got := l.Picos(282); got != 1128000 {
		t.Errorf("282 bytes at 2 Gb/s = %v ps, want 1128000", got)
	}
	z, _ := ParseSizes("256:0.5,4096:0.5")
	wantWire := 0.5*282 + 0.5*(4096+16*26)
	if got := z.MeanWireBytes(l); got != wantWire {
		t.Errorf("mean wire bytes %v, want %v", got, wantWire)
	}
	// Offered bytes over time = load × capacity, with a size mix.
	pat := mustPattern(t, "uniform", 16)
	const load, n = 0.6, 100000
	g, err := NewGenerator(Config{Pattern: pat, Process: Exponential, Load: load, Sizes: z, Link: l, Seed: 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var bytes float64
	var last int64
	for range n {
		p, ok := g.Next()
		if !ok {
			t.Fatal("generator stopped")
		}
		bytes += float64(l.WireBytes(p.Size))
		last = p.Time
	}
	got := bytes * 8 / (float64(last) / 1e12) / float64(l.Rate)
	if math.Abs(got-load)/load > 0.02 {
		t.Errorf("offered load with a size mix: %.4f, want %v ± 2%%", got, load)
	}
}
