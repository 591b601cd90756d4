package main

import (
	"testing"
)

// TestZeroIsNotDefault: a key whose 0 in a config built in code stands for
// its default refuses an explicit 0 from --set or a file, naming the key,
// instead of running the default behind the user's back (docs/validation.md,
// "Hostile inputs"). A value in range still runs.
func TestZeroIsNotDefault(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	file := func(name, body string) string { return writeFile(t, dir, name, text(body)) }
	recn := []string{"sim", "--preset", "paper000-min64", "--duration", "1us"}
	with := func(args ...string) []string { return append(append([]string(nil), recn...), args...) }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"recn.max_saqs=0", with("--set", "fabric.recn.max_saqs=0"), "fabric.recn.max_saqs: 0: want 1 to 64"},
		{"recn.max_saqs=0.0", with("--set", "fabric.recn.max_saqs=0.0"), "fabric.recn.max_saqs: 0: want 1 to 64"},
		{"recn={max_saqs: 0}", with("--set", "fabric.recn={max_saqs: 0}"), "fabric.recn.max_saqs: 0: want 1 to 64"},
		{"yaml recn max_saqs 0", with("--config", file("recn0.yaml", "fabric:\n  recn: {max_saqs: 0}\n")), "recn0.yaml:2: fabric.recn.max_saqs: 0: want 1 to 64"},
		{"recn_iq.max_saqs=0", with("--set", "fabric.recn_iq.max_saqs=0"), "fabric.recn_iq.max_saqs: 0: want 1 to 64"},
		{"yaml recn_iq max_saqs 0", with("--config", file("recniq0.yaml", "fabric:\n  recn_iq:\n    max_saqs: 0\n")), "recniq0.yaml:3: fabric.recn_iq.max_saqs: 0: want 1 to 64"},
		{"order_window=0", with("--set", "nic.delivery.order_window=0"), "nic.delivery.order_window: 0: want 1 to 1048576"},
		{"yaml order_window 0", with("--config", file("ow0.yaml", "nic:\n  delivery: {order_window: 0}\n")), "nic.delivery.order_window: 0: want 1 to 1048576"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expectRefusal(t, bin, c.args, c.want, 0)
		})
	}
	for _, set := range []string{"fabric.recn.max_saqs=1", "fabric.recn_iq.max_saqs=1", "nic.delivery.order_window=1"} {
		if _, err := run(t, with("--set", set)...); err != nil {
			t.Errorf("--set %s: %v", set, err)
		}
	}
}

// TestExperimentEmptyLoads: an experiment file with `loads: []` (for the
// experiment, a row or --quick) is refused naming the file and the key; it
// used to run one point per row at the base load and report "invariants:
// OK on every run".
func TestExperimentEmptyLoads(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	head := "name: empty\nkind: sim\nbase:\n  preset: tap-pair-10g\n  set: [run.duration=5us]\n"
	cases := []struct {
		name, body, want string
	}{
		{"loads", head + "loads: []\nrows:\n  - {name: a}\n", "loads-loads.yaml: loads: an empty list"},
		{"row", head + "rows:\n  - {name: a, loads: []}\n", `row-loads.yaml: row "a": loads: an empty list`},
		{"quick", head + "loads: [0.5]\nquick: {loads: []}\nrows:\n  - {name: a}\n", "quick-loads.yaml: quick.loads: an empty list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, dir, c.name+"-loads.yaml", text(c.body))
			expectRefusal(t, bin, []string{"experiment", path}, c.want, 0)
		})
	}
}

// TestDeliveryContradictions: a rearrangement memory or a delivery
// injection policy for a delivery without rearrangement is refused before
// running, naming both flags; it used to be accepted and ignored.
func TestDeliveryContradictions(t *testing.T) {
	bin := buildBinary(t)
	sim := []string{"sim", "--preset", "tap-pair-10g", "--duration", "5us"}
	with := func(args ...string) []string { return append(append([]string(nil), sim...), args...) }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"deterministic + static:2KiB + li", with("--delivery", "deterministic", "--reorder", "static:2KiB", "--injection", "li"), "--reorder static:2KiB applies to adaptive-inorder delivery only, and the delivery is deterministic (--delivery deterministic)"},
		{"adaptive-ooo + lw", with("--delivery", "adaptive-ooo", "--injection", "lw"), "--injection lw applies to adaptive-inorder delivery only, and the delivery is adaptive-ooo"},
		{"--reorder, deterministic routing", with("--reorder", "unlimited"), "--reorder unlimited applies to adaptive-inorder delivery only"},
		{"--set reorder", with("--set", "nic.delivery.reorder=static:2KiB"), "--set nic.delivery.reorder=static:2KiB applies to adaptive-inorder"},
		{"replay", []string{"replay", "--trace", "testdata/capture-small.pcap", "--delivery", "deterministic", "--reorder", "static:2KiB"}, "--reorder static:2KiB applies to adaptive-inorder"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expectRefusal(t, bin, c.args, c.want, 0)
		})
	}
	if _, err := run(t, with("--delivery", "adaptive-inorder", "--reorder", "static:2KiB", "--injection", "li")...); err != nil {
		t.Errorf("adaptive-inorder with its memory and policy: %v", err)
	}
}
