package model

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/internal/units"
	"github.com/fabemu/fabemu/nic"
)

// Preset is a named configuration reproducing a paper's setup.
type Preset struct {
	Name        string
	Description string
	Source      string // paper and section
	Config      SimConfig
}

// base is the InfiniBand model of paper 004 §4.1 with uniform traffic.
func base() SimConfig {
	return SimConfig{
		Model: Model{
			Topology: topo.DefaultConfig(topo.KindTorus),
			Routing:  route.DefaultConfig(),
			Fabric:   fabric.DefaultConfig(),
			NIC:      nic.DefaultConfig(),
		},
		Traffic: DefaultTrafficConfig(),
		Run:     RunConfig{Seed: 1, Duration: 1 * des.Millisecond, Warmup: 100 * des.Microsecond},
	}
}

func torus(k []int, hosts int) topo.Config {
	t := topo.DefaultConfig(topo.KindTorus)
	t.K, t.HostsPerSwitch, t.Ports = k, hosts, 0
	return t
}

func irregular(switches int) topo.Config {
	t := topo.DefaultConfig(topo.KindIrregular)
	t.Switches, t.Ports, t.HostsPerSwitch, t.Seed = switches, 8, 4, 1
	return t
}

func minNet(hosts, radix int) topo.Config {
	t := topo.DefaultConfig(topo.KindMIN)
	t.Hosts, t.MINRadix, t.Stages = hosts, radix, 0
	return t
}

// recn sets the switch of paper 000 §4.1: 8 Gb/s serial links, a 12 Gb/s
// crossbar, 128 KB memories at input and output ports, 64-byte packets.
func recn(c SimConfig) SimConfig {
	c.Fabric.LinkRate = 8_000_000_000
	c.Fabric.LineCoding = "none"
	c.Fabric.CrossbarSpeedup = 1.5
	c.Fabric.InputBuffer = 128 * 1024
	c.Fabric.OutputBuffer = 128 * 1024
	// §4.1: "When VOQ policies are used, the total memory size per port is
	// equally divided among all the established queues", with credits per
	// queue (the rows that pick voqsw, 4q or voqnet; recn shares).
	c.Fabric.VOQMemory = "partitioned"
	// §4.1's end node: an admittance queue per destination, round robin
	// into the injection queue (nic/admittance.go).
	c.NIC.Model = "admittance"
	c.NIC.HeaderBytes = 0
	c.Traffic.Sizes = "64"
	return c
}

// recnIQ sets the input-queued switch of paper 003 §4.2: 1 GB/s links,
// 4 KB input memory in 64-byte slots, no output buffers, 64-byte packets.
func recnIQ(c SimConfig) SimConfig {
	c.Fabric.LinkRate = 8_000_000_000
	c.Fabric.LineCoding = "none"
	c.Fabric.InputBuffer = 4 * 1024
	c.Fabric.Switch = "iq"
	c.Fabric.OutputBuffer = 0
	c.Fabric.CreditBlock = 64
	// The thesis' end node injects "at the maximum link rate" (§2.7)
	// with credits and Xon/Xoff (ch. 3) and says nothing of its queues;
	// its figures' collapse of every organisation without RECN-IQ under
	// a hot spot (Figs. 2.21, 4.10) is what one injection queue per end
	// node gives, so it keeps the fifo end node (docs/validation.md shows
	// both).
	c.NIC.HeaderBytes = 0
	c.Traffic.Sizes = "64"
	return c
}

func with(c SimConfig, f func(*SimConfig)) SimConfig { f(&c); return c }

// bubbleRouter sets the adaptive bubble router of paper 002 §3: fully
// adaptive routing on two adaptive lanes with a dimension-order escape
// lane under bubble flow control, and input queues of 8 packets per lane
// (§3: "The queue capacity of each input port is 8 packets") with no
// output buffers (the input-queued switch iq: the crossbar feeds the link,
// so "the requested virtual channel" whose room the bubble and restrictive
// injection check is the next router's input queue, as in the paper's
// Figure 2). Buffers count packet slots under bubble flow control; a slot
// of the preset's largest packet is 5 credit blocks (320 bytes), so a lane
// of 8 slots is 2560 bytes.
func bubbleRouter(c SimConfig) SimConfig {
	c.Routing.Mode = route.Adaptive
	c.Routing.AdaptiveVLs = 2
	c.Routing.Escape = "bubble"
	c.Fabric.Switch = "iq"
	c.Fabric.EscapeVLBuffer = 8 * 320
	c.Fabric.InputBuffer = 3 * 8 * 320
	c.Fabric.OutputBuffer = 0
	return c
}

