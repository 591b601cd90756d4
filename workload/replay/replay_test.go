package replay

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/sharedtest"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/blockgen"
)

// ajwTrace returns the path of the shared 1992 HP trace or skips the test.
func ajwTrace(t testing.TB) string { return sharedtest.Trace(t, "ajw.1week.srt") }

func replayCfg(t testing.TB, edit func(*ReplaySimConfig)) ReplaySimConfig {
	t.Helper()
	c, err := ReplayPreset("paper004-torus4x4")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&c)
	}
	return c
}

func mustReplay(t testing.TB, c ReplaySimConfig) *ReplaySummary {
	t.Helper()
	sum, err := RunReplay(c, nil)
	if err != nil {
		t.Fatalf("replay (compression %g): %v", c.Replay.Compression, err)
	}
	checkReplay(t, sum)
	return sum
}

// checkReplay asserts what every finished replay must show.
func checkReplay(t testing.TB, s *ReplaySummary) {
	t.Helper()
	if !s.Invariants.OK {
		t.Fatalf("invariants violated: %v", s.Invariants.Violations)
	}
	if s.Requests != uint64(s.Trace.Records) || s.Completed != s.Requests {
		t.Fatalf("requests %d, completed %d, window holds %d", s.Requests, s.Completed, s.Trace.Records)
	}
	if s.Reads+s.Writes != s.Requests {
		t.Fatalf("reads %d + writes %d != requests %d", s.Reads, s.Writes, s.Requests)
	}
	if s.TraceExecutionTimeNs < s.LastIssueNs {
		t.Fatalf("execution time %g ns before the last issue %g ns", s.TraceExecutionTimeNs, s.LastIssueNs)
	}
	if s.Packets.Generated != s.Packets.Delivered || s.Packets.InFlight != 0 || s.Packets.QueuedAtSources != 0 {
		t.Fatalf("fabric not drained: %+v", s.Packets)
	}
	if s.LatencyNs.Count != s.Completed {
		t.Fatalf("latency samples %d != completed %d", s.LatencyNs.Count, s.Completed)
	}
}

func TestReplaySampleDefault(t *testing.T) {
	c := replayCfg(t, nil)
	if c.Replay.Trace != "" || c.Replay.Compression != 2.5 || c.Replay.Disks != 23 {
		t.Fatalf("default replay config: %+v", c.Replay)
	}
	s := mustReplay(t, c)
	if s.Requests != 24000 || !strings.Contains(s.Trace.Name, "embedded") || s.Schema != ReplaySchema {
		t.Fatalf("sample replay: %d requests, trace %q, schema %q", s.Requests, s.Trace.Name, s.Schema)
	}
	if len(s.Mapping.DiskHosts) != 23 || s.Mapping.InitiatorHosts != 128-23 {
		t.Fatalf("mapping: %+v", s.Mapping)
	}
	// The sample spans about 330 s of trace time; at compression 2.5 the
	// last request goes out near 132 s.
	if got := s.LastIssueNs / 1e9; got < 125 || got > 135 {
		t.Fatalf("last issue at %g s, want about 330/2.5", got)
	}
	var issued, completed int64
	for _, b := range s.Timeseries {
		issued += b.Issued
		completed += b.Completed
	}
	if issued != 24000 || completed != 24000 {
		t.Fatalf("time series counts issued %d completed %d", issued, completed)
	}
}

// TestReplayAJWCompression1 replays the whole real trace (one week, 44,519
// records) without compression: every request completes, and as the fabric
// is nearly idle the execution time is the trace span plus one request's
// latency.
func TestReplayAJWCompression1(t *testing.T) {
	path := ajwTrace(t)
	s := mustReplay(t, replayCfg(t, func(c *ReplaySimConfig) {
		c.Replay.Trace = path
		c.Replay.Compression = 1
	}))
	if s.Requests != 44519 {
		t.Fatalf("requests %d, want 44519", s.Requests)
	}
	span := 603064.589e9 // ns, from trace stats
	if s.LastIssueNs < span-1e6 || s.TraceExecutionTimeNs > span+1e9 {
		t.Fatalf("last issue %g ns, execution %g ns, want both about %g", s.LastIssueNs, s.TraceExecutionTimeNs, span)
	}
	t.Logf("ajw at compression 1: execution time %.6f s, %d requests, latency %v ns", s.TraceExecutionTimeNs/1e9, s.Requests, s.LatencyNs)
}

