package nic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/workload/synth"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/injection"
)

// deliveryNet is a small network under high load: a 4x4 torus with two
// hosts per switch, or an irregular network of 8 switches.
func deliveryNet(t testing.TB, net string) model.SimConfig {
	t.Helper()
	c, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	switch net {
	case "torus4x4":
		tc := topo.DefaultConfig(topo.KindTorus)
		tc.K, tc.HostsPerSwitch, tc.Ports = []int{4, 4}, 2, 0
		c.Topology = tc
		c.Routing.Escape = "updown"
	case "irregular8":
		tc := topo.DefaultConfig(topo.KindIrregular)
		tc.Switches, tc.Ports, tc.HostsPerSwitch, tc.Seed = 8, 8, 4, 3
		c.Topology = tc
	default:
		t.Fatalf("unknown net %q", net)
	}
	c.Traffic.Load = 0.9
	c.Run.Warmup = 10 * des.Microsecond
	c.Run.Duration = 120 * des.Microsecond
	return c
}

func withDelivery(c model.SimConfig, mode nic.DeliveryMode, mem string, pol injection.Kind) model.SimConfig {
	c.NIC.Delivery.Mode = mode
	c.NIC.Delivery.Reorder = mem
	c.NIC.Delivery.Injection.Policy = pol
	return c
}