// Phit is the phit of the adaptive bubble router presets: one credit, and
// what a link carries per cycle (paper 002 §3: "A phit is the number of
// bits that are conveyed in parallel through a physical link"), so an
// accepted load as a fraction of the host link is the paper's
// phits/node/cycle.
const Phit = 16

// adaptiveBubbleRouter sets the adaptive bubble router of paper 002 §3 in
// the paper's units. Routing: fully adaptive on two adaptive lanes over a
// dimension-order escape lane under bubble flow control ("three input
// buffers, corresponding to one escape virtual channel and two fully
// adaptive VCs"), the selection preferring "adaptive VCs in the same ring;
// if none is available ... an adaptive VC in another profitable
// dimension. The escape network is used as the last resource"
// (route.SameRing). Arbitration: "a random arbitration policy" among the
// inputs, injection included (fabric.allocator random). Sizes in phits of
// 16 bytes, one credit each: "Packets are of fixed size: 16 phits" (no
// header bytes on top), "The queue capacity of each input port is 8
// packets, or 128 phits" per lane (virtual cut-through needs 16 free
// phits, the bubble 32), and "Injection channels at the interface side
// have an additional buffer of 128 phits": an injection queue of 8
// packets entering the switch on one lane (one FIFO, as the paper's
// injection port). Input-queued switches (iq: the crossbar feeds the link,
// Figure 2). The link keeps the IBA rate (a 16-byte phit is then 64 ns);
// flow control costs 1 byte per credit return on the reverse link, the
// least the model allows (the paper's router signals it beside the data).
func adaptiveBubbleRouter(c SimConfig) SimConfig {
	c.Routing.Mode = route.Adaptive
	c.Routing.AdaptiveVLs = 2
	c.Routing.Escape = "bubble"
	c.Routing.Selection = route.SameRing
	c.Fabric.Switch = "iq"
	c.Fabric.Allocator = "random"
	c.Fabric.CreditBlock = Phit
	c.Fabric.CreditPacket = 1
	c.Fabric.EscapeVLBuffer = 128 * Phit
	c.Fabric.InputBuffer = 3 * 128 * Phit
	c.Fabric.OutputBuffer = 0
	c.NIC.HeaderBytes = 0
	c.NIC.MTU = 16 * Phit
	c.NIC.InjectionQueues.Capacity = 8
	c.NIC.InjectionQueues.OneLane = true
	c.Traffic.Sizes = fmt.Sprint(16 * Phit)
	return c
}

