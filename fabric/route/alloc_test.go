package route

import (
	"testing"

	"github.com/fabemu/fabemu/fabric/topo"
)

// TestCandidatesDoNotAllocate: routing runs for every packet at every
// switch; it must not allocate.
func TestCandidatesDoNotAllocate(t *testing.T) {
	for _, kind := range []topo.Kind{topo.KindTorus, topo.KindIrregular, topo.KindMIN} {
		tc := topo.DefaultConfig(kind)
		tp, err := topo.Build(tc)
		if err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		c.Mode = Adaptive
		r, err := New(tp, c)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]Candidate, 0, 64)
		dst := tp.NumHosts() - 1
		s, port := r.HostSwitch(0)
		allocs := testing.AllocsPerRun(100, func() {
			buf = r.Candidates(s, port, 0, dst, buf)
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per Candidates call", kind, allocs)
		}
	}
}
