package nic_test

import (
	"fmt"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/workload/synth"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/injection"
)

// BenchmarkDeliveryModes runs the same simulation (paper004-irregular16,
// uniform 256-byte packets, 2 ms) in adaptive-ooo and in
// adaptive-inorder (dynamic 256 KiB memory, ADAP-LI) and reports wall time
// per run and delivered packets per wall second. The figures in
// docs/performance.md ("End-to-end delivery") come from
//
//	go test ./nic -run '^$' -bench DeliveryModes -count 5
func BenchmarkDeliveryModes(b *testing.B) {
	for _, load := range []float64{0.5, 1.0} {
		for _, mode := range []nic.DeliveryMode{nic.DeliveryAdaptiveOOO, nic.DeliveryAdaptiveInOrder} {
			b.Run(fmt.Sprintf("load%.1f/%s", load, mode), func(b *testing.B) {
				c, err := model.LookupPreset("paper004-irregular16")
				if err != nil {
					b.Fatal(err)
				}
				c.Traffic.Load = load
				c.Run.Warmup = 0
				c.Run.Duration = 2 * des.Millisecond
				c.NIC.Delivery.Mode = mode
				c.NIC.Delivery.Reorder = nic.DefaultReorder
				c.NIC.Delivery.Injection.Policy = injection.LI
				var delivered uint64
				var wall float64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s, err := synth.RunSim(c, nil)
					if err != nil {
						b.Fatal(err)
					}
					if !s.Invariants.OK {
						b.Fatal(s.Invariants.Violations)
					}
					delivered += s.Packets.Delivered
					wall += s.Run.WallSeconds
				}
				b.ReportMetric(float64(delivered)/wall, "pkts/s")
			})
		}
	}
}
