package synth

import (
	"fmt"
	"runtime"
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

// BenchmarkSteadyStateAllocs reports the heap allocations per delivered
// packet once the model is warm: torus8x8-dor with uniform traffic runs
// 1 ms of fabric time untimed, then 1 ms during which the allocations
// (runtime.MemStats.Mallocs) and the packets delivered are counted. The
// pools (packets, messages, event slots, wheel buckets) are full by then,
// so what remains is what the steady state allocates. At load 0.3 the
// fabric delivers what the sources offer; at 1.0 (past saturation) the
// sources' queues grow without bound, and a queued message is memory the
// model must hold. It asserts nothing: docs/performance.md records it.
func BenchmarkSteadyStateAllocs(b *testing.B) {
	for _, load := range []float64{0.3, 1.0} {
		b.Run(fmt.Sprintf("torus8x8-dor/load=%.1f", load), func(b *testing.B) {
			cfg, err := model.LookupPreset("torus8x8-dor")
			if err != nil {
				b.Fatal(err)
			}
			cfg.Traffic.Load = load
			cfg.Run.Warmup = 0
			warm, window := des.Millisecond, des.Millisecond
			var allocs, delivered uint64
			for i := 0; i < b.N; i++ {
				s, syn := newBenchSession(b, cfg, warm+window)
				syn.start()
				s.Eng.RunUntil(warm)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				d0 := s.Fabric.Stats.Delivered
				s.Eng.RunUntil(warm + window)
				runtime.ReadMemStats(&after)
				allocs += after.Mallocs - before.Mallocs
				delivered += s.Fabric.Stats.Delivered - d0
			}
			b.ReportMetric(float64(allocs)/float64(delivered), "allocs/pkt")
			b.ReportMetric(float64(delivered)/float64(b.N), "pkts/window")
		})
	}
}

// newBenchSession builds the model and the synthetic workload of cfg as
// RunSim does, for a run that ends at end.
func newBenchSession(b testing.TB, cfg model.SimConfig, end des.Time) (*model.Session, *synth) {
	b.Helper()
	cfg.NIC.Delivery.Mode, cfg.Routing.Mode = cfg.NIC.Delivery.Effective(cfg.Routing.Mode)
	fc := cfg.Fabric
	fc.Seed = cfg.Run.Seed
	s, err := model.NewSession(cfg.Topology, cfg.Routing, fc, cfg.NIC, cfg.Run.Warmup, end, cfg.Run.Bin)
	if err != nil {
		b.Fatal(err)
	}
	syn, err := newSynth(s.Net, s.Eng, cfg.Traffic, HostLink(cfg.Fabric, cfg.NIC), cfg.Run.Seed, end)
	if err != nil {
		b.Fatal(err)
	}
	return s, syn
}
