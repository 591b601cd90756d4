package model

import (
	"testing"

	"github.com/fabemu/fabemu/fabric/route"
)

// TestWormholePresets: paper 001's wormhole presets are what their
// descriptions say (paper 001 §4.1): wormhole switching on input-queued
// switches, 16-flit messages, 3 virtual channels per physical channel
// (the dateline escape pair and one adaptive), routing and crossbar one
// flit time each, and they validate.
func TestWormholePresets(t *testing.T) {
	for _, name := range []string{"paper001-8ary3cube-wh", "paper001-16ary2cube-wh"} {
		c, err := LookupPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		f := c.Fabric
		if !f.Wormhole() || f.Switch != "iq" {
			t.Errorf("%s: switching %q on %s, want wormhole on iq", name, f.Switching, f.Switch)
		}
		if flits := f.Flits(c.NIC.MaxPacket()); flits != 16 {
			t.Errorf("%s: messages of %d flits, want 16", name, flits)
		}
		if n := lanes(&c.Model); n != 3 || c.Routing.Mode != route.Adaptive {
			t.Errorf("%s: %d lanes in %s routing, want 3 adaptive", name, n, c.Routing.Mode)
		}
		if cycle := f.SerializationTime(f.Flit()); f.RoutingDelay != cycle || f.CrossbarSpeedup != 1 || f.PropagationDelay() != 0 {
			t.Errorf("%s: routing %v, crossbar speedup %g, propagation %v; want one %v cycle each, no cable delay", name, f.RoutingDelay, f.CrossbarSpeedup, f.PropagationDelay(), cycle)
		}
	}
}
