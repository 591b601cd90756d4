package injection

import (
	"strings"
	"testing"
)

// TestRestrictiveLevels: each level of paper 002 §5.1 names the packets of
// room an escape and an adaptive lane need at injection; the switch
// enforces them, so the control makes no NIC gate and needs no marking.
func TestRestrictiveLevels(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		kind    ControlKind
		esc, ad int
	}{
		{"bubble", "bubble:2-esc", 2, 1},
		{"bubble:2-esc", "bubble:2-esc", 2, 1},
		{"BUBBLE:2-All", "bubble:2-all", 2, 2},
		{"bubble:4-all", "bubble:4-all", 4, 4},
		{"bubble:6-all", "bubble:6-all", 6, 6},
	} {
		if !IsControlKind(tc.policy) {
			t.Fatalf("%s is not a control kind", tc.policy)
		}
		if _, err := ParseControlKind(tc.policy); err != nil {
			t.Fatal(err)
		}
		c := DefaultControlConfig()
		c.Policy = ControlKind(tc.policy)
		ctl, err := NewControl(c, 4)
		if err != nil {
			t.Fatalf("%s: %v", tc.policy, err)
		}
		if ctl.Kind() != tc.kind {
			t.Errorf("%s: kind %s, want %s", tc.policy, ctl.Kind(), tc.kind)
		}
		se, ok := ctl.(SwitchEnforced)
		if !ok {
			t.Fatalf("%s is not enforced at the switch", tc.policy)
		}
		if e, a := se.InjectionBubble(); e != tc.esc || a != tc.ad {
			t.Errorf("%s: bubble %d/%d packets, want %d/%d", tc.policy, e, a, tc.esc, tc.ad)
		}
		if ctl.Gate(0) != nil || ctl.Measure(nil) != 0 {
			t.Errorf("%s: the NIC should get no gate and the switches no marking", tc.policy)
		}
	}
}

// TestRestrictiveRefusals: unknown levels are refused naming the levels;
// gates without a parameter take none.
func TestRestrictiveRefusals(t *testing.T) {
	for _, s := range []string{"bubble:3-all", "bubble:", "bubble:2-esc:x", "trans-t:2", "no-lim:4-all"} {
		if IsControlKind(s) {
			t.Errorf("%q accepted", s)
		}
		_, err := ParseControlKind(s)
		if err == nil {
			t.Errorf("%q parsed", s)
			continue
		}
		if strings.HasPrefix(s, "bubble") && !strings.Contains(err.Error(), "2-esc, 2-all, 4-all, 6-all") {
			t.Errorf("%q: %v does not list the levels", s, err)
		}
		c := DefaultControlConfig()
		c.Policy = ControlKind(s)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "nic.injection_control.policy") {
			t.Errorf("%q: Validate %v", s, err)
		}
	}
	if !strings.Contains(controlNames(), "bubble:LEVEL") {
		t.Errorf("names %q do not show bubble:LEVEL", controlNames())
	}
}
