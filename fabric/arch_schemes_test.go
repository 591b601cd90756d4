package fabric_test

import (
	"math/rand/v2"
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/fabrictest"
	"github.com/fabemu/fabemu/fabric/route"
)

// TestOneQIsCIOQ: paper 000's IQ scheme keeps one FIFO per input port
// and lane, so it delivers exactly as cioq does, packet for packet and
// picosecond for picosecond, on every topology family in both routing
// modes.
func TestOneQIsCIOQ(t *testing.T) {
	for _, tp := range fabrictest.Topologies() {
		for _, mode := range []route.Mode{route.Deterministic, route.Adaptive} {
			var digests [2]uint64
			for i, arch := range []string{"cioq", "1q"} {
				top, err := tp.Build()
				if err != nil {
					t.Fatal(err)
				}
				c := fabric.DefaultConfig()
				c.Switch = arch
				rc := route.DefaultConfig()
				rc.Mode = mode
				n, err := fabrictest.Build(arch, top, c, rc)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(5, 11))
				hosts := top.NumHosts()
				for step := 0; step < 30; step++ {
					for k := 0; k < hosts; k++ {
						src, dst := rng.IntN(hosts), rng.IntN(hosts-1)
						if dst >= src {
							dst++
						}
						n.EP.Send(src, dst, 64+rng.IntN(fabrictest.MaxPacket-63))
					}
					n.Eng.RunUntil(n.Eng.Now() + 400*des.Nanosecond)
				}
				if err := n.Drain(20 * des.Millisecond); err != nil {
					t.Fatal(err)
				}
				digests[i] = n.EP.Digest()
			}
			if digests[0] != digests[1] {
				t.Errorf("%s/%s: 1q and cioq deliver differently", tp.Name, mode)
			}
		}
	}
}
