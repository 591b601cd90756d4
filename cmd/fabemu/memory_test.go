package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/model"
)

// dryRunEstimate returns the memory estimate `fabemu sim --dry-run`
// prints for args.
func dryRunEstimate(t *testing.T, bin string, args ...string) float64 {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"sim", "--dry-run"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("dry run %v: %v\n%s", args, err, out)
	}
	m := regexp.MustCompile(`memory estimate\s+([0-9.]+) (B|KiB|MiB|GiB)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("dry run %v printed no estimate:\n%s", args, out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v * map[string]float64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[string(m[2])]
}

// peakRSS runs bin with args and returns its peak resident set in bytes.
// getrusage's ru_maxrss of the child would count this test process too: a
// child starts sharing the parent's memory until it execs (vfork), and the
// kernel carries that high-water mark across the exec. So it polls the
// child's own VmHWM (per address space, reset by exec) until the child
// exits; the peak of a run is reached while it runs, not in the last
// milliseconds of writing its report.
func peakRSS(t *testing.T, bin string, args ...string) float64 {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	for {
		if b, err := os.ReadFile(status); err == nil {
			if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b); m != nil {
				kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
				peak = max(peak, kb)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out.Bytes())
			}
			if peak == 0 {
				t.Skip("no VmHWM in /proc: cannot measure the peak resident set")
			}
			return float64(peak) * 1024
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// TestMemoryEstimateMatchesPresets runs every preset for a short window
// as a subprocess and compares its peak resident set with the estimate.
//
// Tolerance: the estimate must not be below 60% of the measured peak (a
// run it lets through must not need much more than it said), and not
// above ten times it. The lower side is set by the paper 003 MINs, which
// the estimate undercounts by about 30% for a reason not yet traced
// (measured 0.70-0.73 on different days; at 0.7 the bound failed on load
// alone); docs/performance.md says so. The upper side is loose on purpose: the estimate
// counts every switch buffer full of packets, a bound a saturated run
// approaches but a 5 us test window does not, and the MIN presets of
// paper 000 have large buffers (docs/performance.md lists the ratios).
func TestMemoryEstimateMatchesPresets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every preset as a subprocess")
	}
	bin := buildBinary(t)
	for _, p := range model.Presets() {
		est := dryRunEstimate(t, bin, "--preset", p.Name)
		rss := peakRSS(t, bin, "sim", "--preset", p.Name, "--duration", "5us", "--warmup", "1us")
		ratio := est / rss
		t.Logf("%-22s estimate %6.1f MiB  peak RSS %6.1f MiB  ratio %.2f", p.Name, est/(1<<20), rss/(1<<20), ratio)
		if ratio < 0.6 || ratio > 10 {
			t.Errorf("%s: estimate %.1f MiB, measured %.1f MiB (ratio %.2f, want 0.6..10)", p.Name, est/(1<<20), rss/(1<<20), ratio)
		}
	}
}

// TestHugeTopologyRefusedFast: a million-switch torus is refused from its
// counts, before anything is built, in well under a second.
func TestHugeTopologyRefusedFast(t *testing.T) {
	bin := buildBinary(t)
	start := time.Now()
	cmd := exec.Command(bin, "sim", "--set", "topology.k=[1000,1000]", "--set", "topology.hosts_per_switch=8", "--duration", "1us")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if took := time.Since(start); took > time.Second {
		t.Errorf("refusal took %v, want under 1s", took)
	}
	if err == nil {
		t.Fatal("a 1000x1000 torus was not refused")
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "fabemu: topology.k=[1000,1000]: 1,000,000 switches") || !strings.Contains(msg, "--max-memory") {
		t.Errorf("stderr = %q, want one line naming topology.k, the estimate and --max-memory", msg)
	}
	// --max-memory overrides in both directions: a tiny limit refuses the default preset.
	out, err := exec.Command(bin, "sim", "--dry-run", "--max-memory", "1MiB").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "1.0 MiB --max-memory") {
		t.Errorf("--max-memory 1MiB: err %v, output %s", err, out)
	}
}
