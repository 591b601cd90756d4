package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/nic"
)

// TestResolvePrecedence: each layer overrides the one before it: preset,
// file, flags, delivery shorthands, sets. Every layer sets the
// rearrangement memory (and the delivery mode where it can, always
// adaptive-inorder: a rearrangement memory given for another delivery is
// refused, TestResolveInOrderOnly); layer i of the table is the last one
// given.
func TestResolvePrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("nic:\n  delivery:\n    mode: adaptive-inorder\n    reorder: static:2KiB\ntraffic:\n  load: 0.6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all := Layers{
		Preset:     "paper004-irregular16",
		File:       file,
		Flags:      []Assignment{{Source: "--reorder-flag", Flag: true, Key: "nic.delivery.reorder", Value: "static:4KiB"}, {Source: "--load", Flag: true, Key: "traffic.load", Value: "0.7"}},
		Shorthands: Shorthands("--", "adaptive-inorder", "static:8KiB", "unlimited"),
		Sets:       Sets("--set", []string{"nic.delivery.reorder=static:16KiB", "nic.delivery.mode=adaptive-inorder"}),
	}
	for i, tc := range []struct {
		layer   string
		reorder string
		mode    nic.DeliveryMode
		load    float64
	}{
		{"preset", nic.DefaultReorder, nic.DeliveryAuto, 0.5},
		{"file", "static:2KiB", nic.DeliveryAdaptiveInOrder, 0.6},
		{"flags", "static:4KiB", nic.DeliveryAdaptiveInOrder, 0.7},
		{"shorthands", "static:8KiB", nic.DeliveryAdaptiveInOrder, 0.7},
		{"sets", "static:16KiB", nic.DeliveryAdaptiveInOrder, 0.7},
	} {
		t.Run(tc.layer, func(t *testing.T) {
			l := Layers{Preset: all.Preset}
			if i >= 1 {
				l.File = all.File
			}
			if i >= 2 {
				l.Flags = all.Flags
			}
			if i >= 3 {
				l.Shorthands = all.Shorthands
			}
			if i >= 4 {
				l.Sets = all.Sets
			}
			c, _, err := Resolve(l, LookupPreset)
			if err != nil {
				t.Fatal(err)
			}
			d := c.NIC.Delivery
			if d.Reorder != tc.reorder || d.Mode != tc.mode || c.Traffic.Load != tc.load {
				t.Errorf("reorder %q, mode %q, load %g; want %q, %q, %g", d.Reorder, d.Mode, c.Traffic.Load, tc.reorder, tc.mode, tc.load)
			}
		})
	}
}

