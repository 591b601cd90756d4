package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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

// TestTraceStatsPipe: `trace stats` of a pipe or FIFO opens it once and
// tells the format from a peek at its one buffer, so a packet capture
// (plain or gzip), an SRT or a CSV trace piped in is summarised; it used
// to open a capture a second time and say "not a packet capture (no pcap
// or pcapng magic; first bytes )". An empty pipe is named as empty, not
// as an unknown format. `replay --trace FIFO` is refused at once by name
// (a replay reads its trace twice).
func TestTraceStatsPipe(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	capture, err := os.ReadFile(filepath.Join("testdata", "capture-small.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(capture)
	zw.Close()
	srt := filepath.Join(dir, "t.srt")
	if out, err := exec.Command(bin, "trace", "gen", srt, "--like", "cello99", "--records", "50", "--seed", "1").CombinedOutput(); err != nil {
		t.Fatalf("trace gen: %v\n%s", err, out)
	}
	srtBytes, err := os.ReadFile(srt)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		input []byte
		want  string
	}{
		{"pcap", capture, "36 packets"},
		{"pcap.gz", gz.Bytes(), "36 packets"},
		{"srt", srtBytes, "records                   50"},
	} {
		cmd := exec.Command(bin, "trace", "stats", "/dev/stdin")
		cmd.Stdin = bytes.NewReader(c.input) // not an *os.File: exec feeds it through a pipe
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s through a pipe: %v\n%s", c.name, err, out)
		}
	}
	empty := exec.Command(bin, "trace", "stats", "/dev/stdin")
	empty.Stdin = bytes.NewReader(nil)
	if out, err := empty.CombinedOutput(); err == nil || !strings.Contains(string(out), "/dev/stdin: empty") {
		t.Errorf("an empty pipe: %v\n%s", err, out)
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(fifo, capture, 0o600) }()
	out, err := exec.Command(bin, "trace", "stats", fifo).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "36 packets") {
		t.Errorf("a capture through a FIFO: %v\n%s", err, out)
	}
	if err := <-done; err != nil {
		t.Errorf("writing the FIFO: %v", err)
	}
	expectRefusal(t, bin, []string{"replay", "--trace", fifo}, "is a pipe: a replay reads its trace more than once", 0)
}

// TestSweepPlanUsesSimEstimate: `sweep plan` estimates a point with sim's
// estimator (model.EstimateRun of the row, experiment.Workload), without
// building the topology, and refuses a plan whose largest point does not
// fit as sim refuses the run. It used to build every row's topology for a
// rough guess of its own: topology.k=[200,200] took 44 s and estimated
// 6,309,952 MiB per point (sim --dry-run: 908 MiB), [1000,1000] gave no
// answer in 60 s where sim refuses at once.
func TestSweepPlanUsesSimEstimate(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	spec := func(k string) string {
		return writeFile(t, dir, "k"+k+".yaml", text("name: big\ngrid:\n  preset: torus8x8-dor\n  set: [\"topology.k=["+k+","+k+"]\", run.duration=1us, run.warmup=0s]\n  loads: [0.5]\n"))
	}
	out, err := run(t, "sweep", "plan", spec("200"))
	if err != nil {
		t.Fatalf("sweep plan: %v\n%s", err, out)
	}
	dry, err := run(t, "sim", "--preset", "torus8x8-dor", "--set", "topology.k=[200,200]", "--duration", "1us", "--warmup", "0s", "--load", "0.5", "--dry-run")
	if err != nil {
		t.Fatalf("sim --dry-run: %v\n%s", err, dry)
	}
	m := regexp.MustCompile(`memory estimate\s+([0-9.]+) MiB`).FindStringSubmatch(dry)
	if m == nil {
		t.Fatalf("no estimate in sim --dry-run:\n%s", dry)
	}
	mib, _ := strconv.ParseFloat(m[1], 64)
	// sim rounds the MiB to the nearest, the plan up.
	p := regexp.MustCompile(`at most (\d+) MiB per point`).FindStringSubmatch(out)
	if p == nil {
		t.Fatalf("no estimate in sweep plan:\n%s", out)
	}
	if got, _ := strconv.ParseFloat(p[1], 64); math.Abs(got-mib) > 1 {
		t.Errorf("sweep plan estimates %s MiB per point, sim %s MiB:\n%s", p[1], m[1], out)
	}
	// --max-memory, so that the refusal does not depend on this machine.
	expectRefusal(t, bin, []string{"sweep", "plan", spec("1000"), "--max-memory", "8GiB"}, "topology.k=[1000,1000]: 1,000,000 switches and 1,000,000 hosts need about", 0)
	expectRefusal(t, bin, []string{"sweep", "plan", spec("200"), "--max-memory", "100MiB"}, "topology.k=[200,200]", 0)
}

