package nic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
)

// queuesNet is a torus of k x k switches with one host each, adaptive
// routing, and the given injection interface.
func queuesNet(t testing.TB, k, count int, mode injection.QueueMode, sel string) model.SimConfig {
	t.Helper()
	c, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	tc := topo.DefaultConfig(topo.KindTorus)
	tc.K, tc.HostsPerSwitch, tc.Ports = []int{k, k}, 1, 0
	c.Topology = tc
	c.Routing.Mode = "adaptive"
	c.NIC.InjectionQueues = injection.QueuesConfig{Count: count, Mode: mode, Select: sel}
	return c
}

// TestInjectionQueuesRun: every selection policy, on virtual and
// physical channels, past saturation: every invariant holds (packets and
// credits conserved, buffers within capacity, no deadlock) and, under
// deterministic routing with the policies that keep a flow in one queue,
// every packet arrives in order. The adaptive physical runs also send
// every injected packet on one lane (one_lane) from queues of two packets.
func TestInjectionQueuesRun(t *testing.T) {
	for _, p := range injection.SelectPolicies() {
		for _, mode := range []injection.QueueMode{injection.Virtual, injection.Physical} {
			routings := []string{"adaptive"}
			if p.FlowOrder {
				routings = append(routings, "deterministic")
			}
			for i, r := range routings {
				oneLane := i == 0 && mode == injection.Physical // one FIFO per injection port
				t.Run(fmt.Sprintf("%s/%s/%s/one-lane=%v", p.Name, mode, r, oneLane), func(t *testing.T) {
					c := queuesNet(t, 4, 4, mode, p.Name)
					c.NIC.InjectionQueues.OneLane = oneLane
					if oneLane {
						c.NIC.InjectionQueues.Capacity = 2 // and a stalling source
					}
					c.Routing.Mode = route.Mode(r)
					c.NIC.Delivery.Mode = ""
					c.Traffic.Load = 1.0
					c.Run.Warmup, c.Run.Duration = 2*des.Microsecond, 8*des.Microsecond
					s := runOK(t, c)
					if s.Packets.Delivered == 0 {
						t.Fatal("nothing delivered")
					}
					if r == "deterministic" && (s.Invariants.InOrder == nil || !*s.Invariants.InOrder) {
						t.Errorf("deterministic routing with %s: order not kept", p.Name)
					}
				})
			}
		}
	}
}

