package fabric

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fabemu/fabemu/internal/rng"
)

// fullRequests is the request matrix of an n x n switch whose every input
// has a packet for every output (saturated virtual output queues).
func fullRequests(n int) []pimEdge {
	var e []pimEdge
	for i := 0; i < n; i++ {
		for o := 0; o < n; o++ {
			e = append(e, pimEdge{int32(i), int32(o)})
		}
	}
	return e
}

// checkMatching fails unless matched (indices into edges) is a matching:
// no input and no output twice.
func checkMatching(t *testing.T, edges []pimEdge, matched []int32) {
	t.Helper()
	ins, outs := map[int32]bool{}, map[int32]bool{}
	for _, ri := range matched {
		e := edges[ri]
		if ins[e.in] || outs[e.out] {
			t.Fatalf("request %v matched twice in %v", e, matched)
		}
		ins[e.in], outs[e.out] = true, true
	}
}

// meanStd returns the mean of xs and its standard error.
func meanStd(xs []float64) (mean, se float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	v /= float64(len(xs) - 1)
	return mean, math.Sqrt(v / float64(len(xs)))
}

// TestPIMOneIteration: on a full request matrix every output grants an
// input chosen uniformly, and an input is matched exactly when at least
// one output granted it (it accepts one of its grants). So one iteration
// matches n(1-(1-1/n)^n) pairs on average (Anderson et al. 1993 §4):
// worked by hand, 3/2 for n = 2 (both outputs grant the same input with
// probability 1/2) and 3(1-(2/3)^3) = 19/9 for n = 3; for large n the
// fraction tends to 1-1/e ~ 0.632. The mean over 20000 seeded trials must
// lie within 4 standard errors of it (the draws are seeded, so the test is
// deterministic; 4 standard errors is what an honest random stream passes
// with probability 0.99994, so a failure means a biased grant or accept).
func TestPIMOneIteration(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want float64
	}{
		{2, 1.5},
		{3, 19.0 / 9},
		{8, 8 * (1 - math.Pow(7.0/8, 8))},
		{64, 64 * (1 - math.Pow(63.0/64, 64))},
	} {
		edges := fullRequests(tc.n)
		var m pimMatcher
		rnd := rng.Stream(1, "test.pim", tc.n)
		sizes := make([]float64, 20000)
		for i := range sizes {
			got := m.round(rnd, tc.n, tc.n, edges)
			checkMatching(t, edges, got)
			sizes[i] = float64(len(got))
		}
		mean, se := meanStd(sizes)
		t.Logf("n=%d: one iteration matches %.4f (analytic %.4f, standard error %.4f)", tc.n, mean, tc.want, se)
		if math.Abs(mean-tc.want) > 4*se {
			t.Errorf("n=%d: one iteration matches %.4f on average (standard error %.4f), want %.4f", tc.n, mean, se, tc.want)
		}
		if tc.n == 64 {
			if frac := mean / 64; math.Abs(frac-(1-1/math.E)) > 0.01 {
				t.Errorf("n=64: one iteration matches %.4f of the ports, want 1-1/e = %.4f within 0.01 (the finite-n value is %.4f)", frac, 1-1/math.E, tc.want/64)
			}
		}
	}
}

// TestPIMHandWorked follows one iteration on a sparse matrix where the
// draws do not matter: input 0 requests outputs 0 and 1, input 1 only
// output 1, input 2 only output 2. Output 0 and output 2 have one request
// each and grant it; output 1 grants input 0 or 1. If it grants input 0,
// input 0 accepts 0 or 1 and one output is wasted: 2 matches; if input 1,
// every input has one grant: 3 matches. A second iteration completes the
// match only where it can: a lone unmatched input 1 whose output 1 went to
// input 0 is stuck, so the maximal matches have size 2 or 3, and size 3
// is reached with probability 1/2 + 1/2*1/2 = 3/4.
func TestPIMHandWorked(t *testing.T) {
	edges := []pimEdge{{0, 0}, {0, 1}, {1, 1}, {2, 2}}
	var m pimMatcher
	rnd := rng.Stream(1, "test.pim.hand", 0)
	const trials = 20000
	three := 0
	for i := 0; i < trials; i++ {
		got := m.round(rnd, 3, 3, edges)
		checkMatching(t, edges, got)
		if len(got) != 2 && len(got) != 3 {
			t.Fatalf("matched %v", got)
		}
		matchedIn, takenOut := map[int32]bool{}, map[int32]bool{}
		for _, ri := range got {
			matchedIn[edges[ri].in], takenOut[edges[ri].out] = true, true
		}
		// Second iteration over what is left.
		var rest []pimEdge
		for _, e := range edges {
			if !matchedIn[e.in] && !takenOut[e.out] {
				rest = append(rest, e)
			}
		}
		total := len(got) + len(m.round(rnd, 3, 3, rest))
		if total == 3 {
			three++
		}
	}
	p := float64(three) / trials
	se := math.Sqrt(0.75 * 0.25 / trials)
	t.Logf("complete match after two iterations: %.4f (analytic 0.75)", p)
	if math.Abs(p-0.75) > 4*se {
		t.Errorf("complete match after two iterations with probability %.4f, want 3/4 within %.4f", p, 4*se)
	}
}

