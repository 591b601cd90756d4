package fabrictest

import (
	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
)

// WormholeLatency is the zero-load latency under wormhole switching of a
// packet of size bytes from a host through hops switches to a host: the
// head crosses hops+1 links (a flit time and the propagation delay each)
// and, at each switch, the routing delay and one crossbar flit time; the
// other flits follow it one flit time apart, so the tail arrives (L-1)
// flit times after the head (paper 001 §4.1: routing, crossbar and link
// one cycle each).
func WormholeLatency(c fabric.Config, hops, size int) des.Time {
	flit := c.SerializationTime(c.Flit())
	xbar := des.Time(float64(flit)/c.CrossbarSpeedup + 0.5)
	if c.CrossbarSpeedup == 1 {
		xbar = flit
	}
	l := des.Time(c.Flits(size))
	return des.Time(hops+1)*(flit+c.PropagationDelay()) + des.Time(hops)*(c.RoutingDelay+xbar) + (l-1)*flit
}

// LanesCoverRoundTrip reports whether a lane's flits last as long as the
// credit round trip of a hop under wormhole switching (the crossbar and
// link flit times, the propagation both ways and the head's routing
// delay), so that a lone worm never waits for a credit and arrives at
// WormholeLatency.
func LanesCoverRoundTrip(c fabric.Config) bool {
	flit := c.SerializationTime(c.Flit())
	return des.Time(c.Lane())*flit >= 2*flit+2*c.PropagationDelay()+c.RoutingDelay
}