// TestPhysicalInjectionBandwidth: one host sends to its four neighbours
// on a 4x4 torus, one packet to each in turn, with lpath placing each
// direction in its own queue. On four physical channels the four
// directions inject at once, so the burst takes about a quarter of the
// time it takes on one link; four virtual channels share one link and take
// as long as a single queue (paper 002 §2: "the injection bandwidth grows
// with the number of ports" only on physical channels).
func TestPhysicalInjectionBandwidth(t *testing.T) {
	const perDir = 32
	// Host s sits on switch s; switch (x, y) is x + 4y.
	neighbours := []int{1, 3, 4, 12} // +X, -X, +Y, -Y of switch 0
	burst := func(count int, mode injection.QueueMode) des.Time {
		c := queuesNet(t, 4, count, mode, "lpath")
		s, err := model.NewSession(c.Topology, c.Routing, c.Fabric, c.NIC, 0, des.Millisecond, 0)
		if err != nil {
			t.Fatal(err)
		}
		var last des.Time
		for k := 0; k < perDir; k++ {
			for _, d := range neighbours {
				m := s.Net.NewMessage()
				m.Src, m.Dst, m.Bytes = 0, d, 256
				m.Done = func(_ *nic.Message, at des.Time) { last = max(last, at) }
				s.Net.Send(m)
			}
		}
		if err := s.RunUntil(des.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
		if got := s.Metrics.DelPackets; got != 4*perDir {
			t.Fatalf("%d of %d packets delivered", got, 4*perDir)
		}
		if iv := s.Invariants(); !iv.OK {
			t.Fatalf("invariants: %v", iv.Violations)
		}
		return last
	}
	one := burst(1, injection.Virtual)
	virt := burst(4, injection.Virtual)
	phys := burst(4, injection.Physical)
	t.Logf("burst of %d packets: 1 queue %v, 4 virtual %v, 4 physical %v", 4*perDir, one, virt, phys)
	if virt < one*9/10 {
		t.Errorf("4 virtual channels took %v, less than one link's %v: they do not share it", virt, one)
	}
	if phys > one*4/10 {
		t.Errorf("4 physical channels took %v, not about a quarter of one link's %v", phys, one)
	}
}

// TestInjectionQueuesRefused: configurations the NIC cannot honour are
// refused with a message naming the key.
func TestInjectionQueuesRefused(t *testing.T) {
	irr := deliveryNet(t, "irregular8")
	irr.Routing.Mode = "adaptive"
	irr.NIC.InjectionQueues = injection.QueuesConfig{Count: 4, Mode: injection.Physical, Select: "lpath"}
	det := queuesNet(t, 4, 4, injection.Virtual, "sh")
	det.Routing.Mode = "deterministic"
	inorder := withDelivery(queuesNet(t, 4, 4, injection.Virtual, "lpath"), nic.DeliveryAdaptiveInOrder, "unlimited", injection.Unlimited)
	for name, c := range map[string]model.SimConfig{"lpath-irregular": irr, "sh-deterministic": det, "inorder": inorder} {
		t.Run(name, func(t *testing.T) {
			err := c.Validate()
			if err == nil {
				_, err = model.NewSession(c.Topology, c.Routing, c.Fabric, c.NIC, 0, des.Microsecond, 0)
			}
			if err == nil || !strings.Contains(err.Error(), "nic.injection_queues") {
				t.Fatalf("got %v, want an error naming nic.injection_queues", err)
			}
		})
	}
}

// TestQueueCapacityStallsSource: with a bounded queue the source stalls
// when the queue its packet picks is full, and its later packets wait
// behind (paper 002 §2). Host 0 sends four packets to its +X neighbour,
// then one to its -X neighbour, with lpath on physical channels: with
// unbounded queues the -X packet starts at once on its own channel and
// arrives before the second +X packet; with queues of one packet it waits
// until the +X packets ahead of it have entered their queue, after the
// second +X packet arrived.
func TestQueueCapacityStallsSource(t *testing.T) {
	arrivals := func(capacity int) (plusX []des.Time, minusX des.Time) {
		c := queuesNet(t, 4, 4, injection.Physical, "lpath")
		c.NIC.InjectionQueues.Capacity = capacity
		s, err := model.NewSession(c.Topology, c.Routing, c.Fabric, c.NIC, 0, des.Millisecond, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range []int{1, 1, 1, 1, 3} {
			m := s.Net.NewMessage()
			m.Src, m.Dst, m.Bytes = 0, d, 256
			if i < 4 {
				m.Done = func(_ *nic.Message, at des.Time) { plusX = append(plusX, at) }
			} else {
				m.Done = func(_ *nic.Message, at des.Time) { minusX = at }
			}
			s.Net.Send(m)
		}
		if err := s.RunUntil(des.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
		if iv := s.Invariants(); !iv.OK {
			t.Fatalf("invariants: %v", iv.Violations)
		}
		if len(plusX) != 4 || minusX == 0 {
			t.Fatalf("capacity %d: %d +X and -X at %v delivered", capacity, len(plusX), minusX)
		}
		return plusX, minusX
	}
	px, mx := arrivals(0)
	if mx >= px[1] {
		t.Errorf("unbounded queues: -X arrived at %v, not before the second +X at %v", mx, px[1])
	}
	px, mx = arrivals(1)
	if mx <= px[1] {
		t.Errorf("queues of one packet: -X arrived at %v, before the second +X at %v: the source did not stall", mx, px[1])
	}
}

// TestInjectionQueuesEveryArchitecture: the extra injection ports work
// with every switch architecture of the table that lets the fabric run the
// injection links (all but recn and the architectures on RECN-IQ's input
// stage with their NIC SAQs, which are refused with a message; without
// them they run); the source-routed RECN-IQ family takes static selection
// under deterministic routing.
func TestInjectionQueuesEveryArchitecture(t *testing.T) {
	for _, a := range fabric.Architectures() {
		t.Run(a.Name, func(t *testing.T) {
			c := queuesNet(t, 4, 4, injection.Virtual, "shp")
			c.NIC.InjectionQueues.Capacity = 4
			c.Fabric.Switch = a.Name
			if a.Name == "iq" {
				c.Fabric.OutputBuffer = 0
			}
			if a.NeedsDeterministic {
				c.Routing.Mode = route.Deterministic
				c.NIC.InjectionQueues.Select = "static"
			}
			if a.Name == "recn" || strings.HasSuffix(a.Name, "recn-iq") {
				// recn's and RECN-IQ's NICs hold SAQs and run the
				// injection links themselves (paper 000 §3.3, paper 003
				// §3.3.7).
				_, err := model.NewSession(c.Topology, c.Routing, c.Fabric, c.NIC, 0, des.Microsecond, 0)
				if err == nil || !strings.Contains(err.Error(), "one injection port per host") || !strings.Contains(err.Error(), "nic_saqs=-1") {
					t.Fatalf("%s with 4 injection ports: %v, want a refusal", a.Name, err)
				}
				if a.Name == "recn" {
					return
				}
				c.Fabric.RECNIQ.NICSAQs = -1
			}
			c.Traffic.Load = 1.0
			c.Run.Warmup, c.Run.Duration = 2*des.Microsecond, 8*des.Microsecond
			if s := runOK(t, c); s.Packets.Delivered == 0 {
				t.Fatal("nothing delivered")
			}
		})
	}
}
