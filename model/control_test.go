package model

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/injection"
)

// TestInjectionShorthand: --injection sets the gate for gate names and
// the delivery policy for delivery-policy names; Trans-t's u1 comes from
// paper 001 Table 1, or from the lanes with a note naming the table.
func TestInjectionShorthand(t *testing.T) {
	cases := []struct {
		preset, inj string
		gate        injection.ControlKind
		policy      injection.Kind
		u1          float64
		note        string
	}{
		{"paper001-8ary3cube", "trans-t", injection.TransT, "", 4, "paper 001 Table 1 for torus-8x8x8"},
		{"paper001-8ary3cube", "Self-Tuned", injection.SelfTuned, "", 0, ""},
		{"paper001-8ary3cube-vct", "li", "", injection.LI, 0, ""},
		{"torus8x8-dor", "trans-t", injection.TransT, "", 2, "not in paper 001 Table 1"},
		{"paper002-torus16x16-bubble", "bubble:4-all", "bubble:4-all", "", 0, ""},
		{"paper002-torus16x16-bubble", "Bubble", "bubble", "", 0, ""},
	}
	for _, c := range cases {
		delivery := "" // a delivery policy applies to adaptive-inorder only (TestResolveInOrderOnly)
		if c.policy != "" {
			delivery = "adaptive-inorder"
		}
		l := Layers{Preset: c.preset, Shorthands: Shorthands("--", delivery, "", c.inj)}
		cfg, res, err := Resolve(l, LookupPreset)
		if err != nil {
			t.Fatalf("%s %s: %v", c.preset, c.inj, err)
		}
		ic := cfg.NIC.InjectionControl
		if c.gate != "" && ic.Resolved() != c.gate {
			t.Errorf("%s: gate %q, want %q", c.inj, ic.Policy, c.gate)
		}
		if c.policy != "" && (cfg.NIC.Delivery.Injection.Policy != c.policy || ic.Resolved() != injection.NoLim) {
			t.Errorf("%s: delivery policy %q gate %q", c.inj, cfg.NIC.Delivery.Injection.Policy, ic.Policy)
		}
		if ic.U1 != c.u1 {
			t.Errorf("%s on %s: u1 %g, want %g", c.inj, c.preset, ic.U1, c.u1)
		}
		var notes []string
		for _, n := range res.Notes {
			notes = append(notes, n.String())
		}
		if got := strings.Join(notes, "\n"); c.note != "" && !strings.Contains(got, c.note) {
			t.Errorf("%s on %s: notes %q, want %q", c.inj, c.preset, got, c.note)
		}
	}
	_, _, err := Resolve(Layers{Preset: "torus8x8-dor", Shorthands: Shorthands("--", "", "", "leaky")}, LookupPreset)
	if err == nil || !strings.Contains(err.Error(), "--injection") || !strings.Contains(err.Error(), "trans-t") {
		t.Errorf("a bad --injection must name the flag and both tables: %v", err)
	}
	_, _, err = Resolve(Layers{Preset: "torus8x8-dor", Shorthands: Shorthands("--", "", "", "bubble:5-all")}, LookupPreset)
	if err == nil || !strings.Contains(err.Error(), "--injection") || !strings.Contains(err.Error(), "2-esc, 2-all, 4-all, 6-all") {
		t.Errorf("a bad restrictive level must name the flag and the levels: %v", err)
	}
}
