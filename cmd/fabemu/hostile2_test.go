package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestHostileRound2 is the second hostile-input round (docs/validation.md,
// "Hostile inputs"): every command that crashed, hung or gave a wrong
// result is now refused before running with one line naming the key or
// flag at fault.
func TestHostileRound2(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	file := func(name, body string) string { return writeFile(t, dir, name, text(body)) }
	sim := []string{"sim", "--preset", "tap-pair-10g", "--duration", "5us", "--set", "traffic.load=0.5"}
	simWith := func(args ...string) []string { return append(append([]string(nil), sim...), args...) }
	tap := "taps:\n  - name: fzt0\n"
	zeroShards := filepath.Join(dir, "zero-shards")
	if err := os.Mkdir(zeroShards, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(zeroShards, "shard-0000-of-0001.jsonl")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "trace.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	bigFile := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(bigFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(bigFile, 17<<20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		// Crashes and wrong results.
		{"link_length_m 2e15", simWith("--set", "fabric.link_length_m=2e15"), "fabric.link_length_m"},
		{"yaml link_length_m .inf", simWith("--config", file("len-inf.yaml", "fabric:\n  link_length_m: .inf\n")), "fabric.link_length_m"},
		{"yaml link_length_m .nan", simWith("--config", file("len-nan.yaml", "fabric:\n  link_length_m: .nan\n")), "fabric.link_length_m"},
		{"crossbar_speedup 1e-15", simWith("--set", "fabric.crossbar_speedup=1e-15"), "fabric.crossbar_speedup"},
		{"credit_block 4GiB", simWith("--set", "fabric.credit_block=4GiB"), "fabric.credit_block"},
		{"credit_block 1TiB", simWith("--set", "fabric.credit_block=1TiB"), "fabric.credit_block"},
		{"run crossbar_speedup 1e-20", []string{"run", "--demo", "2", "--set", "fabric.crossbar_speedup=1e-20"}, "fabric.crossbar_speedup"},
		{"tap zero mac", []string{"run", "--config", file("zmac.yaml", tap+"    mac: '00:00:00:00:00:00'\n")}, "all-zero"},
		{"yaml crossbar_speedup .nan", simWith("--config", file("xb-nan.yaml", "fabric: {crossbar_speedup: .nan}\n")), "fabric.crossbar_speedup"},
		{"yaml crossbar_speedup .inf", simWith("--config", file("xb-inf.yaml", "fabric: {crossbar_speedup: .inf}\n")), "fabric.crossbar_speedup"},
		{"yaml u1 .nan", simWith("--config", file("u1.yaml", "nic: {injection_control: {u1: .nan}}\n")), "nic.injection_control.u1"},
		{"yaml u4 .inf", simWith("--config", file("u4.yaml", "nic: {injection_control: {u4: .inf}}\n")), "nic.injection_control.u4"},
		{"yaml gather_period .nan", simWith("--config", file("gp.yaml", "nic: {injection_control: {gather_period: .nan}}\n")), "gather_period"},
		{"yaml tune_period .inf", simWith("--config", file("tp.yaml", "nic: {injection_control: {tune_period: .inf}}\n")), "tune_period"},
		{"--dilation NaN", []string{"run", "--demo", "2", "--dilation", "NaN"}, "--dilation"},
		{"--dilation 1e-300", []string{"run", "--demo", "2", "--dilation", "1e-300"}, "pacing.dilation"},
		{"yaml dilation .nan", []string{"run", "--config", file("dil.yaml", tap+"pacing: {dilation: .nan}\n")}, "pacing.dilation"},
		{"credit_packet 1TiB", simWith("--set", "fabric.credit_packet=1TiB"), "fabric.credit_packet"},
		{"trace gen rate 1e-300", []string{"trace", "gen", filepath.Join(dir, "g.csv"), "--rate", "1e-300", "--records", "10"}, "--rate"},
		// Hangs.
		{"trace gen burst-len 1e300", []string{"trace", "gen", filepath.Join(dir, "g.csv"), "--burst-len", "1e300", "--records", "10"}, "burst length"},
		{"trace gen 1e11 records", []string{"trace", "gen", filepath.Join(dir, "g.csv"), "--records", "100000000000"}, "--records"},
		{"sim --config /dev/zero", []string{"sim", "--config", "/dev/zero"}, "/dev/zero"},
		{"sim --config /dev/urandom", []string{"sim", "--config", "/dev/urandom"}, "/dev/urandom"},
		{"run --config /dev/zero", []string{"run", "--config", "/dev/zero"}, "/dev/zero"},
		{"replay --map /dev/zero", []string{"replay", "--trace", "testdata/capture-small.pcap", "--map", "/dev/zero"}, "/dev/zero"},
		{"experiment /dev/zero", []string{"experiment", "/dev/zero"}, "/dev/zero"},
		{"sweep plan /dev/zero", []string{"sweep", "plan", "/dev/zero"}, "/dev/zero"},
		{"plot /dev/zero", []string{"plot", "/dev/zero"}, "/dev/zero"},
		{"sweep merge, a shard linked to /dev/zero", []string{"sweep", "merge", zeroShards, "--out", filepath.Join(dir, "m.json")}, "shard-0000-of-0001.jsonl"},
		{"sweep status, a shard linked to /dev/zero", []string{"sweep", "status", zeroShards}, "shard-0000-of-0001.jsonl"},
		{"replay --trace FIFO", []string{"replay", "--trace", fifo}, "pipe"},
		{"experiment over the size cap", []string{"experiment", bigFile}, "larger than"},
		// Memory the estimate did not see.
		{"sim run.bin=1ps", []string{"sim", "--preset", "tap-pair-10g", "--duration", "1ms", "--set", "run.bin=1ps", "--max-memory", "100MiB"}, "run.bin"},
		{"replay run.bin=1ns", []string{"replay", "--set", "run.bin=1ns"}, "run.bin"},
		{"a message larger than the source bound", []string{"sim", "--sizes", "1GiB", "--load", "1", "--set", "run.max_source_packets=1000", "--duration", "5us"}, "traffic.sizes"},
		// The daemon's neighbours.
		{"duplicate macs", []string{"run", "--config", file("dmac.yaml", tap+"    mac: '02:00:00:00:00:01'\n  - name: fzt1\n    mac: '02:00:00:00:00:01'\n")}, "taps[1]: mac 02:00:00:00:00:01 is also the mac of taps[0]"},
		// Errors that blamed the wrong key.
		{"trace gen --sizes 4GiB:1", []string{"trace", "gen", filepath.Join(dir, "g.csv"), "--sizes", "4GiB:1", "--records", "10"}, `"4GiB:1"`},
		{"set background.load=NaN", []string{"set", "background.load=NaN", "--socket", filepath.Join(dir, "none.sock")}, "background.load=NaN"},
		{"truncated topology JSON", simWith("--config", file("cut.yaml", "topology:\n  kind: file\n  path: "+file("cut.json", `{"switches": [{"name": "s0", "ports": 4}], "hosts": [`)+"\n")), "cut short"},
		{"link_rate 1bps", simWith("--set", "fabric.link_rate=1bps"), "fabric.link_rate"},
		{"yaml link_rate 10", simWith("--config", file("lr.yaml", "fabric: {link_rate: 10}\n")), "fabric.link_rate"},
		{"credit_block 1MiB", simWith("--set", "fabric.credit_block=1MiB"), "fabric.credit_block"},
		{"escape_vl_buffer 1TiB", simWith("--routing", "adaptive", "--set", "fabric.escape_vl_buffer=1TiB"), "fabric.escape_vl_buffer"},
		{"escape_vl_buffer 1MiB", simWith("--routing", "adaptive", "--set", "fabric.escape_vl_buffer=1MiB"), "fabric.escape_vl_buffer"},
		{"input_buffer 512GiB", simWith("--set", "fabric.input_buffer=512GiB"), "fabric.input_buffer"},
		// Silently accepted values.
		{"--realtime-priority -2", []string{"run", "--demo", "2", "--realtime-priority", "-2"}, "--realtime-priority"},
		{"owner -5", []string{"run", "--config", file("own.yaml", tap+"    owner: -5\n")}, "owner -5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expectRefusal(t, bin, c.args, c.want, 0)
		})
	}
}
