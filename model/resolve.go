package model

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/reorder"
)

// The configuration resolver: every command that runs a model (sim,
// replay, experiment rows, the daemon) builds its configuration here, from
// layers applied in one order, each overriding the one before:
//
//  1. the preset (Layers.Preset), looked up by the command's preset table;
//  2. a YAML file (Layers.File), strict: unknown keys are errors;
//  3. individual flags (Layers.Flags: --load, --routing, --trace, ...),
//     each bound to the key it sets, or a definition's own assignments that
//     come before the shorthands (an experiment's base.set);
//  4. the delivery shorthands (Layers.Shorthands: --delivery, --reorder,
//     --injection; Shorthands builds them);
//  5. key=value overrides (Layers.Sets: --set, the daemon's model.set).
//
// Then the delivery mode settles the routing mode: deterministic delivery
// needs deterministic routing, the adaptive modes adaptive routing. When
// the delivery mode changes the routing mode, the resolver sets it and
// says so in a Note; when the routing mode was asked for explicitly (by a
// flag or a key=value override) it refuses instead of overriding the user.
// A rearrangement memory or a delivery injection policy given by a flag or
// override for a delivery other than adaptive-inorder is refused too:
// nothing would read it. Last, the whole configuration is validated.

// Assignment is one value a command line or a definition gives a key of
// the configuration.
type Assignment struct {
	// Source names the assignment in messages: a flag ("--load") or where
	// a key=value came from ("--set", "model.set", "base.set").
	Source string
	// Flag says Source is a flag whose Value is the key's value
	// (--load 0.5), not a key=value assignment.
	Flag bool
	// Key is the dotted key (traffic.load), Value its text as in a file.
	Key, Value string
	// Check, if set, vets Value before it is applied (flags whose values
	// have a narrower meaning than the key's type).
	Check func(value string) error

	raw string // a key=value as given, for its own error messages
}

// String is the assignment as the user wrote it: "--delivery
// adaptive-inorder" or "--set routing.mode=adaptive".
func (a Assignment) String() string {
	if a.Flag {
		return a.Source + " " + a.Value
	}
	return a.Source + " " + a.Key + "=" + a.Value
}

// Sets turns key=value texts into assignments named by source ("--set",
// "model.set", "base.set").
func Sets(source string, kvs []string) []Assignment {
	as := make([]Assignment, 0, len(kvs))
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		as = append(as, Assignment{Source: source, Key: strings.TrimSpace(k), Value: strings.TrimSpace(v), raw: kv})
	}
	return as
}

// Shorthands returns the delivery shorthands that are given (not empty):
// the delivery mode, the rearrangement memory and the injection policy of
// nic.delivery. prefix names them in messages: "--" for flags
// (--delivery), "model." for the daemon's file, "" for an experiment row.
func Shorthands(prefix, delivery, reorderMem, injectionPolicy string) []Assignment {
	var as []Assignment
	add := func(name, key, v string, check func(string) error) {
		if v != "" {
			as = append(as, Assignment{Source: prefix + name, Flag: true, Key: key, Value: v, Check: check})
		}
	}
	add("delivery", "nic.delivery.mode", delivery, func(s string) error { _, err := nic.ParseDeliveryMode(s); return err })
	add("reorder", "nic.delivery.reorder", reorderMem, func(s string) error { _, err := reorder.ParseMemorySpec(s); return err })
	// --injection names either a delivery policy of paper 004 (unlimited,
	// li, lw: nic.delivery.injection.policy) or an injection-control gate
	// of paper 001 (no-lim, trans-t, self-tuned:
	// nic.injection_control.policy); the two tables share no name.
	if injection.IsControlKind(injectionPolicy) || strings.HasPrefix(strings.ToLower(injectionPolicy), string(injection.Bubble)+":") {
		add("injection", "nic.injection_control.policy", injectionPolicy, func(s string) error { _, err := injection.ParseControlKind(s); return err })
	} else {
		add("injection", "nic.delivery.injection.policy", injectionPolicy, func(s string) error {
			if _, err := injection.ParseKind(s); err != nil {
				return fmt.Errorf("%w, or an injection control: %s", err, strings.Join(controlKindNames(), ", "))
			}
			return nil
		})
	}
	return as
}