// diskLinkBound is the analytic lower bound on the execution time: the
// wire bytes the busiest disk link carries in one direction divided by the
// link's data rate. Reads bring a request in and send data out; writes
// bring data in and send a completion out.
func diskLinkBound(t *testing.T, c ReplaySimConfig) float64 {
	rd, _, err := c.Replay.OpenTrace()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	mtu, hdr := int64(c.NIC.MTU), int64(c.NIC.HeaderBytes)
	wire := func(b int64) int64 { return b + max(1, (b+mtu-1)/mtu)*hdr }
	in, out := map[uint32]int64{}, map[uint32]int64{}
	w := window{cfg: c.Replay}
	for {
		rec, _, err := w.next(rd)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		req := int64(c.Replay.RequestBytes)
		if rec.Op == tracefmt.OpRead {
			in[rec.Device] += wire(req)
			out[rec.Device] += wire(int64(rec.Size))
		} else {
			in[rec.Device] += wire(int64(rec.Size))
			out[rec.Device] += wire(req)
		}
	}
	var most int64
	for d := range in {
		most = max(most, in[d], out[d])
	}
	bytesPerNs := float64(c.Fabric.DataRate()) / 8e9
	return float64(most) / bytesPerNs
}

// TestReplayAJWCompressionSweep checks the shape of the paper's main
// figure on the first 5,000 records of ajw (2.7 days of trace time, 30 MB):
// raising the compression factor raises accepted traffic and lowers the
// execution time until the disk links saturate, after which the execution
// time stops falling.
//
// Tolerances: below saturation the execution time is span/C plus one
// request's latency, so it falls almost exactly 1/C and accepted traffic
// rises as C; we allow 2% slack for the latency tail. Past saturation
// (C = 1e8 and 1e9 issue the whole window within 2.3 ms and 0.23 ms,
// against about 82 ms of work on the busiest disk link) the execution time
// is set by that link: it must change by less than 5% when C grows
// tenfold, stay above the analytic bound (busiest disk link's wire bytes /
// data rate) and within 1.5 times of it (arbitration and the request/reply
// dependency cost some).
func TestReplayAJWCompressionSweep(t *testing.T) {
	path := ajwTrace(t)
	comps := []float64{1, 100, 1e4, 1e6, 1e7, 1e8, 1e9}
	var runs []*ReplaySummary
	var bound float64
	for _, cf := range comps {
		c := replayCfg(t, func(c *ReplaySimConfig) {
			c.Replay.Trace, c.Replay.Compression, c.Replay.Limit = path, cf, 5000
		})
		if bound == 0 {
			bound = diskLinkBound(t, c)
		}
		s := mustReplay(t, c)
		runs = append(runs, s)
		t.Logf("compression %-6g execution %12.6g ns  last issue %12.6g ns  accepted %.4g bytes/ns/switch  latency mean %.4g ns",
			cf, s.TraceExecutionTimeNs, s.LastIssueNs, s.AcceptedBytesPerNsPerSwitch, s.LatencyNs.Mean)
	}
	for i := 1; i < len(runs); i++ {
		a, b := runs[i-1], runs[i]
		if b.AcceptedBytesPerNsPerSwitch < a.AcceptedBytesPerNsPerSwitch*0.98 {
			t.Errorf("accepted traffic fell from %g (C=%g) to %g (C=%g)", a.AcceptedBytesPerNsPerSwitch, comps[i-1], b.AcceptedBytesPerNsPerSwitch, comps[i])
		}
		if b.TraceExecutionTimeNs > a.TraceExecutionTimeNs*1.02 {
			t.Errorf("execution time rose from %g (C=%g) to %g (C=%g)", a.TraceExecutionTimeNs, comps[i-1], b.TraceExecutionTimeNs, comps[i])
		}
	}
	// Below saturation: execution time tracks span/C.
	if r := runs[1].TraceExecutionTimeNs / runs[0].TraceExecutionTimeNs; math.Abs(r-0.01) > 0.01*0.02 {
		t.Errorf("C=1 to 100: execution time ratio %g, want 0.01", r)
	}
	sat8, sat9 := runs[5].TraceExecutionTimeNs, runs[6].TraceExecutionTimeNs
	if math.Abs(sat9/sat8-1) > 0.05 {
		t.Errorf("past saturation the execution time still moves: %g ns at C=1e8, %g ns at C=1e9", sat8, sat9)
	}
	if sat9 < bound || sat9 > 1.5*bound {
		t.Errorf("saturated execution time %g ns, want within [1, 1.5] x the disk-link bound %g ns", sat9, bound)
	}
	t.Logf("disk-link bound %g ns", bound)
}

