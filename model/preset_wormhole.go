package model

import (
	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// wormholePresets are paper 001's networks on wormhole routers
// (fabric.switching wormhole): the same tori as paper001-8ary3cube with
// the switching of the paper, and the 16-ary 2-cube of its Figures 5-6.
func wormholePresets() []Preset {
	return []Preset{
		{"paper001-8ary3cube-wh", "8-ary 3-cube (512 hosts), wormhole switching: 16-flit messages of 16-byte flits, 3 virtual channels per physical channel (a dateline escape pair and one adaptive), lanes of 4 flits, routing, crossbar and link one 64 ns cycle each, Poisson arrivals",
			"paper 001 §3, §4.1",
			wormholeRouter(with(base(), func(c *SimConfig) { c.Topology = torus([]int{8, 8, 8}, 1) }))},
		{"paper001-16ary2cube-wh", "16-ary 2-cube (256 hosts), wormhole switching: 16-flit messages of 16-byte flits, 3 virtual channels per physical channel (a dateline escape pair and one adaptive), lanes of 4 flits, routing, crossbar and link one 64 ns cycle each, Poisson arrivals",
			"paper 001 §3, §4.1",
			wormholeRouter(with(base(), func(c *SimConfig) { c.Topology = torus([]int{16, 16}, 1) }))},
	}
}

// wormholeRouter sets the router of paper 001 §4.1 on the IBA links of
// base (2 Gb/s of data): wormhole switching with 16-byte flits (64 ns,
// the cycle), 256-byte messages without headers (16 flits), routing and
// crossbar one cycle each ("Routing time, transmission time across the
// crossbar and across a channel are all assumed to be equal to one clock
// cycle"), no cable delay beyond the link's cycle, lanes of 4 flits (they
// cover the credit round trip of 3 cycles), and adaptive routing on one
// adaptive lane with the dateline escape pair: 3 virtual channels,
// deadlock-free without recovery (Duato's condition; the paper uses TFAR
// with software recovery instead).
func wormholeRouter(c SimConfig) SimConfig {
	c.Routing.Mode = route.Adaptive
	c.Traffic.Process = "exponential"
	c.Fabric.Switch, c.Fabric.OutputBuffer = "iq", 0
	c.Fabric.Switching, c.Fabric.FlitBytes, c.Fabric.LaneFlits = fabric.SwitchingWormhole, 16, 4
	c.Fabric.RoutingDelay = c.Fabric.SerializationTime(16)
	c.Fabric.LinkLength = 0
	c.NIC.HeaderBytes = 0
	c.Run.Duration, c.Run.Warmup = 400*des.Microsecond, 100*des.Microsecond
	return c
}
