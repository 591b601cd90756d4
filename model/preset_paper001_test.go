package model

import (
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/injection"
)

// TestPaper001RouterPresets: the paper001 presets are the paper's router
// (paper 001 §4.1, §4): wormhole switching with 16-flit messages, TFAR
// (no escape lane) with 3 virtual channels (4 for the -4vc one), software
// deadlock recovery with a threshold of 32 cycles of one flit, and 4
// physical injection channels; they validate, and the old virtual
// cut-through presets are kept under -vct.
func TestPaper001RouterPresets(t *testing.T) {
	for _, c := range []struct {
		name string
		vls  int
	}{{"paper001-8ary3cube", 3}, {"paper001-8ary3cube-4vc", 4}, {"paper001-16ary2cube", 3}, {"paper001-16ary3cube", 3}} {
		cfg, err := LookupPreset(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		f, r := cfg.Fabric, cfg.Routing
		if !f.Wormhole() || f.Flits(cfg.NIC.MaxPacket()) != 16 {
			t.Errorf("%s: switching %q, %d-flit messages; want wormhole, 16", c.name, f.Switching, f.Flits(cfg.NIC.MaxPacket()))
		}
		if r.Mode != route.Adaptive || r.Escape != route.EscapeNone || r.AdaptiveVLs != c.vls || lanes(&cfg.Model) != c.vls {
			t.Errorf("%s: routing %s escape %q with %d lanes; want TFAR (adaptive, escape none) with %d", c.name, r.Mode, r.Escape, lanes(&cfg.Model), c.vls)
		}
		cycle := f.SerializationTime(f.Flit())
		if d := f.Deadlock; d.Recovery != fabric.RecoverySoftware || d.ThresholdTime(f.DataRate()) != 32*cycle {
			t.Errorf("%s: deadlock %+v (threshold %v); want software recovery, 32 cycles of %v", c.name, d, d.ThresholdTime(f.DataRate()), cycle)
		}
		if q := cfg.NIC.InjectionQueues; q.Count != 4 || q.Mode != injection.Physical || cfg.NIC.InjectionControl.Channels != 4 {
			t.Errorf("%s: injection queues %+v, channels %d; want 4 physical", c.name, q, cfg.NIC.InjectionControl.Channels)
		}
	}
	for _, name := range []string{"paper001-8ary3cube-vct", "paper001-16ary3cube-vct"} {
		cfg, err := LookupPreset(name)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Fabric.Wormhole() || cfg.Routing.Escape == route.EscapeNone || cfg.NIC.InjectionQueues.Count > 1 {
			t.Errorf("%s: not the virtual cut-through preset it was", name)
		}
	}
}
