package synth

import (
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
)

// BenchmarkSaturation runs the torus8x8-dor preset with uniform traffic
// at offered load 1.0 (past saturation) and reports delivered packets per
// wall-clock second, the speed figure of docs/performance.md.
func BenchmarkSaturation(b *testing.B) {
	for _, name := range []string{"torus8x8-dor", "paper004-irregular16"} {
		b.Run(name, func(b *testing.B) {
			c, err := model.LookupPreset(name)
			if err != nil {
				b.Fatal(err)
			}
			c.Traffic.Load = 1.0
			c.Run.Warmup = 0
			c.Run.Duration = 2 * des.Millisecond
			var delivered, events uint64
			var wall float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := RunSim(c, nil)
				if err != nil {
					b.Fatal(err)
				}
				delivered += s.Packets.Delivered
				events += s.Run.Events
				wall += s.Run.WallSeconds
			}
			b.ReportMetric(float64(delivered)/wall, "pkts/s")
			b.ReportMetric(float64(events)/wall, "events/s")
			b.ReportMetric(float64(events)/float64(delivered), "events/pkt")
		})
	}
}

// BenchmarkSaturationArch is BenchmarkSaturation on torus8x8-dor with
// every switch architecture of fabric's table (a queue scheme of paper
// 000 or RECN joins the list by joining the table); docs/performance.md
// records it per architecture.
func BenchmarkSaturationArch(b *testing.B) {
	for _, a := range fabric.Architectures() {
		b.Run(a.Name, func(b *testing.B) {
			c, err := model.LookupPreset("torus8x8-dor")
			if err != nil {
				b.Fatal(err)
			}
			c.Fabric.Switch = a.Name
			if !a.OutputBuffered() {
				c.Fabric.OutputBuffer = 0
			}
			c.Traffic.Load = 1.0
			c.Run.Warmup = 0
			c.Run.Duration = 2 * des.Millisecond
			var delivered, events uint64
			var wall float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := RunSim(c, nil)
				if err != nil {
					b.Fatal(err)
				}
				delivered += s.Packets.Delivered
				events += s.Run.Events
				wall += s.Run.WallSeconds
			}
			b.ReportMetric(float64(delivered)/wall, "pkts/s")
			b.ReportMetric(float64(events)/wall, "events/s")
			b.ReportMetric(float64(events)/float64(delivered), "events/pkt")
		})
	}
}
