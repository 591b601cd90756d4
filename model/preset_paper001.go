package model

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/injection"
)

// paper001Presets are paper 001's networks on the paper's router
// (paper001Router); the virtual cut-through approximations they replace
// keep their old names with -vct.
func paper001Presets() []Preset {
	return []Preset{
		{"paper001-8ary3cube", "8-ary 3-cube (512 hosts), paper 001's router: wormhole switching, TFAR with 3 virtual channels per physical channel and software deadlock recovery (detection threshold 32 cycles), 16-flit messages of 16-byte flits, lanes of 4 flits, 4 physical injection channels, Poisson arrivals",
			"paper 001 §4.1",
			paper001Router(with(base(), func(c *SimConfig) { c.Topology = torus([]int{8, 8, 8}, 1) }), 3)},
		{"paper001-8ary3cube-4vc", "8-ary 3-cube (512 hosts), paper 001's router with 4 virtual channels per physical channel (Table 1's second column): wormhole, TFAR, software deadlock recovery (32 cycles), 16-flit messages, 4 physical injection channels",
			"paper 001 §4.1, Table 1",
			paper001Router(with(base(), func(c *SimConfig) { c.Topology = torus([]int{8, 8, 8}, 1) }), 4)},
		{"paper001-16ary2cube", "16-ary 2-cube (256 hosts), paper 001's router: wormhole, TFAR with 3 virtual channels, software deadlock recovery (32 cycles), 16-flit messages, 4 physical injection channels (the network of Figure 8)",
			"paper 001 §4.1, §4.3",
			paper001Router(with(base(), func(c *SimConfig) { c.Topology = torus([]int{16, 16}, 1) }), 3)},
		{"paper001-16ary3cube", "16-ary 3-cube (4096 hosts), paper 001's router: wormhole, TFAR with 3 virtual channels, software deadlock recovery (32 cycles), 16-flit messages, 4 physical injection channels (the network of Figure 7)",
			"paper 001 §4.1, Figure 7",
			paper001Router(with(base(), func(c *SimConfig) { c.Topology = torus([]int{16, 16, 16}, 1) }), 3)},
	}
}

// paper001Router is the router of paper 001 §4.1 and §4: wormhole
// switching as wormholeRouter sets it (16-byte flits, 256-byte messages of
// 16 flits, routing, crossbar and link one 64 ns cycle each), "a True
// Fully Adaptive routing algorithm (TFAR) with 3 and 4 virtual channels
// per physical channel" (routing.escape none, vls lanes), "software-based
// deadlock recovery [12]" with "the mechanism proposed in [10] with a
// deadlock detection threshold equal to 32 cycles" (fabric.deadlock,
// whose default threshold is 32 cycles of one flit), and "four
// injection/ejection channels" as physical injection ports, which
// Trans-t's gate halves and closes (§3 footnote 2). The NIC has one
// ejection link (its reception drains a flit per cycle, which no load
// this network accepts reaches).
func paper001Router(c SimConfig, vls int) SimConfig {
	c = wormholeRouter(c)
	c.Routing.Escape = route.EscapeNone
	c.Routing.AdaptiveVLs = vls
	c.Fabric.Deadlock.Recovery = fabric.RecoverySoftware
	c.NIC.InjectionQueues.Count = 4
	c.NIC.InjectionQueues.Mode = injection.Physical
	if c.NIC.InjectionControl.Channels != 4 {
		panic(fmt.Sprintf("model: paper001Router: nic.injection_control.channels %d, want the paper's 4", c.NIC.InjectionControl.Channels))
	}
	return c
}