// TestPIMConvergence: iterating until no unmatched input requests an
// unmatched output takes at most log2(n) + 4/3 iterations on average
// (Anderson et al. 1993 §4, Appendix) for any request matrix; checked on
// full and on random half-full matrices, with every result maximal. The
// bound holds for every matrix, so the mean of 2000 trials may exceed it
// only by sampling noise (4 standard errors).
func TestPIMConvergence(t *testing.T) {
	for _, n := range []int{4, 8, 16, 32, 64} {
		for _, density := range []float64{1, 0.5} {
			rnd := rng.Stream(2, "test.pim.conv", n)
			draw := rand.New(rand.NewPCG(uint64(n), 3))
			var m pimMatcher
			iters := make([]float64, 2000)
			for trial := range iters {
				var edges []pimEdge
				for _, e := range fullRequests(n) {
					if density == 1 || draw.Float64() < density {
						edges = append(edges, e)
					}
				}
				matchedIn, takenOut := make([]bool, n), make([]bool, n)
				rest := edges
				k := 0
				for len(rest) > 0 {
					k++
					var got int
					got, rest = pimIteration(&m, rnd, n, rest, matchedIn, takenOut)
					if got == 0 {
						t.Fatalf("n=%d: an iteration over %d requests matched nothing", n, len(rest))
					}
				}
				for _, e := range edges {
					if !matchedIn[e.in] && !takenOut[e.out] {
						t.Fatalf("n=%d: request %v left with both ends free", n, e)
					}
				}
				iters[trial] = float64(k)
			}
			mean, se := meanStd(iters)
			bound := math.Log2(float64(n)) + 4.0/3
			t.Logf("n=%d density %.1f: %.2f iterations to a maximal match (bound %.2f)", n, density, mean, bound)
			if mean > bound+4*se {
				t.Errorf("n=%d density %.1f: %.3f iterations on average, more than log2(n)+4/3 = %.3f", n, density, mean, bound)
			}
		}
	}
}

// TestPIMSaturatedThroughput: a slotted n x n input-queued switch with
// virtual output queues under saturated uniform traffic (every queue holds
// cells for ever) forwards, per slot, the pairs one PIM iteration matches;
// its throughput per port is then 1-(1-1/n)^n, 63.4% for n = 32 and 1-1/e
// = 63.2% in the limit (the known limit of single-iteration PIM, McKeown,
// ToN 1999 §II). Four iterations come close to 100% (the match is then
// nearly maximal, and on a full matrix maximal means perfect). Tolerance:
// 0.01 absolute over 5000 slots (the standard error is about 0.0013).
//
// The event-driven fabric is not slotted: an output left unmatched is
// allocated again at the next event of its switch, so pim(1) in a switch
// of the fabric does better than this bound (docs/validation.md).
func TestPIMSaturatedThroughput(t *testing.T) {
	const n, slots = 32, 5000
	edges := fullRequests(n)
	for _, tc := range []struct {
		iters int
		lo    float64
		hi    float64
	}{
		{1, 1 - math.Pow(1-1.0/n, n) - 0.01, 1 - math.Pow(1-1.0/n, n) + 0.01},
		{4, 0.97, 1},
	} {
		rnd := rng.Stream(3, "test.pim.sat", tc.iters)
		var m pimMatcher
		sent := 0
		for slot := 0; slot < slots; slot++ {
			matchedIn, takenOut := make([]bool, n), make([]bool, n)
			rest := edges
			for it := 0; it < tc.iters && len(rest) > 0; it++ {
				var got int
				got, rest = pimIteration(&m, rnd, n, rest, matchedIn, takenOut)
				sent += got
			}
		}
		thr := float64(sent) / (n * slots)
		t.Logf("pim(%d), %d ports saturated: throughput %.4f per port", tc.iters, n, thr)
		if thr < tc.lo || thr > tc.hi {
			t.Errorf("pim(%d): throughput %.4f, want %.4f..%.4f", tc.iters, thr, tc.lo, tc.hi)
		}
	}
}

// pimIteration runs one PIM iteration of m over the requests rest of an
// n x n switch, marks the matched inputs and outputs, and returns how many
// it matched and the requests left with both ends free.
func pimIteration(m *pimMatcher, rnd *rand.Rand, n int, rest []pimEdge, matchedIn, takenOut []bool) (int, []pimEdge) {
	got := m.round(rnd, n, n, rest)
	for _, ri := range got {
		matchedIn[rest[ri].in], takenOut[rest[ri].out] = true, true
	}
	var next []pimEdge
	for _, e := range rest {
		if !matchedIn[e.in] && !takenOut[e.out] {
			next = append(next, e)
		}
	}
	return len(got), next
}