// ParseRoutingMode reads a routing mode name (the --routing flag).
func ParseRoutingMode(s string) (route.Mode, error) {
	switch route.Mode(s) {
	case route.Deterministic, route.Adaptive:
		return route.Mode(s), nil
	}
	return "", fmt.Errorf("%q: want deterministic or adaptive", s)
}

func (a Assignment) apply(dst any) error {
	if a.Check != nil {
		if err := a.Check(a.Value); err != nil {
			return fmt.Errorf("%s: %w", a.Source, err)
		}
	}
	kv := a.raw
	if kv == "" {
		kv = a.Key + "=" + a.Value
	}
	err := params.Set(dst, kv)
	switch {
	case err == nil:
		return nil
	case a.Flag:
		// params names the key as "--set key"; a flag names itself.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Errorf("%s: %w", a.Source, err)
	case a.Source == "--set":
		return err
	}
	// Another list of key=values (model.set, base.set) names the entry.
	if inner := errors.Unwrap(err); inner != nil && a.Key != "" && strings.Contains(kv, "=") {
		err = inner
	}
	return fmt.Errorf("%s %q: %w", a.Source, kv, err)
}

// Layers are the sources of one configuration (see the list above).
type Layers struct {
	// Preset names the starting configuration; PresetSource, if set,
	// names the preset in errors (the daemon's "model.preset").
	Preset       string
	PresetSource string
	// File is a YAML file read over the preset; empty for none.
	File string
	// Flags, Shorthands and Sets are applied in this order, each in its
	// own order.
	Flags      []Assignment
	Shorthands []Assignment
	Sets       []Assignment
}

// Note says what the resolver set beyond the layers themselves, for the
// command's human output (never for the JSON summaries).
type Note struct {
	Key   string // "routing"
	Value string // "adaptive"
	Why   string // "forced by --delivery adaptive-inorder"
}

func (n Note) String() string { return n.Key + ": " + n.Value + " (" + n.Why + ")" }

// Resolution is what the resolver reports beside the configuration.
type Resolution struct {
	Notes []Note
}

// Config is a run configuration with a Model inside (SimConfig,
// replay.ReplaySimConfig): embedding Model provides ModelConfig.
type Config interface {
	ModelConfig() *Model
	Validate() error
}

// Resolve builds a configuration from its layers: presets looks the
// preset up (LookupPreset, replay.ReplayPreset), then the file, the flags,
// the shorthands and the sets are applied, the delivery mode settles the
// routing mode, and the result is validated.
func Resolve[C any, P interface {
	*C
	Config
}](l Layers, presets func(string) (C, error)) (C, Resolution, error) {
	var res Resolution
	cfg, err := presets(l.Preset)
	if err != nil {
		if l.PresetSource != "" {
			err = fmt.Errorf("%s: %w", l.PresetSource, err)
		}
		return cfg, res, err
	}
	p := P(&cfg)
	m := p.ModelConfig()
	var pv provenance
	if d := m.NIC.Delivery.Mode; d != nic.DeliveryAuto {
		pv.delivery = fmt.Sprintf("nic.delivery.mode %s of preset %s", d, l.Preset)
	}
	if l.File != "" {
		before := m.NIC.Delivery.Mode
		if err := params.LoadYAML(l.File, p); err != nil {
			return cfg, res, err
		}
		if d := m.NIC.Delivery.Mode; d != before {
			pv.delivery = fmt.Sprintf("nic.delivery.mode %s in %s", d, l.File)
		}
	}
	for _, layer := range [][]Assignment{l.Flags, l.Shorthands, l.Sets} {
		for _, a := range layer {
			if err := a.apply(p); err != nil {
				return cfg, res, err
			}
			pv.saw(a)
		}
	}
	note, err := pv.settleRouting(m)
	if err != nil {
		return cfg, res, err
	}
	if err := pv.inOrderOnly(m); err != nil {
		return cfg, res, err
	}
	if note != nil {
		res.Notes = append(res.Notes, *note)
	}
	if note := resolveU1(m); note != nil {
		res.Notes = append(res.Notes, *note)
	}
	return cfg, res, p.Validate()
}

