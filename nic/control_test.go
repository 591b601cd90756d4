package nic_test

import (
	"strings"
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

// TestTransTInjectionPorts: with four physical injection queues, Trans-t
// gates them as the router's injection ports (paper 001 §4.1: four
// injection channels per node), and a burst that congests the network
// (all hosts to one) is delivered in full. A channel count other than
// the ports' is refused when the session is built, naming both keys.
func TestTransTInjectionPorts(t *testing.T) {
	const perHost, end = 80, 5 * des.Millisecond
	c := withDelivery(deliveryNet(t, "torus4x4"), nic.DeliveryAdaptiveOOO, "", injection.Unlimited)
	c.Routing.Mode = "adaptive"
	c.NIC.InjectionControl.Policy = injection.TransT
	c.NIC.InjectionControl.U1 = 1.2
	c.NIC.InjectionQueues.Count, c.NIC.InjectionQueues.Mode, c.NIC.InjectionQueues.Select = 4, injection.Physical, "sh"
	s, err := model.NewSession(c.Topology, c.Routing, c.Fabric, c.NIC, 0, end, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Net.PortGated() {
		t.Fatal("Trans-t with four physical injection queues does not gate the ports")
	}
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
	// The gate's decisions themselves are TestTransTPorts' (package
	// injection). Under this burst with four queues the gate refuses
	// nothing, ports or not; with one queue it does
	// (TestGateEveryDeliveryMode).
	t.Logf("refusals %d, delivered %d", s.Net.GateRefusals(), done)
	c.NIC.InjectionControl.Channels = 2
	_, err = model.NewSession(c.Topology, c.Routing, c.Fabric, c.NIC, 0, end, 0)
	if err == nil || !strings.Contains(err.Error(), "nic.injection_control.channels 2 but nic.injection_queues.count 4") {
		t.Errorf("2 channels on 4 ports: %v", err)
	}
}
