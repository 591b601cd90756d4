package hist

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestExactSmallValues(t *testing.T) {
	var h Hist
	for v := int64(0); v < 100; v++ {
		h.Add(v)
	}
	if h.Count() != 100 || h.Mean() != 49.5 || h.Max() != 99 || h.Min() != 0 {
		t.Fatalf("count %d mean %g max %d min %d", h.Count(), h.Mean(), h.Max(), h.Min())
	}
	// Values below 128 have their own buckets: quantiles are exact.
	if q := h.Quantile(0.5); q != 49 {
		t.Fatalf("median %g, want 49", q)
	}
}

func TestQuantileRelativeError(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var h Hist
	var xs []float64
	for i := 0; i < 100000; i++ {
		v := int64(rng.ExpFloat64() * 1e6)
		h.Add(v)
		xs = append(xs, float64(v))
	}
	sort.Float64s(xs)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := xs[int(math.Ceil(q*float64(len(xs))))-1]
		got := h.Quantile(q)
		// Bucket width is 1/128 of its lower bound: the midpoint is within
		// half of that, about 0.4%; allow 1%.
		if math.Abs(got-exact)/exact > 0.01 {
			t.Errorf("q%.3f = %g, exact %g (error %.2f%%)", q, got, exact, 100*math.Abs(got-exact)/exact)
		}
	}
}

func TestBucketBoundaries(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 40, 1<<62 + 12345} {
		b := bucket(v)
		if lower(b) > v || lower(b+1) <= v {
			t.Errorf("value %d in bucket %d = [%d, %d)", v, b, lower(b), lower(b+1))
		}
	}
}

func TestMerge(t *testing.T) {
	var a, b, all Hist
	for i := int64(0); i < 1000; i++ {
		if i%2 == 0 {
			a.Add(i * 1000)
		} else {
			b.Add(i * 1000)
		}
		all.Add(i * 1000)
	}
	a.Merge(&b)
	if a.Count() != all.Count() || a.Mean() != all.Mean() || a.Quantile(0.99) != all.Quantile(0.99) || a.Max() != all.Max() {
		t.Fatal("merged histogram differs from the histogram of all samples")
	}
}

func BenchmarkAdd(b *testing.B) {
	var h Hist
	for i := 0; i < b.N; i++ {
		h.Add(int64(i&0xfffff) * 997)
	}
}

// CumulativeLE counts the samples at most each bound, exactly below 128
// and within a bucket's width above, and never decreases.
func TestCumulativeLE(t *testing.T) {
	var h Hist
	for _, v := range []int64{0, 5, 5, 100, 127, 1000, 5000, 1 << 20} {
		h.Add(v)
	}
	got := h.CumulativeLE([]float64{0, 4, 5, 127, 999, 1000, 4991, 1e9})
	want := []uint64{1, 1, 3, 5, 5, 6, 6, 8}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("CumulativeLE = %v, want %v", got, want)
		}
	}
	if h.Sum() != 0+5+5+100+127+1000+5000+1<<20 {
		t.Errorf("Sum %g", h.Sum())
	}
	if c := (&Hist{}).CumulativeLE([]float64{1, 2}); c[0] != 0 || c[1] != 0 {
		t.Errorf("empty: %v", c)
	}
}
