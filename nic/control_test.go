package nic_test

import (
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
)

// TestGateEveryDeliveryMode: the injection-control gate is consulted in
// every delivery mode, not only adaptive-inorder, and Trans-t's
// starvation guarantee delivers every message of a burst that congests
// the network (all hosts send to one).
func TestGateEveryDeliveryMode(t *testing.T) {
	const perHost, end = 80, 5 * des.Millisecond
	modes := []struct {
		mode nic.DeliveryMode
		mem  string
	}{
		{nic.DeliveryDeterministic, ""}, {nic.DeliveryAdaptiveOOO, ""}, {nic.DeliveryAdaptiveInOrder, "unlimited"},
	}
	for _, m := range modes {
		for _, pol := range []injection.ControlKind{injection.NoLim, injection.TransT, injection.SelfTuned} {
			t.Run(string(m.mode)+"/"+string(pol), func(t *testing.T) {
				c := withDelivery(deliveryNet(t, "torus4x4"), m.mode, m.mem, injection.Unlimited)
				c.NIC.InjectionControl.Policy = pol
				c.NIC.InjectionControl.U1 = 1.2 // low: marks under any contention
				c.NIC.InjectionControl.Threshold = 0.01
				if m.mode == nic.DeliveryDeterministic {
					c.Routing.Mode = "deterministic"
				} else {
					c.Routing.Mode = "adaptive"
				}
				s, err := model.NewSession(c.Topology, c.Routing, c.Fabric, c.NIC, 0, end, 0)
				if err != nil {
					t.Fatal(err)
				}
				// The switches mark a channel when a packet leaves it, so the
				// NICs must still have packets when the first congested ones
				// leave: 80 each, far more than the first switch buffers.
				n := s.Net.Hosts()
				done := 0
				for src := 1; src < n; src++ {
					for k := 0; k < perHost; k++ {
						msg := s.Net.NewMessage()
						msg.Src, msg.Dst, msg.Bytes = src, 0, 256
						msg.Done = func(*nic.Message, des.Time) { done++ }
						s.Net.Send(msg)
					}
				}
				if err := s.RunUntil(end, nil); err != nil {
					t.Fatal(err)
				}
				if want := perHost * (n - 1); done != want {
					t.Fatalf("%d of %d messages delivered (starvation?)", done, want)
				}
				r := s.Net.GateRefusals()
				switch {
				case pol == injection.NoLim && r != 0:
					t.Errorf("No-Lim refused %d times", r)
				case pol != injection.NoLim && r == 0:
					t.Errorf("%s never refused a packet in %s mode: the gate is not consulted", pol, m.mode)
				}
			})
		}
	}
}
