package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputRegistry: every command refuses, before running, an output
// that is one of its inputs (or inside an input directory) and two
// outputs that name one file (after resolving symbolic links); the
// inputs are left untouched. Before, each of these ran and one file was
// lost.
func TestOutputRegistry(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	shards := filepath.Join(dir, "results")
	if err := os.Mkdir(shards, 0o755); err != nil {
		t.Fatal(err)
	}
	shard := writeFile(t, shards, "shard-0000-of-0004.jsonl", text("{}\n"))
	merged := writeFile(t, dir, "m.json", text("{}\n"))
	cfg := writeFile(t, dir, "c.yaml", text("taps:\n  - name: fzo0\n"))
	x := filepath.Join(dir, "x.out")
	link := filepath.Join(dir, "link.out")
	if err := os.Symlink(x, link); err != nil {
		t.Fatal(err)
	}
	sim := []string{"sim", "--preset", "tap-pair-10g", "--duration", "1us"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"sweep merge into its shard", []string{"sweep", "merge", shards, "--out", shard}, "a shard result file's name"},
		{"plot --json over its input", []string{"plot", merged, "--json", merged}, "also an input"},
		{"run --pcap-out over the config", []string{"run", "--config", cfg, "--pcap-out", cfg}, "also an input"},
		{"sim --json and --timeseries", append(sim, "--json", x, "--timeseries", x), "same file"},
		{"sim --json and --timeseries by a link", append(sim, "--json", x, "--timeseries", link), "same file"},
		{"replay --json and --timeseries", []string{"replay", "--limit", "10", "--json", x, "--timeseries", x}, "same file"},
		{"replay --json and --pcap-out", []string{"replay", "--limit", "10", "--json", x, "--pcap-out", x}, "same file"},
		{"experiment --plot and --json", []string{"experiment", "paper000-corner2-recn", "--quick", "--plot", x, "--json", x}, "same file"},
		{"capture --out and --json", []string{"capture", "--iface", "lo", "--out", x, "--json", x}, "same file"},
		{"sim --plot without --sweep-load", append(sim, "--plot", x), "--sweep-load"},
		{"sim --sweep-load and --load", append(sim, "--sweep-load", "0.1:0.2:0.1", "--load", "0.7"), "--load"},
		{"sim --jobs -5", append(sim, "--sweep-load", "0.1:0.2:0.1", "--jobs", "-5"), "--jobs"},
		{"sim --dry-run --sweep-load NaN", append(sim, "--dry-run", "--sweep-load", "0.1:0.5:NaN"), "--sweep-load"},
		{"capture --snaplen 0", []string{"capture", "--iface", "lo", "--out", x, "--snaplen", "0"}, "--snaplen"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectRefusal(t, bin, c.args, c.want, 0)
		})
	}
	for _, p := range []string{shard, merged, cfg} {
		if b, err := os.ReadFile(p); err != nil || len(b) == 0 {
			t.Errorf("%s was touched: %v, %d bytes", p, err, len(b))
		}
	}
	if _, err := os.Stat(x); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was written by a refused command", x)
	}

	// A load sweep without --plot writes sweep.svg in the working
	// directory; it no longer overwrites one that is there.
	wd := t.TempDir()
	old := writeFile(t, wd, "sweep.svg", text("<svg/>"))
	cmd := exec.Command(bin, append(sim, "--sweep-load", "0.1:0.2:0.1")...)
	cmd.Dir = wd
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "sweep.svg exists") {
		t.Errorf("a sweep over an existing sweep.svg: err %v, %s", err, out)
	}
	if b, _ := os.ReadFile(old); string(b) != "<svg/>" {
		t.Errorf("sweep.svg overwritten")
	}
}

// TestInterruptedOutputLeavesNoTemporary: a command interrupted by
// SIGINT or SIGTERM while it writes an output removes its temporary file
// (before, a hidden .out.csv.NNN.tmp of hundreds of MB stayed) and dies
// of the signal.
func TestInterruptedOutputLeavesNoTemporary(t *testing.T) {
	bin := buildBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "trace", "gen", filepath.Join(dir, "out.csv"), "--records", "100000000")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait for the temporary file to grow: the output is being
			// written (polling, not a fixed sleep, so a slow machine
			// only waits longer).
			for {
				ents, _ := os.ReadDir(dir)
				if len(ents) == 1 {
					if fi, err := ents[0].Info(); err == nil && fi.Size() > 1<<20 {
						break
					}
				}
				if ctx.Err() != nil {
					t.Fatal("no temporary file appeared")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("exit: %v", err)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("exit status %v, want death by %v", ee, sig)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}
