package traffic

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func mustPattern(t testing.TB, spec string, n int) Pattern {
	t.Helper()
	s, err := ParsePattern(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPattern(s, n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testRNG(i uint64) *rand.Rand { return rand.New(rand.NewPCG(i, 0x9e3779b97f4a7c15)) }

// Known values worked by hand from the bit formulas (doc.go, pattern.go).
func TestPermutationKnownValues(t *testing.T) {
	tests := []struct {
		pattern string
		n       int
		pairs   [][2]int // src -> dst; dst == src marks a fixed point
		fixed   int      // number of fixed points
	}{
		{"bitrev", 16, [][2]int{{1, 8}, {2, 4}, {3, 12}, {5, 10}, {8, 1}, {6, 6}, {0, 0}, {9, 9}, {15, 15}}, 4},
		{"butterfly", 16, [][2]int{{1, 8}, {8, 1}, {3, 10}, {7, 14}, {0, 0}, {9, 9}, {6, 6}}, 8},
		{"complement", 16, [][2]int{{0, 15}, {5, 10}, {6, 9}, {15, 0}}, 0},
		{"shuffle", 16, [][2]int{{1, 2}, {8, 1}, {9, 3}, {5, 10}, {10, 5}, {0, 0}, {15, 15}}, 2},
		{"transpose", 16, [][2]int{{1, 4}, {4, 1}, {6, 9}, {7, 13}, {0, 0}, {5, 5}, {10, 10}, {15, 15}}, 4},
		{"bitrev", 64, [][2]int{{1, 32}, {3, 48}, {6, 24}, {33, 33}, {12, 12}}, 8},
		{"butterfly", 64, [][2]int{{1, 32}, {32, 1}, {7, 38}, {33, 33}}, 32},
		{"complement", 64, [][2]int{{0, 63}, {21, 42}}, 0},
		{"shuffle", 64, [][2]int{{1, 2}, {32, 1}, {33, 3}, {21, 42}, {0, 0}, {63, 63}}, 2},
		{"transpose", 64, [][2]int{{1, 8}, {8, 1}, {11, 25}, {7, 56}, {9, 9}, {63, 63}}, 8},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"/"+strconv.Itoa(tc.n), func(t *testing.T) {
			p := mustPattern(t, tc.pattern, tc.n)
			rng := testRNG(1)
			for _, pr := range tc.pairs {
				src, want := pr[0], pr[1]
				dst, ok := p.Dest(src, 0, rng)
				if want == src {
					if ok || !p.Silent(src) {
						t.Errorf("fixed point %d: Dest = %d,%v Silent = %v, want silent", src, dst, ok, p.Silent(src))
					}
					continue
				}
				if !ok || dst != want {
					t.Errorf("Dest(%d) = %d,%v, want %d", src, dst, ok, want)
				}
			}
			silent := tc.n - ActiveSources(p)
			if silent != tc.fixed {
				t.Errorf("%d silent sources, want %d", silent, tc.fixed)
			}
		})
	}
}

// Every bit permutation is a permutation of 0..N-1 for N = 2^k: the
// images are distinct, and every pattern but the shuffle is an involution
// (applying it twice gives the source back).
func TestPermutationsArePermutations(t *testing.T) {
	for _, name := range []string{"bitrev", "butterfly", "complement", "shuffle", "transpose"} {
		for k := 1; k <= 10; k++ {
			n := 1 << k
			spec, _ := ParsePattern(name)
			p, err := NewPattern(spec, n)
			if (name == "transpose" && k%2 == 1) || (name == "butterfly" && k < 2) {
				if err == nil {
					t.Errorf("%s on %d hosts: want an error", name, n)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s on %d hosts: %v", name, n, err)
			}
			perm := p.(*permutation)
			seen := make([]bool, n)
			for s := range n {
				d := perm.Map(s)
				if seen[d] {
					t.Fatalf("%s/%d: destination %d hit twice", name, n, d)
				}
				seen[d] = true
				if name != "shuffle" && perm.Map(d) != s {
					t.Errorf("%s/%d: not an involution at %d", name, n, s)
				}
			}
		}
	}
}

func TestPermutationErrors(t *testing.T) {
	tests := []struct {
		spec string
		n    int
		want string
	}{
		{"bitrev", 12, "power-of-two"},
		{"shuffle", 100, "power-of-two"},
		{"transpose", 32, "square power-of-two"},
		{"butterfly", 2, "at least 4"},
		{"uniform", 1, "at least 2"},
		{"hotspot@70", 64, "out of range"},
		{"hotregion", 36, "12.5%"},
		{"hotregion,cols=5", 64, "does not divide"},
		{"corner1", 66, "divisible by 4"},
		{"corner1@50", 64, "hot sources"},
		{"corner2@63,sources=stride", 64, "hot sources"},
		{"corner1@64", 64, "out of range"},
	}
	for _, tc := range tests {
		spec, err := ParsePattern(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		_, err = NewPattern(spec, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewPattern(%s, %d) error = %v, want it to mention %q", tc.spec, tc.n, err, tc.want)
		}
	}
}

func TestFixedUniform(t *testing.T) {
	p := mustPattern(t, "bitrev,fixed=uniform", 16)
	if ActiveSources(p) != 16 {
		t.Fatalf("fixed=uniform: %d active sources, want 16", ActiveSources(p))
	}
	rng := testRNG(2)
	for range 1000 {
		d, ok := p.Dest(6, 0, rng) // 0110 is a palindrome
		if !ok || d == 6 || d < 0 || d >= 16 {
			t.Fatalf("fixed point 6 under fixed=uniform sent to %d,%v", d, ok)
		}
	}
	if d, _ := p.Dest(1, 0, rng); d != 8 {
		t.Fatalf("non-fixed source 1 sent to %d, want 8", d)
	}
}

// chiSquare returns the statistic of counts against equal expectations
// over the given cells.
func chiSquare(counts []int, cells []int, total int) float64 {
	e := float64(total) / float64(len(cells))
	x := 0.0
	for _, c := range cells {
		d := float64(counts[c]) - e
		x += d * d / e
	}
	return x
}

// Uniform: never to itself; the destinations pass a chi-square test. With
// 15 cells (14 degrees of freedom) the 0.1 % critical value is 36.12; the
// draws are seeded, so the test is deterministic, and a correct generator
// fails it for only 1 seed in 1000.
func TestUniform(t *testing.T) {
	const n, draws, src = 16, 150000, 3
	p := mustPattern(t, "uniform", n)
	counts := make([]int, n)
	rng := testRNG(3)
	for range draws {
		d, ok := p.Dest(src, 0, rng)
		if !ok || d == src || d < 0 || d >= n {
			t.Fatalf("uniform Dest = %d,%v", d, ok)
		}
		counts[d]++
	}
	var cells []int
	for d := range n {
		if d != src {
			cells = append(cells, d)
		}
	}
	if x := chiSquare(counts, cells, draws); x > 36.12 {
		t.Errorf("chi-square %.1f > 36.12 (14 df, p = 0.001): %v", x, counts)
	}
}

// fraction returns the share of draws from src that land in set.
func fraction(p Pattern, src int, now int64, draws int, set func(int) bool, rng *rand.Rand, t *testing.T) float64 {
	hit := 0
	for range draws {
		d, ok := p.Dest(src, now, rng)
		if !ok || d == src {
			t.Fatalf("Dest(%d) = %d,%v", src, d, ok)
		}
		if set(d) {
			hit++
		}
	}
	return float64(hit) / float64(draws)
}

// Hot-spot: the hot node gets f + (1-f)/(N-1) of a source's packets. With
// 200 000 draws the standard deviation of the share is below 0.001, so the
// ±0.005 tolerance is more than 5 sigma.
func TestHotspot(t *testing.T) {
	const n, draws = 64, 200000
	tests := []struct {
		spec string
		src  int
		now  int64
		want float64
	}{
		{"hotspot:0.2@5", 0, 0, 0.2 + 0.8/63},
		{"hotspot@5", 9, 0, 0.1 + 0.9/63},
		{"hotspot:0.5@2,from=25us,until=26us", 0, 25_500_000, 0.5 + 0.5/63},
		{"hotspot:0.5@2,from=25us,until=26us", 0, 26_000_000, 1.0 / 63},
		{"hotspot:0.5@2,from=25us,until=26us", 0, 0, 1.0 / 63},
	}
	for i, tc := range tests {
		p := mustPattern(t, tc.spec, n)
		node := p.(*hotSpot).node
		got := fraction(p, tc.src, tc.now, draws, func(d int) bool { return d == node }, testRNG(uint64(10+i)), t)
		if got < tc.want-0.005 || got > tc.want+0.005 {
			t.Errorf("%s from %d at %d ps: share to hot node %.4f, want %.4f ± 0.005", tc.spec, tc.src, tc.now, got, tc.want)
		}
	}
	// The hot node itself never sends to itself.
	p := mustPattern(t, "hotspot:1@5", n)
	fraction(p, 5, 0, 1000, func(int) bool { return false }, testRNG(4), t)
}

func TestHotRegionLayout(t *testing.T) {
	tests := []struct {
		spec string
		n    int
		want []int
	}{
		{"hotregion", 64, []int{0, 1, 2, 3, 8, 9, 10, 11}}, // 8×8: 4×2 block
		{"hotregion", 24, []int{0, 1, 2}},                  // one row
		{"hotregion,cols=12", 48, []int{0, 1, 2, 3, 4, 5}}, // 12×4: 6×1
		{"hotregion,cols=4", 32, []int{0, 1, 4, 5}},        // 4 cols × 8 rows: 2×2
		{"hotregion,cols=64", 64, []int{0, 1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tc := range tests {
		p := mustPattern(t, tc.spec, tc.n).(*hotRegion)
		got := p.Region()
		if len(got) != tc.n/8 || !equalInts(got, tc.want) {
			t.Errorf("%s on %d hosts: region %v, want %v", tc.spec, tc.n, got, tc.want)
		}
	}
	// 16×16 torus (paper 002): an 8×4 block of 32 hosts = 12.5 %.
	p := mustPattern(t, "hotregion", 256).(*hotRegion)
	r := p.Region()
	if len(r) != 32 || r[0] != 0 || r[7] != 7 || r[8] != 16 || r[31] != 3*16+7 {
		t.Errorf("16×16 region = %v", r)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Hot-region: 25 % of the packets go to the region (12.5 % of the hosts)
// and 75 % uniformly over all hosts but the source, so the region gets
// 0.25 + 0.75·|R|/(N-1) in total. 200 000 draws: sigma < 0.0011, tolerance
// ±0.005. The hot draws alone (region share minus the uniform part) must
// come to 25 % ± 0.6 %.
func TestHotRegion(t *testing.T) {
	const n, draws = 256, 200000
	p := mustPattern(t, "hotregion", n)
	hr := p.(*hotRegion)
	in := func(d int) bool { return hr.in[d] }
	for i, src := range []int{255, 0, 100} {
		inside := 0.0
		if hr.in[src] {
			inside = 1
		}
		want := 0.25 + 0.75*(32-inside)/255
		got := fraction(p, src, 0, draws, in, testRNG(uint64(20+i)), t)
		if got < want-0.005 || got > want+0.005 {
			t.Errorf("from %d: region share %.4f, want %.4f ± 0.005", src, got, want)
		}
		hot := (got - 0.75*(32-inside)/255)
		if hot < 0.244 || hot > 0.256 {
			t.Errorf("from %d: hot share %.4f, want 0.25 ± 0.006", src, hot)
		}
	}
}

// TestSplitPatterns: oddeven keeps parity and halves keeps the half, never
// send to the source, and reach every other host of the class.
func TestSplitPatterns(t *testing.T) {
	const n = 8
	for _, name := range []string{"oddeven", "halves"} {
		p := mustPattern(t, name, n)
		rng := rand.New(rand.NewPCG(3, 4))
		for src := 0; src < n; src++ {
			seen := map[int]bool{}
			for range 400 {
				d, ok := p.Dest(src, 0, rng)
				if !ok || d == src || d < 0 || d >= n {
					t.Fatalf("%s: %d -> %d (ok %v)", name, src, d, ok)
				}
				same := d%2 == src%2
				if name == "halves" {
					same = d/(n/2) == src/(n/2)
				}
				if !same {
					t.Fatalf("%s: %d -> %d leaves its class", name, src, d)
				}
				seen[d] = true
			}
			if len(seen) != n/2-1 {
				t.Errorf("%s: source %d reached %d hosts, want %d", name, src, len(seen), n/2-1)
			}
		}
	}
	if _, err := NewPattern(PatternSpec{Name: "oddeven", Node: -1}, 5); err == nil || !strings.Contains(err.Error(), "even host count") {
		t.Errorf("oddeven on 5 hosts: %v", err)
	}
}
