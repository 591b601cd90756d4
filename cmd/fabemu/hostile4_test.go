package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runPeak runs bin with args and --json, and returns the peak resident set
// the run reports (run.peak_rss_bytes: the child's VmHWM read by itself;
// see peakRSS) and the summary's peak_outstanding (replay only).
func runPeak(t *testing.T, bin string, args ...string) (rss, outstanding int64) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "run.json")
	out, err := exec.Command(bin, append(args, "--json", js)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		PeakOutstanding int64 `json:"peak_outstanding"`
		Run             struct {
			PeakRSSBytes int64 `json:"peak_rss_bytes"`
		} `json:"run"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if sum.Run.PeakRSSBytes <= 0 {
		t.Skip("the run reported no peak resident set (no /proc/self/status VmHWM here)")
	}
	return sum.Run.PeakRSSBytes, sum.PeakOutstanding
}

// TestReplayOutstandingMemory: an open-loop replay whose compressed
// arrivals outrun the fabric keeps every waiting request as a compact
// record (request, message, one source-queue entry), packetized only at
// the head of its source queue, so its memory follows the outstanding
// requests at a few hundred bytes each, not their packets (it was about
// 2.3 KiB each: 652 MB for 275,558 outstanding). Past
// run.max_outstanding_requests the replay stops with an error naming the
// key; the estimate counts the bound, and --max-memory below it refuses
// the run naming the key; an explicit 0 is refused.
func TestReplayOutstandingMemory(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "big.csv")
	if out, err := exec.Command(bin, "trace", "gen", trace, "--like", "cello99", "--records", "60000", "--seed", "1").CombinedOutput(); err != nil {
		t.Fatalf("trace gen: %v\n%s", err, out)
	}
	replay := []string{"replay", "--trace", trace, "--compression", "8000"}
	with := func(args ...string) []string { return append(append([]string(nil), replay...), args...) }
	rss, peak := runPeak(t, bin, replay...)
	t.Logf("peak outstanding %d requests, peak RSS %d MiB", peak, rss>>20)
	if peak < 40000 {
		t.Fatalf("peak outstanding %d: the case no longer overloads the fabric", peak)
	}
	// 64 MiB for the runtime, the model and the trace reader (the run
	// baseline is under 30 MiB), 1 KiB per outstanding request: the eager
	// split took 2.3 KiB each.
	if limit := int64(64<<20) + peak*1024; rss > limit {
		t.Errorf("peak RSS %d MiB for %d outstanding requests, want under %d MiB (packets made before their turn?)", rss>>20, peak, limit>>20)
	}
	expectRefusal(t, bin, with("--set", "run.max_outstanding_requests=1000"), "run.max_outstanding_requests=1000: at ", 0)
	expectRefusal(t, bin, with("--set", "run.max_outstanding_requests=0"), "run.max_outstanding_requests: 0: want -1 (no bound) or 1 to", 0)
	expectRefusal(t, bin, with("--max-memory", "100MiB"), "run.max_outstanding_requests=1000000: a replay keeping that many requests outstanding needs about", 0)
	out, err := run(t, with("--dry-run")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "outstanding requests") {
		t.Errorf("--dry-run does not count the outstanding requests:\n%s", out)
	}
	if _, err := run(t, with("--set", "run.max_outstanding_requests=-1", "--limit", "2000")...); err != nil {
		t.Errorf("run.max_outstanding_requests=-1: %v", err)
	}
}

// TestLazyMessagePackets: a message waiting at a plain FIFO NIC is one
// queue entry, split into packets one at a time as they reach the head of
// the queue. A 1 GiB message (262,144 packets of 4 KiB) used to be split
// at once: 174 MiB resident for a 20 us run of two hosts.
func TestLazyMessagePackets(t *testing.T) {
	bin := buildBinary(t)
	rss, _ := runPeak(t, bin, "sim", "--preset", "tap-pair-10g", "--sizes", "1GiB", "--load", "1", "--duration", "20us")
	t.Logf("peak RSS %d MiB", rss>>20)
	if rss > 96<<20 {
		t.Errorf("peak RSS %d MiB for one 1 GiB message per host, want under 96 MiB (split into packets at once?)", rss>>20)
	}
}

// TestProgressFlag: a run writes no progress to a stderr that is not a
// terminal (tests and goldens read it), and with --progress writes whole
// progress lines there: sim its simulated time and events per second,
// replay its requests, replay time and events per second, experiment its
// runs. Before, a long run showed nothing off a terminal and no events
// per second on one.
func TestProgressFlag(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	exp := writeFile(t, dir, "tiny.yaml", text("name: tiny\nkind: sim\nbase:\n  preset: tap-pair-10g\n  set: [run.duration=5us, run.warmup=1us]\nrows:\n  - {name: a}\n"))
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"sim", "--preset", "tap-pair-10g", "--duration", "5us", "--warmup", "1us"}, []string{"sim  [", " us/s", " events/s"}},
		{[]string{"replay", "--limit", "500"}, []string{"replay  [", " requests/s", " events/s", " simulated"}},
		{[]string{"experiment", exp}, []string{"tiny  [", " runs"}},
	}
	for _, c := range cases {
		for _, force := range []bool{false, true} {
			args := c.args
			if force {
				args = append(append([]string(nil), args...), "--progress")
			}
			cmd := exec.Command(bin, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, stderr.String())
			}
			got := stderr.String()
			if !force {
				if got != "" {
					t.Errorf("%v wrote %q to a stderr that is not a terminal", args, got)
				}
				continue
			}
			if strings.Contains(got, "\r") {
				t.Errorf("%v --progress: carriage return off a terminal: %q", args, got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("%v: stderr %q lacks %q", args, got, w)
				}
			}
		}
	}
}