// TestReplayRoutingModes replays a saturating window with both routing
// modes: both complete with every invariant; deterministic routing
// delivers in order.
func TestReplayRoutingModes(t *testing.T) {
	path := ajwTrace(t)
	for _, mode := range []route.Mode{route.Deterministic, route.Adaptive} {
		s := mustReplay(t, replayCfg(t, func(c *ReplaySimConfig) {
			c.Replay.Trace, c.Replay.Compression, c.Replay.Limit = path, 1e7, 3000
			c.Routing.Mode = mode
		}))
		if mode == route.Deterministic && (s.Invariants.InOrder == nil || !*s.Invariants.InOrder) {
			t.Fatalf("deterministic routing: in-order not checked or violated")
		}
		t.Logf("%s: execution %.6g ns, accepted %.4g bytes/ns/switch, out of order %d packets",
			mode, s.TraceExecutionTimeNs, s.AcceptedBytesPerNsPerSwitch, s.Packets.OutOfOrder)
	}
}

func replayJSON(t *testing.T, s *ReplaySummary) []byte {
	t.Helper()
	s.Run = nil
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReplayDeterministic(t *testing.T) {
	cfg := func(seed uint64) ReplaySimConfig {
		return replayCfg(t, func(c *ReplaySimConfig) {
			c.Replay.Limit, c.Replay.Compression, c.Replay.Initiators = 3000, 200, InitRandom
			c.Routing.Mode = route.Adaptive
			c.Run.Seed = seed
		})
	}
	a := replayJSON(t, mustReplay(t, cfg(7)))
	b := replayJSON(t, mustReplay(t, cfg(7)))
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different summaries")
	}
	c := mustReplay(t, cfg(8))
	var s7 ReplaySummary
	if err := json.Unmarshal(a, &s7); err != nil {
		t.Fatal(err)
	}
	if slicesEqual(s7.Mapping.DiskHosts, c.Mapping.DiskHosts) {
		t.Fatal("different seeds placed the disks identically")
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReplayWindow checks --from/--to/--limit against an independent count
// of the sample's records.
func TestReplayWindow(t *testing.T) {
	c := replayCfg(t, nil)
	rd, _, err := c.Replay.OpenTrace()
	if err != nil {
		t.Fatal(err)
	}
	var first time.Duration
	var n, inWin int
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			first = rec.Arrival
		}
		n++
		if rel := rec.Arrival - first; rel >= 100*time.Second && rel < 110*time.Second {
			inWin++
		}
	}
	rd.Close()
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		limit    int64
		want     int
	}{
		{"window", 100 * time.Second, 110 * time.Second, 0, inWin},
		{"limit", 0, 0, 100, 100},
		{"window and limit", 100 * time.Second, 110 * time.Second, 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustReplay(t, replayCfg(t, func(c *ReplaySimConfig) {
				c.Replay.From, c.Replay.To, c.Replay.Limit = TraceTime(tc.from), TraceTime(tc.to), tc.limit
			}))
			if int(s.Requests) != tc.want {
				t.Fatalf("requests %d, want %d", s.Requests, tc.want)
			}
			// Replay time 0 is the window start.
			if s.LastIssueNs > float64(tc.to-tc.from)/c.Replay.Compression && tc.to > 0 {
				t.Fatalf("last issue %g ns beyond the compressed window", s.LastIssueNs)
			}
		})
	}
}

