package synth

import (
	"github.com/fabemu/fabemu/model"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// saturationThroughput runs the preset at each load and returns the
// largest accepted traffic in bytes/ns/switch (paper 004's throughput:
// the maximum of the latency-versus-accepted-traffic curve).
func saturationThroughput(t *testing.T, preset, pattern string, mode route.Mode, loads []float64) float64 {
	t.Helper()
	best := 0.0
	for _, l := range loads {
		c, err := model.LookupPreset(preset)
		if err != nil {
			t.Fatal(err)
		}
		c.Run.Duration, c.Run.Warmup = 300*des.Microsecond, 50*des.Microsecond
		c.Routing.Mode, c.Traffic.Pattern, c.Traffic.Load = mode, pattern, l
		s, err := RunSim(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkSummary(t, s)
		best = max(best, s.AcceptedBytesPerNsPerSwitch)
	}
	return best
}

// TestAdaptiveRaisesSaturation checks the qualitative result of paper 004
// §4.2 (Figure 5): on irregular networks, adaptive routing with an
// up*/down* escape lane raises the saturation throughput over up*/down*
// alone, "double for small network sizes, and more than four times for
// large networks". docs/validation.md has the full curves (uniform:
// 1.9x for 16 switches, 3.8x for 64). The loads bracket each curve's
// maximum as measured there; the thresholds (1.5x and 2.5x) leave room
// for the shorter windows used here.
func TestAdaptiveRaisesSaturation(t *testing.T) {
	if testing.Short() {
		t.Skip("load sweeps; skipped in -short")
	}
	for _, tc := range []struct {
		preset        string
		det, adaptive []float64
		minRatio      float64
	}{
		{"paper004-irregular16", []float64{0.12, 0.16, 0.2, 0.24}, []float64{0.26, 0.3, 0.34}, 1.5},
		{"paper004-irregular64", []float64{0.04, 0.06, 0.08}, []float64{0.14, 0.16, 0.18, 0.2}, 2.5},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			det := saturationThroughput(t, tc.preset, "uniform", route.Deterministic, tc.det)
			ad := saturationThroughput(t, tc.preset, "uniform", route.Adaptive, tc.adaptive)
			t.Logf("%s uniform: saturation throughput %.4f (up*/down*) vs %.4f (adaptive) bytes/ns/switch: %.2fx", tc.preset, det, ad, ad/det)
			if ad < tc.minRatio*det {
				t.Fatalf("adaptive %.4f is only %.2fx up*/down* %.4f bytes/ns/switch; want > %.1fx", ad, ad/det, det, tc.minRatio)
			}
		})
	}
}
