package fabric

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQueueSetOrder: the bit set of non-empty queues follows pushes and
// pops, and nonEmptyFrom and wordRange visit exactly the queues, in the
// order, that a scan of every queue from a start position would (one word
// and several, every start).
func TestQueueSetOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 12, 63, 64, 65, 128, 130, 200} {
		qs, ne := newInQueues(n)
		ip := &inPort{queues: qs, nonEmpty: ne}
		for round := 0; round < 50; round++ {
			for range 64 {
				if v := rng.IntN(n); ip.queues[v].head != nil && rng.IntN(2) == 0 {
					ip.popQ(v)
				} else {
					ip.pushQ(v, &Packet{})
				}
			}
			f := &Fabric{in: []inPort{*ip}}
			if err := f.CheckQueueIndex(); err != nil {
				t.Fatalf("%d queues: %v", n, err)
			}
			for start := 0; start < n; start++ {
				var want []int32
				for j := 0; j < n; j++ {
					if v := (start + j) % n; ip.queues[v].head != nil {
						want = append(want, int32(v))
					}
				}
				var got []int32
				order := ip.nonEmptyFrom(start, nil)
				for qi, ok := order.next(); ok; qi, ok = order.next() {
					got = append(got, int32(qi))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%d queues from %d: %v, want %v", n, start, got, want)
				}
			}
			lo, hi := rng.IntN(n+1), rng.IntN(n+1)+rng.IntN(2)<<30
			for w := range ip.nonEmpty {
				m := wordRange(w, lo, hi)
				for b := 0; b < 64; b++ {
					v := w<<6 + b
					if got, want := m&(1<<uint(b)) != 0, v >= lo && v < hi; got != want {
						t.Fatalf("wordRange(%d, %d, %d) bit %d: %v, want %v", w, lo, hi, b, got, want)
					}
				}
			}
		}
	}
}
