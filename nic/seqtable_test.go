package nic

import (
	"math/rand/v2"
	"testing"
)

// TestSeqTableMatchesMap checks both forms of seqTable (dense up to
// denseSeqHosts, the open-addressing table above) against a map under a
// random sequence of gets and sets, with enough peers to make the sparse
// table grow several times and probe past collisions.
func TestSeqTableMatchesMap(t *testing.T) {
	for _, hosts := range []int{denseSeqHosts, 4096, 1 << 20} {
		tab := newSeqTable(hosts)
		ref := map[int32]uint64{}
		r := rand.New(rand.NewPCG(1, uint64(hosts)))
		for op := 0; op < 200000; op++ {
			peer := int32(r.IntN(hosts))
			if op%3 == 0 {
				peer = int32(r.IntN(64)) << 10 % int32(hosts) // same low bits: collisions
			}
			if got, want := tab.get(peer), ref[peer]; got != want {
				t.Fatalf("hosts %d, op %d: get(%d) = %d, want %d", hosts, op, peer, got, want)
			}
			v := r.Uint64()
			tab.set(peer, v)
			ref[peer] = v
		}
		if tab.dense == nil && tab.used != len(ref) {
			t.Fatalf("hosts %d: %d peers in the table, want %d", hosts, tab.used, len(ref))
		}
		for peer, want := range ref {
			if got := tab.get(peer); got != want {
				t.Fatalf("hosts %d: get(%d) = %d at the end, want %d", hosts, peer, got, want)
			}
		}
	}
}
