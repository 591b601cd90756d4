package injection

import (
	"fmt"
	"strings"
)

// Restrictive injection (paper 002 §5.1): bubble flow control applied to
// new packets. "We can apply BFC only to the escape channels (2-Esc) as
// the standard ABR, or to all requests from any injection port to any
// virtual output link (2-All). Besides, we can limit the network
// population by increasing the number of free resources required to grant
// injection from the minimum of 2 packets in the local queue to 4 (4-All),
// or even 6 (6-All)." The condition is the router's, at the moment a
// packet from an injection port requests an output lane, so the switch
// enforces it (fabric.RestrictInjection): the NIC keeps no gate of its
// own and this control makes none. It composes with whatever the NIC
// does before the injection port: one or several injection queues and
// their selection policies, as paper 002 Figures 9 and 11 combine them.
// Paper 002 does not combine it with Trans-t or Self-Tuned, and one
// policy is selected at a time.
//
// Policy names: bubble (= bubble:2-esc), bubble:2-esc, bubble:2-all,
// bubble:4-all, bubble:6-all.

// Bubble is the kind of restrictive injection.
const Bubble ControlKind = "bubble"

// RestrictLevel is one level of restrictive injection: how many packets an
// escape or an adaptive output lane must have room for before a packet
// from an injection port may take it (1: virtual cut-through only).
type RestrictLevel struct {
	Name             string
	Escape, Adaptive int
}

// restrictLevels are the levels of paper 002 §5.1.
var restrictLevels = []RestrictLevel{
	{"2-esc", 2, 1},
	{"2-all", 2, 2},
	{"4-all", 4, 4},
	{"6-all", 6, 6},
}

// RestrictLevels returns the levels of restrictive injection.
func RestrictLevels() []RestrictLevel { return append([]RestrictLevel(nil), restrictLevels...) }

func restrictLevelNames() string {
	var s []string
	for _, l := range restrictLevels {
		s = append(s, l.Name)
	}
	return strings.Join(s, ", ")
}

// ParseRestrictLevel reads a level name (case-insensitive; empty is
// 2-esc, the standard adaptive bubble router).
func ParseRestrictLevel(s string) (RestrictLevel, error) {
	if s == "" {
		return restrictLevels[0], nil
	}
	for _, l := range restrictLevels {
		if strings.EqualFold(l.Name, s) {
			return l, nil
		}
	}
	return RestrictLevel{}, fmt.Errorf("restrictive injection level %q: want %s", s, restrictLevelNames())
}

// SwitchEnforced is implemented by controls that the switch enforces at
// its injection ports instead of a gate at the NIC: the NIC hands the
// numbers to the fabric and makes no gate.
type SwitchEnforced interface {
	// InjectionBubble returns how many packets an escape and an adaptive
	// output lane must have room for before a packet from an injection
	// port may take it.
	InjectionBubble() (escape, adaptive int)
}

// restrictive is the control of restrictive injection.
type restrictive struct {
	kind  ControlKind
	level RestrictLevel
}

func newRestrictive(c ControlConfig, _ int) Control {
	_, param, _ := strings.Cut(string(c.Resolved()), ":")
	l, _ := ParseRestrictLevel(param) // Validate checked it
	return &restrictive{kind: ControlKind(string(Bubble) + ":" + l.Name), level: l}
}

func (r *restrictive) Kind() ControlKind { return r.kind }

// Measure: restrictive injection needs no transmission-time marking.
func (r *restrictive) Measure(View) float64 { return 0 }

// Gate: the switch enforces the restriction; the NIC has no gate.
func (r *restrictive) Gate(int) Gate { return nil }

func (r *restrictive) InjectionBubble() (escape, adaptive int) {
	return r.level.Escape, r.level.Adaptive
}
