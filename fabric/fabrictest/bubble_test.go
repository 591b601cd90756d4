package fabrictest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// TestBubbleTorusPastSaturation: tori with one escape lane and no
// dateline under bubble flow control (paper 002 §3), with lanes of only
// two packet slots (the least the bubble needs), random traffic of mixed
// sizes past saturation on every architecture and allocator that takes
// bubble flow control, deterministic (the rings alone) and adaptive (two
// adaptive lanes), and adaptive with restrictive injection 2-All: every
// packet is delivered exactly once, no deadlock, the invariants hold
// after every step.
func TestBubbleTorusPastSaturation(t *testing.T) {
	for _, k := range [][]int{{4, 4}, {5, 3}} {
		tp, err := topo.Torus(k, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range variants() {
			if v.deterministic {
				continue // recn runs the injection links itself and counts blocks
			}
			for _, mode := range []string{"deterministic", "adaptive", "adaptive+2-all"} {
				name := fmt.Sprintf("%s/%s/%s", topo.CubeShape(k), v.name, mode)
				t.Run(name, func(t *testing.T) {
					rc := route.DefaultConfig()
					rc.Escape = "bubble"
					fc := v.cfg
					fc.InputBuffer = 2 * 320
					if mode != "deterministic" {
						rc.Mode, rc.AdaptiveVLs = route.Adaptive, 2
						fc.EscapeVLBuffer = 2 * 320
						fc.InputBuffer = 3 * 2 * 320
					}
					if fc.OutputBuffer > 0 {
						fc.OutputBuffer = fc.InputBuffer
					}
					n, err := Build(name, tp, fc, rc)
					if fc.Wormhole() {
						// bubble flow control is virtual cut-through's
						if err == nil || !strings.Contains(err.Error(), "fabric.switching") || !strings.Contains(err.Error(), "routing.escape bubble") {
							t.Fatalf("wormhole with bubble escape: err = %v, want a refusal naming fabric.switching and routing.escape bubble", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if mode == "adaptive+2-all" {
						if err := n.F.RestrictInjection(2, 2); err != nil {
							t.Fatal(err)
						}
					}
					runRandom(t, n, 11, 60)
				})
			}
		}
	}
}