// TestZeroIsNotDefaultRound2: the other keys whose 0 stood for their
// default (`config explain` said "0 = 24", "0 = 30", "0 = 1024", or a
// comment "a zero field means its default") refuse an explicit 0 from
// --set or a file, naming the key, the range and the default; they used to
// run the default behind the user's back. A value in range still runs.
func TestZeroIsNotDefaultRound2(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	min64 := []string{"sim", "--preset", "paper000-min64", "--duration", "1us"}
	with := func(args ...string) []string { return append(append([]string(nil), min64...), args...) }
	keys := map[string]string{
		"nic.delivery.psn_bits":              "want 2 to 32 bits (leave the key out for the default, 24)",
		"nic.delivery.ack_bytes":             "want 1 to 4096 bytes (leave the key out for the default, 30B)",
		"nic.delivery.nack_bytes":            "want 1 to 4096 bytes (leave the key out for the default, 30B)",
		"nic.delivery.order_streams":         "want a positive stream count, or -1 for none (leave the key out for the default, 1024)",
		"fabric.recn.detection_threshold":    "want a positive size (leave the key out for the default, 2KiB)",
		"fabric.recn.notification_threshold": "want a positive size (leave the key out for the default, 1KiB)",
		"fabric.recn.xoff_threshold":         "want a positive size (leave the key out for the default, 2KiB)",
		"fabric.recn.xon_threshold":          "want a positive size below xoff_threshold (leave the key out for the default, 1KiB)",
		"fabric.recn.control_packet":         "want a positive size (leave the key out for the default, 8B)",
		"fabric.recn.nic_saqs":               "want 1 to 64, or -1 for none (leave the key out for the default, 8)",
		"fabric.recn.nic_saq_memory":         "want a positive size (leave the key out for the default, 1MiB)",
		"fabric.recn_iq.detection_threshold": "want a positive packet count (leave the key out for the default, 4)",
		"fabric.recn_iq.xoff_threshold":      "want a positive packet count (leave the key out for the default, 5)",
		"fabric.recn_iq.xon_threshold":       "want a positive packet count below xoff_threshold (leave the key out for the default, 2)",
		"fabric.recn_iq.control_packet":      "want a positive size (leave the key out for the default, 8B)",
		"fabric.recn_iq.nic_saqs":            "want 1 to 64, or -1 for none (leave the key out for the default, 4)",
		"fabric.recn_iq.nic_saq_memory":      "want a positive size (leave the key out for the default, 1MiB)",
	}
	for key, want := range keys {
		t.Run(key, func(t *testing.T) {
			expectRefusal(t, bin, with("--set", key+"=0"), "--set "+key+": 0: "+want, 0)
			parts := strings.Split(key, ".")
			body := ""
			for i, p := range parts {
				body += strings.Repeat("  ", i) + p + ":"
				if i < len(parts)-1 {
					body += "\n"
				}
			}
			file := writeFile(t, dir, key+".yaml", text(body+" 0\n"))
			expectRefusal(t, bin, with("--config", file), key+": 0: "+want, 0)
		})
	}
	for _, set := range []string{"nic.delivery.psn_bits=16", "fabric.recn.xon_threshold=512B", "nic.delivery.order_streams=-1"} {
		if _, err := run(t, with("--set", set)...); err != nil {
			t.Errorf("--set %s: %v", set, err)
		}
	}
}