// Presets returns every preset, sorted by name.
func Presets() []Preset {
	ps := []Preset{
		{"torus8x8-dor", "8x8 torus, one host per switch, dimension-order routing with dateline lanes, IBA links, 256-byte packets",
			"fabemu default; IBA model of paper 004 §4.1",
			with(base(), func(c *SimConfig) { c.Topology = torus([]int{8, 8}, 1) })},
		{"paper004-torus4x4", "4x4 torus, 8 hosts per switch, up*/down* escape, IBA model, 512-byte MTU",
			"paper 004 §4.1, Table 2",
			with(base(), func(c *SimConfig) {
				c.Topology = torus([]int{4, 4}, 8)
				c.Routing.Escape = "updown"
				c.NIC.MTU = 512
			})},
		{"paper004-irregular16", "random irregular network of 16 8-port switches, 4 hosts each, up*/down* escape, 256-byte packets",
			"paper 004 §4.1, Figure 5",
			with(base(), func(c *SimConfig) { c.Topology = irregular(16) })},
		{"paper004-irregular32", "random irregular network of 32 8-port switches, 4 hosts each, up*/down* escape, 512-byte MTU",
			"paper 004 §4.1, Table 1",
			with(base(), func(c *SimConfig) { c.Topology = irregular(32); c.NIC.MTU = 512 })},
		{"paper004-irregular64", "random irregular network of 64 8-port switches, 4 hosts each, up*/down* escape, 256-byte packets",
			"paper 004 §4.1, Figure 5",
			with(base(), func(c *SimConfig) { c.Topology = irregular(64) })},
		{"paper000-min64", "bidirectional MIN, 64 hosts, 48 8-port switches in 3 stages (perfect shuffle), RECN switch parameters, 64-byte packets",
			"paper 000 §4.1",
			recn(with(base(), func(c *SimConfig) { c.Topology = minNet(64, 8) }))},
		{"paper000-min256", "bidirectional MIN, 256 hosts, 256 8-port switches in 4 stages, RECN switch parameters",
			"paper 000 §4.1",
			recn(with(base(), func(c *SimConfig) { c.Topology = minNet(256, 8) }))},
		{"paper000-min512", "bidirectional MIN, 512 hosts, 640 8-port switches in 5 stages, RECN switch parameters",
			"paper 000 §4.1",
			recn(with(base(), func(c *SimConfig) { c.Topology = minNet(512, 8) }))},
		{"paper003-min256-8x8", "256-host MIN of 8x8 input-queued switches, 1 GB/s links, 4 KB input memories, 64-byte packets",
			"paper 003 §4.2",
			recnIQ(with(base(), func(c *SimConfig) { c.Topology = minNet(256, 8) }))},
		{"paper003-min256-32x32", "256-host MIN of 32x32 input-queued switches, 1 GB/s links, 4 KB input memories, 64-byte packets",
			"paper 003 §4.2",
			recnIQ(with(base(), func(c *SimConfig) { c.Topology = minNet(256, 32) }))},
		{"paper001-8ary3cube-vct", "8-ary 3-cube (512 hosts), virtual cut-through approximation of paper 001's router: adaptive routing with dateline escape lanes, 256-byte (16-flit) messages, Poisson arrivals, one injection link (paper001-8ary3cube is the paper's router)",
			"paper 001 §4.1",
			with(base(), func(c *SimConfig) {
				c.Topology = torus([]int{8, 8, 8}, 1)
				c.Routing.Mode = route.Adaptive
				c.Traffic.Process = "exponential"
			})},
		{"paper001-16ary3cube-vct", "16-ary 3-cube (4096 hosts), virtual cut-through approximation of paper 001's router: adaptive routing with dateline escape lanes, 256-byte (16-flit) messages, Poisson arrivals, one injection link (paper001-16ary3cube is the paper's router)",
			"paper 001 §4.1",
			with(base(), func(c *SimConfig) {
				c.Topology = torus([]int{16, 16, 16}, 1)
				c.Routing.Mode = route.Adaptive
				c.Traffic.Process = "exponential"
				c.Run.Duration, c.Run.Warmup = 100*des.Microsecond, 20*des.Microsecond
			})},
		{"paper002-torus16x16", "16x16 torus, the adaptive bubble router of paper 002: 1 escape lane (dimension order, bubble flow control) and 2 adaptive lanes, adaptive lanes of the same ring first, random arbitration, 16-phit packets, 128-phit queues per lane, 8-packet injection queue",
			"paper 002 §3, §4.2",
			adaptiveBubbleRouter(with(base(), func(c *SimConfig) { c.Topology = torus([]int{16, 16}, 1) }))},
		{"paper002-torus32x32", "32x32 torus, the adaptive bubble router of paper 002: 1 escape lane (dimension order, bubble flow control) and 2 adaptive lanes, adaptive lanes of the same ring first, random arbitration, 16-phit packets, 128-phit queues per lane, 8-packet injection queue",
			"paper 002 §3, §4.3",
			adaptiveBubbleRouter(with(base(), func(c *SimConfig) { c.Topology = torus([]int{32, 32}, 1) }))},
		{"paper002-torus16x16-dateline", "16x16 torus, fully adaptive (two adaptive lanes) with a dimension-order escape on dateline lanes, cioq switches, round robin, IBA links and 256-byte packets, buffers of 8 packets per lane (the first approximation of paper 002's router)",
			"paper 002 §4",
			with(base(), func(c *SimConfig) {
				c.Topology = torus([]int{16, 16}, 1)
				c.Routing.Mode = route.Adaptive
				c.Routing.AdaptiveVLs = 2
				c.Fabric.EscapeVLBuffer = 2304
				c.Fabric.InputBuffer = 4 * 2304
				c.Fabric.OutputBuffer = 4 * 2304
			})},
		{"paper002-torus32x32-dateline", "32x32 torus, fully adaptive (two adaptive lanes) with a dimension-order escape on dateline lanes, cioq switches, round robin, IBA links and 256-byte packets, buffers of 8 packets per lane (the first approximation of paper 002's router)",
			"paper 002 §4",
			with(base(), func(c *SimConfig) {
				c.Topology = torus([]int{32, 32}, 1)
				c.Routing.Mode = route.Adaptive
				c.Routing.AdaptiveVLs = 2
				c.Fabric.EscapeVLBuffer = 2304
				c.Fabric.InputBuffer = 4 * 2304
				c.Fabric.OutputBuffer = 4 * 2304
			})},
		{"ib-edr-pair", "two hosts on two switches joined by one link, InfiniBand EDR 4x links (100 Gb/s of data, 64b/66b), 4096-byte MTU, 256 KB buffers: today's hardware for live TAP traffic",
			"InfiniBand EDR 4x (IBTA Vol. 2 rel. 1.3); fabemu daemon (docs/daemon.md)",
			ibLive(with(base(), func(c *SimConfig) { c.Topology = meshNet([]int{2}, 1) }), 103_125_000_000)},
		{"ib-edr-square", "2x2 mesh, 2 hosts per switch, InfiniBand EDR 4x links (100 Gb/s of data), 4096-byte MTU, 256 KB buffers: two minimal paths between opposite corners for live TAP traffic",
			"InfiniBand EDR 4x (IBTA Vol. 2 rel. 1.3); fabemu daemon (docs/daemon.md)",
			ibLive(with(base(), func(c *SimConfig) { c.Topology = meshNet([]int{2, 2}, 2) }), 103_125_000_000)},
		{"ib-edr-torus8x8", "8x8 torus, one host per switch, dimension-order routing, InfiniBand EDR 4x links (100 Gb/s of data), 4096-byte MTU, 256 KB buffers: 64 hosts of live TAP traffic",
			"InfiniBand EDR 4x (IBTA Vol. 2 rel. 1.3); fabemu daemon (docs/daemon.md)",
			ibLive(with(base(), func(c *SimConfig) { c.Topology = torus([]int{8, 8}, 1) }), 103_125_000_000)},
		{"ib-sdr-pair", "two hosts on two switches joined by one link, InfiniBand SDR 4x links (10 Gb/s signalling, 8 Gb/s of data, 8b/10b), 4096-byte MTU, 256 KB buffers: the live-traffic family at a rate a 2-core machine runs in real time (fabemu run --demo 2)",
			"InfiniBand SDR 4x (IBTA Vol. 2 rel. 1.0); fabemu daemon (docs/daemon.md)",
			ibCoded(ibLive(with(base(), func(c *SimConfig) { c.Topology = meshNet([]int{2}, 1) }), 10_000_000_000), "8b10b")},
		{"ib-hdr-pair", "two hosts on two switches joined by one link, InfiniBand HDR 4x links (200 Gb/s of data, 64b/66b), 4096-byte MTU, 256 KB buffers: today's hardware for live TAP traffic",
			"InfiniBand HDR 4x (IBTA Vol. 2 rel. 1.4); fabemu daemon (docs/daemon.md)",
			ibLive(with(base(), func(c *SimConfig) { c.Topology = meshNet([]int{2}, 1) }), 206_250_000_000)},
		{"paper002-torus16x16-bubble", "16x16 torus, a byte-sized approximation of the adaptive bubble router: input-queued switches, one escape lane with bubble flow control (no dateline) and two adaptive lanes, 8 packet slots of 320 bytes per lane, round robin, IBA links and headers (paper002-torus16x16 is the paper's router)",
			"paper 002 §3, §4.2",
			bubbleRouter(with(base(), func(c *SimConfig) { c.Topology = torus([]int{16, 16}, 1) }))},
		{"paper002-torus32x32-bubble", "32x32 torus, a byte-sized approximation of the adaptive bubble router: input-queued switches, one escape lane with bubble flow control (no dateline) and two adaptive lanes, 8 packet slots of 320 bytes per lane, round robin, IBA links and headers (paper002-torus32x32 is the paper's router)",
			"paper 002 §3, §4.3",
			bubbleRouter(with(base(), func(c *SimConfig) { c.Topology = torus([]int{32, 32}, 1) }))},
		{"tap-pair-10g", "two switches joined by one link, 2 hosts each, 10 Gb/s links, 4096-byte MTU, 64 KB buffers: a fast fabric for live TAP traffic (one path)",
			"fabemu daemon tests and benchmark (docs/daemon.md)",
			tapFabric(with(base(), func(c *SimConfig) { c.Topology = meshNet([]int{2}, 2) }))},
		{"tap-square-10g", "2x2 mesh, 2 hosts per switch, 10 Gb/s links, 4096-byte MTU, 64 KB buffers: two minimal paths between opposite corners, for adaptive routing with live TAP traffic",
			"fabemu daemon tests (docs/daemon.md)",
			tapFabric(with(base(), func(c *SimConfig) { c.Topology = meshNet([]int{2, 2}, 2) }))},
	}
	ps = append(ps, wormholePresets()...)
	ps = append(ps, paper001Presets()...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

// LookupPreset returns the named preset's configuration.
func LookupPreset(name string) (SimConfig, error) {
	var names []string
	for _, p := range Presets() {
		if p.Name == name {
			return p.Config, nil
		}
		names = append(names, p.Name)
	}
	return SimConfig{}, fmt.Errorf("unknown preset %q; presets: %s", name, strings.Join(names, ", "))
}

func meshNet(k []int, hosts int) topo.Config {
	t := topo.DefaultConfig(topo.KindMesh)
	t.K, t.HostsPerSwitch, t.Ports = k, hosts, 0
	return t
}

// ibLive sets a fabric of today's InfiniBand for live TAP traffic: 4x
// links signalling at rate bits/s with the 64b/66b line code (EDR: 4 x
// 25.78125 Gb/s, 100 Gb/s of data; HDR: 200 Gb/s of data), the largest
// InfiniBand MTU, and buffers of 64 such packets, so a 64 KB super-frame
// from a TAP with offloads fits in every buffer on its path.
func ibLive(c SimConfig, rate int64) SimConfig {
	c.Fabric.LinkRate = units.BitRate(rate)
	c.Fabric.LineCoding = "64b66b"
	c.Fabric.LinkLength = 2
	c.Fabric.InputBuffer = 256 * 1024
	c.Fabric.OutputBuffer = 256 * 1024
	c.Fabric.NICBuffer = 256 * 1024
	c.NIC.MTU = 4096
	c.Traffic.Sizes = "4096"
	c.Traffic.Load = 0.05
	return c
}

func ibCoded(c SimConfig, coding string) SimConfig { c.Fabric.LineCoding = coding; return c }

// tapFabric sets a fabric fast enough to carry live TAP traffic: 10 Gb/s
// links without line-code overhead, the largest InfiniBand MTU (a 1514-byte
// Ethernet frame is one packet) and buffers of several such packets.
func tapFabric(c SimConfig) SimConfig {
	c.Fabric.LinkRate = 10_000_000_000
	c.Fabric.LineCoding = "none"
	c.Fabric.LinkLength = 2
	c.Fabric.InputBuffer = 64 * 1024
	c.Fabric.OutputBuffer = 64 * 1024
	c.Fabric.NICBuffer = 64 * 1024
	c.NIC.MTU = 4096
	c.Traffic.Sizes = "4096"
	c.Traffic.Load = 0.05
	return c
}