// TestResolveForcedRouting: a delivery mode that changes the routing mode
// sets it and says so; an explicit routing mode that contradicts it is
// refused; one from a file is overridden with a note.
func TestResolveForcedRouting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("routing:\n  mode: deterministic\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		l       Layers
		routing route.Mode
		note    string
		err     string
	}{
		{"forced by a flag", Layers{Preset: "paper004-irregular16", Shorthands: Shorthands("--", "adaptive-inorder", "", "")},
			route.Adaptive, "routing: adaptive (forced by --delivery adaptive-inorder)", ""},
		{"forced by --set", Layers{Preset: "paper001-8ary3cube-vct", Sets: Sets("--set", []string{"nic.delivery.mode=deterministic"})},
			route.Deterministic, "routing: deterministic (forced by --set nic.delivery.mode=deterministic)", ""},
		{"forced by the daemon's file", Layers{Preset: "tap-pair-10g", Shorthands: Shorthands("model.", "adaptive-ooo", "", "")},
			route.Adaptive, "routing: adaptive (forced by model.delivery adaptive-ooo)", ""},
		{"file routing overridden", Layers{Preset: "paper001-8ary3cube-vct", File: file, Shorthands: Shorthands("--", "adaptive-ooo", "", "")},
			route.Adaptive, "routing: adaptive (forced by --delivery adaptive-ooo)", ""},
		{"agreeing routing", Layers{Preset: "paper004-irregular16", Flags: []Assignment{{Source: "--routing", Flag: true, Key: "routing.mode", Value: "adaptive"}},
			Shorthands: Shorthands("--", "adaptive-inorder", "", "")}, route.Adaptive, "", ""},
		{"no delivery mode", Layers{Preset: "paper001-8ary3cube-vct"}, route.Adaptive, "", ""},
		{"contradicting --routing", Layers{Preset: "paper004-irregular16", Flags: []Assignment{{Source: "--routing", Flag: true, Key: "routing.mode", Value: "deterministic"}},
			Shorthands: Shorthands("--", "adaptive-inorder", "", "")}, "", "",
			"--routing deterministic contradicts --delivery adaptive-inorder, which needs adaptive routing"},
		{"contradicting --set", Layers{Preset: "paper004-irregular16", Sets: Sets("model.set", []string{"routing.mode=adaptive"}),
			Shorthands: Shorthands("model.", "deterministic", "", "")}, "", "",
			"model.set routing.mode=adaptive contradicts model.delivery deterministic, which needs deterministic routing"},
		{"contradicting a file's delivery", Layers{Preset: "paper004-irregular16", File: writeTemp(t, "nic:\n  delivery:\n    mode: adaptive-ooo\n"),
			Flags: []Assignment{{Source: "--routing", Flag: true, Key: "routing.mode", Value: "deterministic"}}}, "", "",
			"--routing deterministic contradicts nic.delivery.mode adaptive-ooo in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, res, err := Resolve(tc.l, LookupPreset)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Routing.Mode != tc.routing {
				t.Errorf("routing %q, want %q", c.Routing.Mode, tc.routing)
			}
			var notes []string
			for _, n := range res.Notes {
				notes = append(notes, n.String())
			}
			if got := strings.Join(notes, "; "); got != tc.note {
				t.Errorf("notes %q, want %q", got, tc.note)
			}
		})
	}
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestResolveErrors: a bad value names the flag, shorthand or key=value it
// came from.
func TestResolveErrors(t *testing.T) {
	for _, tc := range []struct {
		l    Layers
		want string
	}{
		{Layers{Preset: "nope", PresetSource: "model.preset"}, `model.preset: unknown preset "nope"`},
		{Layers{Preset: "torus8x8-dor", Flags: []Assignment{{Source: "--duration", Flag: true, Key: "run.duration", Value: "ten"}}}, "--duration: "},
		{Layers{Preset: "torus8x8-dor", Flags: []Assignment{{Source: "--routing", Flag: true, Key: "routing.mode", Value: "fast",
			Check: func(s string) error { _, err := ParseRoutingMode(s); return err }}}}, `--routing: "fast": want deterministic or adaptive`},
		{Layers{Preset: "torus8x8-dor", Shorthands: Shorthands("--", "sideways", "", "")}, "--delivery: "},
		{Layers{Preset: "torus8x8-dor", Shorthands: Shorthands("", "", "static:huge", "")}, "reorder: "},
		{Layers{Preset: "torus8x8-dor", Shorthands: Shorthands("model.", "", "", "lots")}, "model.injection: "},
		{Layers{Preset: "torus8x8-dor", Sets: Sets("--set", []string{"fabric.lnk_rate=1"})}, `--set fabric.lnk_rate: unknown key "lnk_rate"`},
		{Layers{Preset: "torus8x8-dor", Sets: Sets("--set", []string{"nokey"})}, `--set "nokey": want key=value`},
		{Layers{Preset: "torus8x8-dor", Sets: Sets("model.set", []string{"nic.mtu=big"})}, `model.set "nic.mtu=big": `},
		{Layers{Preset: "torus8x8-dor", Sets: Sets("--set", []string{"nic.mtu=300"})}, "nic.mtu 300"},
	} {
		if _, _, err := Resolve(tc.l, LookupPreset); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.l, err, tc.want)
		}
	}
}

// TestDumpRoundTripEveryPreset: the resolved configuration of every preset,
// dumped, read as the file of another preset's resolution and dumped again,
// is the same text (every key is written, empty lists included).
func TestDumpRoundTripEveryPreset(t *testing.T) {
	ps := Presets()
	for i, p := range ps {
		t.Run(p.Name, func(t *testing.T) {
			first := p.Config
			out, err := params.Dump(&first)
			if err != nil {
				t.Fatal(err)
			}
			other := ps[(i+1)%len(ps)].Name
			back, _, err := Resolve(Layers{Preset: other, File: writeTemp(t, string(out))}, LookupPreset)
			if err != nil {
				t.Fatalf("dump over %s: %v\n%s", other, err, out)
			}
			again, err := params.Dump(&back)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(out) {
				t.Fatalf("dump over preset %s differs:\n%s\n---\n%s", other, out, again)
			}
		})
	}
}

// TestResolveInOrderOnly: a rearrangement memory or a delivery injection
// policy given explicitly for a delivery without rearrangement is refused,
// naming both; given with adaptive-inorder, or left to the preset, it
// resolves.
func TestResolveInOrderOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    Layers
		want string // "" = resolves
	}{
		{"deterministic + reorder", Layers{Preset: "paper004-irregular16", Shorthands: Shorthands("--", "deterministic", "static:2KiB", "li")}, "--reorder static:2KiB applies to adaptive-inorder delivery only, and the delivery is deterministic (--delivery deterministic)"},
		{"ooo + lw", Layers{Preset: "paper004-irregular16", Shorthands: Shorthands("--", "adaptive-ooo", "", "lw")}, "--injection lw applies to adaptive-inorder delivery only, and the delivery is adaptive-ooo"},
		{"set reorder, routing deterministic", Layers{Preset: "paper004-irregular16", Sets: Sets("--set", []string{"nic.delivery.reorder=static:2KiB"})}, "--set nic.delivery.reorder=static:2KiB applies to adaptive-inorder delivery only"},
		{"inorder + reorder", Layers{Preset: "paper004-irregular16", Shorthands: Shorthands("--", "adaptive-inorder", "static:2KiB", "lw")}, ""},
		{"gate, not a delivery policy", Layers{Preset: "paper004-irregular16", Shorthands: Shorthands("--", "deterministic", "", "trans-t")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Resolve(tc.l, LookupPreset)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
