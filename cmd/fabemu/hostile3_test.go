package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
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

// srtBytes is an SRT file whose header carries tracedate and whose one
// record is a version-4 ShortIO at 1 s (the layout of tracefmt's tests).
func srtBytes(tracedate string) []byte {
	var b bytes.Buffer
	b.WriteString("$$TR_IOREC-1.3 test\x00\nversion = 1.3;\ntracedate    = \"" + tracedate + "\";\n")
	b.WriteString("disks = {\n  0 -> {\n  sectorsize = 1024,\n },\n};\n\f")
	rec := make([]byte, 56)
	words := []uint32{56, 4<<16 | 1, 1, 0, 0, 1, 1024, 1, 0x08000008, 4, 0, 1, 0, 1}
	for i, w := range words {
		binary.BigEndian.PutUint32(rec[4*i:], w)
	}
	b.Write(rec)
	return b.Bytes()
}

// TestSRTFarTracedate: SRT files merged as one trace whose tracedates lie
// centuries apart (year 9999) are refused naming the file and its header;
// they gave "first arrival -9223372036.85 s". One file given twice is
// refused instead of counting its records twice.
func TestSRTFarTracedate(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	write := func(name, tracedate string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, srtBytes(tracedate), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.srt", "Sat May 30 00:00:00 1992")
	b := write("b.srt", "Fri Dec 31 00:00:00 9999")
	c := write("c.srt", "Sat May 30 01:00:00 1992")
	write("far/a.srt", "Sat May 30 00:00:00 1992")
	write("far/b.srt", "Fri Dec 31 00:00:00 9999")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"stats, year 9999", []string{"trace", "stats", a, b}, "b.srt: header tracedate 9999-12-31 00:00:00 is"},
		{"replay, year 9999", []string{"replay", "--trace", filepath.Join(dir, "far")}, "b.srt: header tracedate 9999-12-31"},
		{"one file twice", []string{"trace", "stats", a, a}, "a.srt: the same file as"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expectRefusal(t, bin, c.args, c.want, 0)
		})
	}
	if _, err := run(t, "trace", "stats", a, c); err != nil {
		t.Errorf("two files an hour apart: %v", err)
	}
}

// pcapngTSResol is a pcapng file of one interface whose if_tsresol option
// is res, and two UDP frames 1 and 2 units of that resolution apart from 0.
func pcapngTSResol(res byte) func(w *bufio.Writer) {
	return func(w *bufio.Writer) {
		le := binary.LittleEndian
		put := func(vs ...uint32) {
			for _, v := range vs {
				binary.Write(w, le, v)
			}
		}
		put(0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0xffffffff, 0xffffffff, 28)
		put(1, 32, 1, 65535, 9|1<<16, uint32(res), 0, 32) // if_tsresol, opt_endofopt
		frame := udpFrame(1, 2)
		n := uint32(len(frame))
		pad := (4 - n%4) % 4
		for ts := uint32(1); ts <= 2; ts++ {
			put(6, 32+n+pad, 0, 0, ts, n, n)
			w.Write(frame)
			w.Write(make([]byte, pad))
			put(32 + n + pad)
		}
	}
}

// TestPcapngTSResolZero: a pcapng interface with if_tsresol 0 (by the
// specification one-second stamps) is refused naming the file and the
// block; the pcapng reader took it for "absent" and read microseconds.
func TestPcapngTSResolZero(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	zero := writeFile(t, dir, "res0.pcapng", pcapngTSResol(0))
	micro := writeFile(t, dir, "res6.pcapng", pcapngTSResol(6))
	for _, args := range [][]string{{"trace", "stats", zero}, {"replay", "--trace", zero}} {
		msg := expectRefusal(t, bin, args, "res0.pcapng", 0)
		if !strings.Contains(msg, "if_tsresol 0") || !strings.Contains(msg, "interface description block 0") {
			t.Errorf("%v: the error does not name the option and its block: %s", args, msg)
		}
	}
	out, err := run(t, "trace", "stats", micro)
	if err != nil {
		t.Fatalf("if_tsresol 6: %v", err)
	}
	// Two stamps 1 µs apart at the resolution the file declares.
	if !strings.Contains(out, "duration      0.000001 s") || !strings.Contains(out, "1e-06 s") {
		t.Errorf("if_tsresol 6: stats\n%s", out)
	}
}