func runOK(t *testing.T, c model.SimConfig) *synth.Summary {
	t.Helper()
	s, err := synth.RunSim(c, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !s.Invariants.OK {
		t.Fatalf("invariants violated: %v", s.Invariants.Violations)
	}
	return s
}

// marshalModel is the summary's JSON without the machine-dependent Run.
func marshalModel(t *testing.T, s *synth.Summary) []byte {
	t.Helper()
	s.Run = nil
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeliveryModes runs every mode, memory and policy at high load on
// both networks and checks the invariants: conservation with control
// packets and resends, credits, and exactly-once in-order delivery in
// adaptive-inorder, also with a buffer smaller than one packet.
func TestDeliveryModes(t *testing.T) {
	type run struct {
		mode nic.DeliveryMode
		mem  string
		pol  injection.Kind
	}
	runs := []run{
		{nic.DeliveryDeterministic, "", ""},
		{nic.DeliveryAdaptiveOOO, "", ""},
		{nic.DeliveryAdaptiveInOrder, "static:2KiB", injection.LI},
		{nic.DeliveryAdaptiveInOrder, "static:128B", injection.LI},
		{nic.DeliveryAdaptiveInOrder, "static:2KiB", injection.LW},
		{nic.DeliveryAdaptiveInOrder, "static:128B", injection.LW},
		{nic.DeliveryAdaptiveInOrder, "static:2KiB", injection.Unlimited},
		{nic.DeliveryAdaptiveInOrder, "static:128B", injection.Unlimited},
		{nic.DeliveryAdaptiveInOrder, "dynamic:4KiB,cap=1KiB", injection.LI},
		{nic.DeliveryAdaptiveInOrder, "unlimited", injection.LI},
	}
	for _, net := range []string{"torus4x4", "irregular8"} {
		for _, pattern := range []string{"bitrev", "uniform"} {
			for _, r := range runs {
				name := fmt.Sprintf("%s/%s/%s/%s/%s", net, pattern, r.mode, r.mem, r.pol)
				t.Run(name, func(t *testing.T) {
					c := withDelivery(deliveryNet(t, net), r.mode, r.mem, r.pol)
					c.Traffic.Pattern = pattern
					s := runOK(t, c)
					d := s.DeliveryReport
					if d.Delivery != string(r.mode) {
						t.Errorf("delivery %q, want %q", d.Delivery, r.mode)
					}
					wantRouting := "adaptive"
					if r.mode == nic.DeliveryDeterministic {
						wantRouting = "deterministic"
					}
					if s.Routing.Mode != wantRouting || string(s.Config.Routing.Mode) != wantRouting {
						t.Errorf("routing %q (config %q), want %q", s.Routing.Mode, s.Config.Routing.Mode, wantRouting)
					}
					if s.Packets.Delivered == 0 {
						t.Fatal("nothing delivered")
					}
					switch r.mode {
					case nic.DeliveryAdaptiveInOrder:
						if s.Invariants.InOrder == nil || !*s.Invariants.InOrder {
							t.Error("in-order invariant not checked")
						}
						if d.OrderAfter == nil || d.OrderAfter.Reordered != 0 || d.OrderAfter.Duplicates != 0 {
							t.Errorf("after rearrangement: %+v", d.OrderAfter)
						}
						if d.Acks == 0 || d.WasteTrafficPct <= 0 {
							t.Errorf("no control traffic: acks %d waste %g", d.Acks, d.WasteTrafficPct)
						}
						if d.Fabric.Injected != d.Fabric.Delivered+d.Fabric.InFlight {
							t.Errorf("fabric: injected %d != delivered %d + in flight %d", d.Fabric.Injected, d.Fabric.Delivered, d.Fabric.InFlight)
						}
						if r.mem == "static:128B" && (d.MBSBytes != 0 || d.MMSBytes != 0) {
							t.Errorf("a 128-byte buffer stored a packet: MBS %d MMS %d", d.MBSBytes, d.MMSBytes)
						}
						if r.mem == "unlimited" && (d.RejectedPackets != 0 || d.Nacks != 0 || d.ResentPackets != 0) {
							t.Errorf("unlimited memory rejected: %d rejected, %d NACKs, %d resent", d.RejectedPackets, d.Nacks, d.ResentPackets)
						}
						if d.ResentPackets > d.RejectedPackets || d.Nacks > d.RejectedPackets {
							t.Errorf("resent %d / NACKs %d > rejected %d", d.ResentPackets, d.Nacks, d.RejectedPackets)
						}
					default:
						if d.WasteTrafficPct != 0 || d.Acks != 0 || d.Nacks != 0 || d.ResentPackets != 0 {
							t.Errorf("%s has control traffic: %+v", r.mode, d)
						}
					}
					if r.mode != nic.DeliveryDeterministic && (d.Order == nil || d.Order.Stream == "" || d.Order.Received == 0) {
						t.Errorf("no order report: %+v", d.Order)
					}
				})
			}
		}
	}
}

// TestInOrderSmallBuffersWaste: with small buffers at high load packets
// are rejected and resent, so waste traffic beyond the ACKs appears.
func TestInOrderSmallBuffersWaste(t *testing.T) {
	c := withDelivery(deliveryNet(t, "torus4x4"), nic.DeliveryAdaptiveInOrder, "static:128B", injection.LI)
	c.Traffic.Pattern = "bitrev"
	s := runOK(t, c)
	d := s.DeliveryReport
	if d.RejectedPackets == 0 || d.ResentPackets == 0 || d.Bytes.Resent == 0 || d.LITimeNs <= 0 || d.LIEntries == 0 {
		t.Fatalf("no rejections at static:128B: %+v", d)
	}
	ackOnly := 100 * float64(d.Bytes.Ack) / float64(d.Bytes.FirstSend+d.Bytes.Resent+d.Bytes.Ack+d.Bytes.Nack)
	if d.WasteTrafficPct <= ackOnly {
		t.Errorf("waste %g%% not above the ACK share %g%%", d.WasteTrafficPct, ackOnly)
	}
}

// TestPSNWraparound runs with 8-bit PSNs long enough for every busy
// connection's numbers to wrap many times.
func TestPSNWraparound(t *testing.T) {
	for _, bits := range []uint{8, 4} {
		for _, mem := range []string{"static:2KiB", "static:128B", "unlimited"} {
			t.Run(fmt.Sprintf("%dbit/%s", bits, mem), func(t *testing.T) {
				c := withDelivery(deliveryNet(t, "torus4x4"), nic.DeliveryAdaptiveInOrder, mem, injection.LI)
				c.NIC.Delivery.PSNBits = bits
				c.Traffic.Pattern = "bitrev" // one busy connection per host
				c.Run.Duration = 2 * des.Millisecond
				s := runOK(t, c)
				perConn := s.Packets.Delivered / uint64(s.DeliveryReport.Connections)
				if perConn < 2<<bits {
					t.Fatalf("only %d packets per connection: %d-bit PSNs did not wrap twice", perConn, bits)
				}
				if s.DeliveryReport.PSNBits != bits {
					t.Errorf("psn_bits %d", s.DeliveryReport.PSNBits)
				}
			})
		}
	}
	// 3-bit PSNs: at most 3 packets unacknowledged per connection.
	c := withDelivery(deliveryNet(t, "irregular8"), nic.DeliveryAdaptiveInOrder, "static:2KiB", injection.LI)
	c.NIC.Delivery.PSNBits = 3
	runOK(t, c)
}

// TestDeliveryDeterminism: for every injection policy of the table, the
// run holds its invariants and the same config and seed give the same
// summary.
func TestDeliveryDeterminism(t *testing.T) {
	for _, pol := range injection.Kinds() {
		c := withDelivery(deliveryNet(t, "irregular8"), nic.DeliveryAdaptiveInOrder, "static:2KiB", pol)
		a := marshalModel(t, runOK(t, c))
		b := marshalModel(t, runOK(t, c))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two runs differ", pol)
		}
	}
}

// TestDeliveryAutoUnchanged: with no delivery mode the run follows the
// routing mode and gives the same results as naming the matching mode.
func TestDeliveryAutoUnchanged(t *testing.T) {
	for _, rm := range []route.Mode{route.Deterministic, route.Adaptive} {
		c := deliveryNet(t, "irregular8")
		c.Routing.Mode = rm
		auto := runOK(t, c)
		named := c
		named.NIC.Delivery.Mode = nic.DeliveryDeterministic
		if rm == route.Adaptive {
			named.NIC.Delivery.Mode = nic.DeliveryAdaptiveOOO
		}
		n := runOK(t, named)
		if auto.Delivery != string(named.NIC.Delivery.Mode) {
			t.Errorf("auto with %s routing gave delivery %q", rm, auto.Delivery)
		}
		a, b := marshalModel(t, auto), marshalModel(t, n)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: auto and named delivery differ", rm)
		}
	}
	// Delivery forces routing: adaptive-ooo over a deterministic routing config.
	c := deliveryNet(t, "irregular8")
	c.NIC.Delivery.Mode = nic.DeliveryAdaptiveOOO
	if s := runOK(t, c); s.Routing.Mode != "adaptive" {
		t.Errorf("adaptive-ooo ran with %s routing", s.Routing.Mode)
	}
}

func TestDeliveryConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(*nic.DeliveryConfig)
		want string
	}{
		{"mode", func(d *nic.DeliveryConfig) { d.Mode = "adaptive" }, `delivery mode "adaptive"`},
		{"reorder", func(d *nic.DeliveryConfig) { d.Reorder = "static:2XB" }, "nic.delivery.reorder"},
		{"policy", func(d *nic.DeliveryConfig) { d.Injection.Policy = "trans-t" }, `injection.policy "trans-t"`},
		{"lw dynamic", func(d *nic.DeliveryConfig) {
			d.Mode, d.Injection.Policy, d.Reorder = nic.DeliveryAdaptiveInOrder, injection.LW, "dynamic:256KiB,cap=128KiB"
		}, "lw needs static reorder memory"},
		{"psn bits", func(d *nic.DeliveryConfig) { d.PSNBits = 40 }, "psn_bits"},
		{"ack bytes", func(d *nic.DeliveryConfig) { d.AckBytes = -1 }, "ack_bytes"},
		{"order window", func(d *nic.DeliveryConfig) { d.OrderWindow = -5 }, "order_window"},
	}
	for _, c := range cases {
		d := nic.DefaultDeliveryConfig()
		c.edit(&d)
		err := d.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	if err := (nic.DeliveryConfig{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	if err := nic.DefaultDeliveryConfig().Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	c := withDelivery(deliveryNet(t, "irregular8"), nic.DeliveryAdaptiveInOrder, "dynamic:256KiB,cap=128KiB", injection.LW)
	if _, err := synth.RunSim(c, nil); err == nil || !strings.Contains(err.Error(), "lw needs static") {
		t.Errorf("RunSim with lw and dynamic memory: %v", err)
	}
}