// TestReplayMapping checks that traffic flows only between the listed
// disks and the chosen initiators.
func TestReplayMapping(t *testing.T) {
	for _, mode := range []string{InitSpread, InitByInitiator, InitByDevice, InitRandom} {
		t.Run(mode, func(t *testing.T) {
			c := replayCfg(t, func(c *ReplaySimConfig) {
				c.Replay.Limit, c.Replay.DiskHosts, c.Replay.InitiatorHosts, c.Replay.Initiators = 500, []int{5, 77}, 4, mode
			})
			s, sess, err := runReplay(c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkReplay(t, s)
			allowed := map[int]bool{5: true, 77: true, 0: true, 1: true, 2: true, 3: true}
			for h, b := range sess.Metrics.PerHostWire {
				if b > 0 && !allowed[h] {
					t.Fatalf("host %d received %d bytes; only disks 5, 77 and initiators 0-3 should", h, b)
				}
			}
			if sess.Metrics.PerHostWire[5] == 0 || sess.Metrics.PerHostWire[77] == 0 {
				t.Fatalf("a disk got no traffic: %d, %d", sess.Metrics.PerHostWire[5], sess.Metrics.PerHostWire[77])
			}
		})
	}
}

// TestReplayServiceTime: on an idle fabric (ajw, compression 1), turning
// the traced service time on adds exactly the mean traced service time to
// the mean request latency.
func TestReplayServiceTime(t *testing.T) {
	path := ajwTrace(t)
	run := func(svc bool) *ReplaySummary {
		return mustReplay(t, replayCfg(t, func(c *ReplaySimConfig) {
			c.Replay.Trace, c.Replay.Compression, c.Replay.Limit, c.Replay.ServiceTime = path, 1, 300, svc
		}))
	}
	off, on := run(false), run(true)
	rd, err := tracefmt.Open(path, tracefmt.Auto, tracefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	for range 300 {
		rec, err := rd.Next()
		if err != nil {
			t.Fatal(err)
		}
		sum += rec.Service
	}
	rd.Close()
	want := float64(sum.Nanoseconds()) / 300
	got := on.LatencyNs.Mean - off.LatencyNs.Mean
	if math.Abs(got-want) > 0.01*want {
		t.Fatalf("service time added %g ns to the mean latency, want the mean traced service %g ns", got, want)
	}
}

func TestCompress(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		c    float64
		want des.Time
	}{
		{time.Second, 1, des.Second},
		{time.Second, 2.5, 400 * des.Millisecond},
		{time.Second, 1000, des.Millisecond},
		{3 * time.Nanosecond, 2, 1500 * des.Picosecond},
		{7 * 24 * time.Hour, 1, 7 * 24 * 3600 * des.Second},
		{-time.Second, 1, 0},
	} {
		num, err := compressionNum(tc.c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := compress(tc.d, num)
		if err != nil || got != tc.want {
			t.Errorf("compress(%v, %g) = %v, %v; want %v", tc.d, tc.c, got, err, tc.want)
		}
	}
	num, _ := compressionNum(0.01)
	if _, err := compress(7*24*time.Hour, num); err == nil {
		t.Error("a week expanded 100 times fits in des.Time?")
	}
	for _, c := range []float64{0, -1, math.NaN(), math.Inf(1), 1e-9} {
		if _, err := compressionNum(c); err == nil {
			t.Errorf("compression %g accepted", c)
		}
	}
}

func TestReplayBadInputs(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.srt")
	if err := os.WriteFile(garbage, []byte("$$TR_IOREC-1.3 x\ntracedate = \"Sat May 30 00:03:06 1992\";\n\f\x00\x00\x00\x05junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*ReplaySimConfig)
		want string
	}{
		{"missing file", func(c *ReplaySimConfig) { c.Replay.Trace = filepath.Join(dir, "nope.srt") }, "nope.srt"},
		{"bad format", func(c *ReplaySimConfig) { c.Replay.Trace, c.Replay.Format = garbage, "xyz" }, "unknown trace format"},
		{"format of the sample", func(c *ReplaySimConfig) { c.Replay.Format = "srt" }, "embedded sample"},
		{"malformed trace", func(c *ReplaySimConfig) { c.Replay.Trace, c.Replay.Format = garbage, "srt" }, "garbage.srt"},
		{"zero compression", func(c *ReplaySimConfig) { c.Replay.Compression = 0 }, "compression"},
		{"negative compression", func(c *ReplaySimConfig) { c.Replay.Compression = -2 }, "compression"},
		{"too many disks", func(c *ReplaySimConfig) { c.Replay.Disks = 128 }, "replay.disks"},
		{"disk host out of range", func(c *ReplaySimConfig) { c.Replay.DiskHosts = []int{3, 500} }, "out of range"},
		{"disk host twice", func(c *ReplaySimConfig) { c.Replay.DiskHosts = []int{3, 3} }, "twice"},
		{"initiator hosts", func(c *ReplaySimConfig) { c.Replay.InitiatorHosts = 200 }, "initiator_hosts"},
		{"initiator mode", func(c *ReplaySimConfig) { c.Replay.Initiators = "pid" }, "replay.initiators"},
		{"device map", func(c *ReplaySimConfig) { c.Replay.DeviceMap = "hash" }, "replay.device_map"},
		{"window", func(c *ReplaySimConfig) { c.Replay.From, c.Replay.To = TraceTime(time.Hour), TraceTime(time.Minute) }, "replay.to"},
		{"empty window", func(c *ReplaySimConfig) { c.Replay.From = TraceTime(1000 * time.Hour) }, "no records"},
		{"range", func(c *ReplaySimConfig) { c.Replay.Compression = 1e-5 }, "range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RunReplay(replayCfg(t, tc.edit), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestReplayConfigDecoding(t *testing.T) {
	c := replayCfg(t, nil)
	if err := params.CheckDocumented(c); err != nil {
		t.Fatal(err)
	}
	ok := "replay:\n  compression: 40\n  from: 1h\n  to: 90m\n  initiators: by-device\n  disk_hosts: [1, 2, 3]\nrun:\n  seed: 9\n"
	if err := params.DecodeYAML(strings.NewReader(ok), "ok.yaml", &c); err != nil {
		t.Fatal(err)
	}
	if c.Replay.Compression != 40 || c.Replay.From != TraceTime(time.Hour) || c.Replay.To != TraceTime(90*time.Minute) ||
		len(c.Replay.DiskHosts) != 3 || c.Run.Seed != 9 {
		t.Fatalf("decoded %+v", c.Replay)
	}
	if err := params.Set(&c, "replay.to=2h"); err != nil || c.Replay.To != TraceTime(2*time.Hour) {
		t.Fatalf("--set replay.to=2h: %v (%v)", err, c.Replay.To)
	}
	for _, tc := range []struct{ doc, want string }{
		{"replay:\n  compresion: 2\n", "compresion"},
		{"replay:\n  from: 3 parsecs\n", "3 parsecs"},
		{"replay:\n  limit: many\n", "replay.limit"},
		{"replay:\n  disk_hosts: 4\n", "disk_hosts"},
	} {
		c := replayCfg(t, nil)
		err := params.DecodeYAML(strings.NewReader(tc.doc), "bad.yaml", &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.yaml:") {
			t.Errorf("%q: error %v, want one naming bad.yaml and %q", tc.doc, err, tc.want)
		}
	}
}

// genTrace writes n records of the cello99 profile to an SRT file.
func genTrace(t testing.TB, n int64) string {
	t.Helper()
	p, err := blockgen.Like("cello99")
	if err != nil {
		t.Fatal(err)
	}
	g, err := blockgen.New(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gen.srt")
	w, err := tracefmt.Create(path, tracefmt.SRT)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Write(w, n); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayMemoryFlat replays 5,000 and 50,000 generated records and
// compares the peak live heap sampled during the runs: streaming with one
// record of look-ahead and pooled request state keeps it independent of
// the trace length. The 2 MiB slack would catch a leak of about 47 bytes
// per record. The 10-million-record figure is in docs/performance.md.
func TestReplayMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the 50,000-record replay in -short mode")
	}
	peak := func(n int64) uint64 {
		path := genTrace(t, n)
		c := replayCfg(t, func(c *ReplaySimConfig) { c.Replay.Trace = path })
		var most uint64
		var ms runtime.MemStats
		sample := func() {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			most = max(most, ms.HeapAlloc)
		}
		_, err := RunReplay(c, func(done, total uint64, _ des.Time, _ uint64) {
			if done%(total/10) == 0 {
				sample()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return most
	}
	small, large := peak(5_000), peak(50_000)
	t.Logf("peak live heap: %d KiB at 5k records, %d KiB at 50k records", small>>10, large>>10)
	if large > small+2<<20 {
		t.Fatalf("live heap grew with the trace: %d KiB at 5k records, %d KiB at 50k", small>>10, large>>10)
	}
}

// BenchmarkReplay replays the embedded sample (24,000 records) and
// reports records per second.
func BenchmarkReplay(b *testing.B) {
	c := replayCfg(b, nil)
	var recs uint64
	for b.Loop() {
		s, err := RunReplay(c, nil)
		if err != nil {
			b.Fatal(err)
		}
		recs += s.Requests
	}
	b.ReportMetric(float64(recs)/b.Elapsed().Seconds(), "records/s")
}