// provenance remembers where the delivery mode came from and whether the
// routing mode was asked for explicitly.
type provenance struct {
	delivery string      // how the delivery mode was set, for messages
	routing  *Assignment // the explicit routing.mode, if any
	// inOrder are the explicit settings that only adaptive-inorder
	// delivery reads: its rearrangement memory and its injection policy.
	inOrder []Assignment
}

func (pv *provenance) saw(a Assignment) {
	switch a.Key {
	case "routing.mode":
		pv.routing = &a
	case "nic.delivery.mode":
		pv.delivery = a.String()
	case "nic.delivery.reorder", "nic.delivery.injection.policy":
		if a.Value != "" {
			pv.inOrder = append(pv.inOrder, a)
		}
	}
}

// inOrderOnly refuses a rearrangement memory or a delivery injection
// policy given explicitly for a run whose delivery has no rearrangement
// (deterministic or adaptive-ooo): nothing would read it, and the user
// would believe it applied (paper 004 §3.2-§3.3 define both for in-order
// delivery over adaptive routing only).
func (pv *provenance) inOrderOnly(m *Model) error {
	if len(pv.inOrder) == 0 {
		return nil
	}
	mode, _ := m.NIC.Delivery.Effective(m.Routing.Mode)
	if mode == nic.DeliveryAdaptiveInOrder {
		return nil
	}
	why := pv.delivery
	if why == "" {
		why = "routing.mode " + string(m.Routing.Mode)
	}
	return fmt.Errorf("%s applies to adaptive-inorder delivery only, and the delivery is %s (%s): drop it or ask for --delivery adaptive-inorder",
		pv.inOrder[0], mode, why)
}

// settleRouting makes the routing mode the one the delivery mode needs
// (nic.DeliveryConfig.Effective).
func (pv *provenance) settleRouting(m *Model) (*Note, error) {
	d := m.NIC.Delivery
	if _, err := nic.ParseDeliveryMode(string(d.Mode)); err != nil {
		return nil, nil // empty (follow routing) or invalid (Validate says so)
	}
	_, want := d.Effective(m.Routing.Mode)
	if want == m.Routing.Mode {
		return nil, nil
	}
	if pv.routing != nil {
		return nil, fmt.Errorf("%s contradicts %s, which needs %s routing; drop one of the two",
			pv.routing, pv.delivery, want)
	}
	m.Routing.Mode = want
	return &Note{Key: "routing", Value: string(want), Why: "forced by " + pv.delivery}, nil
}

func controlKindNames() []string {
	var s []string
	for _, k := range injection.ControlKinds() {
		s = append(s, string(k))
	}
	return s
}

// resolveU1 sets Trans-t's threshold u1 when it is left at 0: the value of
// paper 001 Table 1 for the topology and lanes per channel, or the lanes
// per channel when the pair is not in the table (the paper's starting
// point, §4.2), with a note saying which. Building the topology and router
// is how the lanes are known; errors are left to validation and the run.
func resolveU1(m *Model) *Note {
	c := m.NIC.InjectionControl
	if c.Resolved() != injection.TransT || c.U1 != 0 || m.Topology.Validate() != nil || m.Routing.Validate() != nil {
		return nil
	}
	t, err := topo.Build(m.Topology)
	if err != nil {
		return nil
	}
	r, err := route.New(t, m.Routing)
	if err != nil {
		return nil
	}
	rc, why := nic.ResolveControl(c, t, r.NumVLs())
	m.NIC.InjectionControl.U1 = rc.U1
	if why == "" {
		why = fmt.Sprintf("paper 001 Table 1 for %s with %d lanes per channel", t.Name, r.NumVLs())
	}
	return &Note{Key: "nic.injection_control.u1", Value: strconv.FormatFloat(rc.U1, 'g', -1, 64), Why: why}
}
