package replay

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/tracefmt/pcap"
)

// tframe is one frame of a test capture: stations are numbered, -1 is
// the broadcast address.
type tframe struct {
	at       time.Duration
	src, dst int
	payload  int
	sport    uint16
}

func stationMAC(i int) []byte {
	if i < 0 {
		return []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	return []byte{0x02, 0, 0, 0, 0, byte(i + 1)}
}

// ethFrame builds an Ethernet/IPv4/UDP frame (ARP-typed when broadcast),
// its payload zero bytes.
func ethFrame(f tframe) []byte {
	b := append(slices.Clone(stationMAC(f.dst)), stationMAC(f.src)...)
	if f.dst < 0 {
		b = append(b, 0x08, 0x06)
		return append(b, make([]byte, 28)...)
	}
	b = append(b, 0x08, 0x00)
	ipLen := 28 + f.payload
	b = append(b, 0x45, 0, byte(ipLen>>8), byte(ipLen), 0, 0, 0x40, 0, 64, 17, 0, 0,
		10, 0, 0, byte(f.src+1), 10, 0, 0, byte(f.dst+1))
	b = binary.BigEndian.AppendUint16(b, f.sport)
	b = binary.BigEndian.AppendUint16(b, 9000)
	b = binary.BigEndian.AppendUint16(b, uint16(8+f.payload))
	b = append(b, 0, 0)
	return append(b, make([]byte, f.payload)...)
}

// writeCapture writes frames as a microsecond pcap with snap length
// snap (0: whole frames).
func writeCapture(t testing.TB, path string, frames []tframe, snap int) (orig int64) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(fh)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1700000000, 0)
	for _, f := range frames {
		data := ethFrame(f)
		ci := gopacket.CaptureInfo{Timestamp: base.Add(f.at), Length: len(data), CaptureLength: len(data)}
		if snap > 0 && len(data) > snap {
			data = data[:snap]
			ci.CaptureLength = snap
		}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
		orig += int64(ci.Length)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return orig
}

// burst is a capture where stations 0..n-1 each send frames of payload
// bytes to the next station every gap.
func burst(n, per, payload int, gap time.Duration) []tframe {
	var fs []tframe
	for i := range per {
		for s := range n {
			fs = append(fs, tframe{at: time.Duration(i) * gap, src: s, dst: (s + 1) % n, payload: payload, sport: uint16(1000 + s)})
		}
	}
	return fs
}

func captureCfg(t testing.TB, path string, edit func(*ReplaySimConfig)) ReplaySimConfig {
	return replayCfg(t, func(c *ReplaySimConfig) {
		c.Replay.Trace, c.Replay.Compression = path, 1
		if edit != nil {
			edit(c)
		}
	})
}

func TestCaptureRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	frames := burst(4, 25, 1000, 2*time.Microsecond)
	orig := writeCapture(t, path, frames, 200) // snap length cuts the frames
	var out bytes.Buffer
	sum, err := RunReplayWith(captureCfg(t, path, nil), Options{PcapOut: PcapOut{W: &out, Name: "out.pcapng"}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Trace.Format != "pcap" || sum.Requests != uint64(len(frames)) || sum.Completed != sum.Requests || sum.IssuedBytes != orig {
		t.Fatalf("format %s, requests %d, completed %d, issued bytes %d (want %d frames, %d bytes)",
			sum.Trace.Format, sum.Requests, sum.Completed, sum.IssuedBytes, len(frames), orig)
	}
	if !sum.Invariants.OK || len(sum.Capture.Endpoints) != 4 || sum.Capture.CapturedBytes != int64(200*len(frames)) {
		t.Fatalf("invariants %v, endpoints %v, captured %d", sum.Invariants, sum.Capture.Endpoints, sum.Capture.CapturedBytes)
	}
	rd, err := pcap.NewReader(bytes.NewReader(out.Bytes()), "out.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	var n, bytesOut int64
	var last time.Time
	for {
		p, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		bytesOut += int64(p.OrigLen)
		if p.CapLen != 200 || p.Time.Before(last) {
			t.Fatalf("record %d: captured %d bytes at %v after %v", p.Record, p.CapLen, p.Time, last)
		}
		last = p.Time
	}
	if n != int64(len(frames)) || bytesOut != orig {
		t.Fatalf("pcapng out: %d frames, %d bytes; want %d, %d", n, bytesOut, len(frames), orig)
	}
	ifs := rd.Interfaces()
	if len(ifs) != 128 || ifs[5].Name != "host 5" || ifs[5].Resolution != 1e-9 {
		t.Fatalf("interfaces: %d, %+v", len(ifs), ifs[5])
	}
	// Comments carry the fabric's metadata.
	ng, err := pcapgo.NewNgReader(bytes.NewReader(out.Bytes()), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	_, _, opts, err := ng.ReadPacketDataWithOptions()
	if err != nil || len(opts.Comments) != 1 || !strings.Contains(opts.Comments[0], "hops ") || !strings.Contains(opts.Comments[0], "latency ") {
		t.Fatalf("comment %q, %v", opts.Comments, err)
	}
}

func TestCaptureFlowOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	// Eight stations, heavy back-to-back traffic: adaptive routing
	// spreads a flow's frames over several paths.
	var frames []tframe
	for i := range 60 {
		for s := range 8 {
			frames = append(frames, tframe{at: time.Duration(i) * 300 * time.Nanosecond, src: s, dst: (s + 3) % 8, payload: 1400, sport: uint16(1000 + s)})
		}
	}
	writeCapture(t, path, frames, 0)
	run := func(mode string) *ReplaySummary {
		c := captureCfg(t, path, func(c *ReplaySimConfig) {
			c.NIC.Delivery.Mode = nic.DeliveryMode(mode)
		})
		s, err := RunReplay(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Invariants.OK || s.Completed != uint64(len(frames)) {
			t.Fatalf("%s: %v, completed %d", mode, s.Invariants.Violations, s.Completed)
		}
		return s
	}
	det, ooo, ino := run("deterministic"), run("adaptive-ooo"), run("adaptive-inorder")
	// 1400-byte frames are 3 packets at the preset's 512-byte MTU.
	if fo, fb := det.Capture.FlowOrder, det.Capture.FlowOrderBefore; fo.Reordered != 0 || fo.Received != uint64(len(frames)) ||
		fb.Reordered != 0 || fb.Received != 3*uint64(len(frames)) {
		t.Fatalf("deterministic: after %+v, before %+v", fo, fb)
	}
	if ooo.Capture.FlowOrder.Reordered == 0 || ooo.Order == nil || ooo.Order.Reordered == 0 {
		t.Fatalf("adaptive-ooo: no reordering: flows %+v", ooo.Capture.FlowOrder)
	}
	// Here every flow is one host pair: the per-flow packet figures are
	// the NIC's per-stream ones.
	if fb := ooo.Capture.FlowOrderBefore; fb.Reordered != ooo.Order.Reordered || fb.Received != ooo.Order.Received {
		t.Fatalf("adaptive-ooo: flows before %+v, NIC streams %d of %d", fb, ooo.Order.Reordered, ooo.Order.Received)
	}
	if fo, fb := ino.Capture.FlowOrder, ino.Capture.FlowOrderBefore; fo.Reordered != 0 || fb.Reordered == 0 || fb.Reordered != ino.Order.Reordered {
		t.Fatalf("adaptive-inorder: after %+v, before %+v, NIC %d", fo, fb, ino.Order.Reordered)
	}
	t.Logf("adaptive-ooo: %d of %d frames reordered in their flow (max extent %d); packets: %d of %d",
		ooo.Capture.FlowOrder.Reordered, ooo.Capture.FlowOrder.Received, ooo.Capture.FlowOrder.Extent.Max, ooo.Order.Reordered, ooo.Order.Received)
}

func TestCaptureMappingBySeed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	writeCapture(t, path, burst(6, 2, 100, time.Microsecond), 0)
	hosts := func(seed uint64) []EndpointHost {
		s, err := RunReplay(captureCfg(t, path, func(c *ReplaySimConfig) { c.Run.Seed = seed }), nil)
		if err != nil {
			t.Fatal(err)
		}
		return s.Capture.Endpoints
	}
	a, b, c := hosts(1), hosts(1), hosts(2)
	if !slices.Equal(a, b) {
		t.Fatalf("seed 1 twice: %v vs %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatalf("seeds 1 and 2 map alike: %v", a)
	}
	if len(a) != 6 || a[0].Endpoint != "02:00:00:00:00:01" {
		t.Fatalf("endpoints %v", a)
	}
	// By IP, the same stations are their addresses.
	s, err := RunReplay(captureCfg(t, path, func(c *ReplaySimConfig) { c.Replay.MapBy = MapByIP; c.Run.Seed = 1 }), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Capture.Endpoints[0].Endpoint != "10.0.0.1" || s.Capture.Endpoints[0].Host != a[0].Host {
		t.Fatalf("by ip: %v", s.Capture.Endpoints)
	}
}

func TestCaptureMapFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	writeCapture(t, path, burst(3, 4, 100, time.Microsecond), 0)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.csv", "# endpoint,host\n02:00:00:00:00:01,5\n02:00:00:00:00:02, 9\n02:00:00:00:00:03 5\n")
	s, err := RunReplay(captureCfg(t, path, func(c *ReplaySimConfig) { c.Replay.Map = good }), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Stations 1 and 3 share host 5: their frames to each other stay local.
	if s.Capture.Local != 4 || s.Requests != 8 || s.Capture.Endpoints[1].Host != 9 {
		t.Fatalf("local %d, requests %d, endpoints %v", s.Capture.Local, s.Requests, s.Capture.Endpoints)
	}
	yml := write("good.yaml", "\"02:00:00:00:00:01\": 1\n\"02:00:00:00:00:02\": 2\n\"02:00:00:00:00:03\": 3\n")
	if _, err := RunReplay(captureCfg(t, path, func(c *ReplaySimConfig) { c.Replay.Map = yml }), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"bad.csv", "02:00:00:00:00:01,1\n\nzz:zz,2\n", "bad.csv:3: \"zz:zz\" is neither a MAC"},
		{"range.csv", "02:00:00:00:00:01,128\n", "range.csv:1: host 128 out of range"},
		{"dup.csv", "10.0.0.1,1\n10.0.0.1,2\n", "dup.csv:2: endpoint 10.0.0.1 is already mapped on line 1"},
		{"short.csv", "02:00:00:00:00:01\n", "short.csv:1: want \"endpoint,host\""},
		{"bad.yaml", "\"02:00:00:00:00:01\": 1\n\"02:00:00:00:00:02\": x\n", "bad.yaml:2: host \"x\" is not an integer"},
		{"miss.csv", "02:00:00:00:00:01,1\n", "endpoint 02:00:00:00:00:02 is not in the map"},
	} {
		p := write(tc.name, tc.text)
		_, err := RunReplay(captureCfg(t, path, func(c *ReplaySimConfig) { c.Replay.Map = p }), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestCaptureBroadcast(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	frames := burst(5, 2, 100, time.Microsecond)
	frames = append(frames, tframe{at: 3 * time.Microsecond, src: 2, dst: -1}, tframe{at: 4 * time.Microsecond, src: 0, dst: -1})
	writeCapture(t, path, frames, 0)
	var out bytes.Buffer
	s, err := RunReplayWith(captureCfg(t, path, nil), Options{PcapOut: PcapOut{W: &out, Name: "out"}})
	if err != nil {
		t.Fatal(err)
	}
	// Each broadcast goes to the 4 other hosts holding an endpoint.
	ci := s.Capture
	if !s.Invariants.OK {
		t.Fatalf("invariants: %v", s.Invariants.Violations)
	}
	if ci.Group != 2 || ci.Copies != 10+2*4 || ci.CopiesDelivered != ci.Copies || s.Completed != 12 {
		t.Fatalf("group %d, copies %d (delivered %d), completed %d", ci.Group, ci.Copies, ci.CopiesDelivered, s.Completed)
	}
	rd, err := pcap.NewReader(&out, "out")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := rd.Next(); err != nil {
			break
		}
		n++
	}
	if n != 18 {
		t.Fatalf("pcapng holds %d frames, want 18", n)
	}
}

func TestCaptureRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	writeCapture(t, path, burst(129, 1, 10, time.Microsecond), 0)
	_, err := RunReplay(captureCfg(t, path, nil), nil)
	if err == nil || !strings.Contains(err.Error(), "record 128: endpoint 02:00:00:00:00:81 is the capture's endpoint number 129, but the topology has 128 hosts") {
		t.Fatalf("129 endpoints on 128 hosts: %v", err)
	}
	_, err = RunReplay(captureCfg(t, path, func(c *ReplaySimConfig) { c.Replay.MapBy = "vlan" }), nil)
	if err == nil || !strings.Contains(err.Error(), "replay.map_by \"vlan\"") {
		t.Fatalf("map_by vlan: %v", err)
	}
	_, err = RunReplay(replayCfg(t, func(c *ReplaySimConfig) { c.Replay.MapBy = MapByIP; c.Replay.Limit = 10 }), nil)
	if err == nil || !strings.Contains(err.Error(), "apply to packet captures") {
		t.Fatalf("map_by on a block trace: %v", err)
	}
}

// errWriter fails after n bytes.
type errWriter struct{ n int }

func (w *errWriter) Write(b []byte) (int, error) {
	if w.n < len(b) {
		return 0, os.ErrClosed
	}
	w.n -= len(b)
	return len(b), nil
}

func TestBlockTracePcapOut(t *testing.T) {
	c := replayCfg(t, func(c *ReplaySimConfig) { c.Replay.Limit = 200; c.Replay.Compression = 20 })
	plain, err := RunReplay(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s, err := RunReplayWith(c, Options{PcapOut: PcapOut{W: &out, Name: "io.pcapng"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.TraceExecutionTimeNs != plain.TraceExecutionTimeNs || s.Packets != plain.Packets {
		t.Fatalf("the pcapng output changed the run: %g vs %g ns", s.TraceExecutionTimeNs, plain.TraceExecutionTimeNs)
	}
	rd, err := pcap.NewReader(&out, "io.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		p, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !p.HasPorts || p.DstPort != IOPort || string(p.Data[42:46]) != ioMagic {
			t.Fatalf("record %d: not an I/O frame: % x", p.Record, p.Data)
		}
	}
	if n != 2*int(s.Requests) {
		t.Fatalf("%d frames for %d requests", n, s.Requests)
	}
	_, err = RunReplayWith(c, Options{PcapOut: PcapOut{W: &errWriter{n: 20000}, Name: "full.pcapng"}})
	if err == nil || !strings.Contains(err.Error(), "full.pcapng") {
		t.Fatalf("write error: %v", err)
	}
}

func FuzzHostMap(f *testing.F) {
	f.Add([]byte("02:00:00:00:00:01,5\n10.0.0.1 7 # c\n"), false)
	f.Add([]byte("\"fd00::1\": 3\n\"02:00:00:00:00:01\": 4\n"), true)
	f.Add([]byte("- 1\n- 2\n"), true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, yml bool) {
		name := filepath.Join(dir, "m.csv")
		if yml {
			name = filepath.Join(dir, "m.yaml")
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := readHostMap(name, 16)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line naming the file", err)
			}
			return
		}
		for e, h := range m {
			if h < 0 || h >= 16 {
				t.Fatalf("endpoint %s on host %d", e, h)
			}
		}
	})
}

func TestCapturePcapngMixedLinksGzip(t *testing.T) {
	dir := t.TempDir()
	var raw bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&raw, pcapgo.NgInterface{Name: "eth", LinkType: layers.LinkTypeEthernet, TimestampResolution: 9}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(pcapgo.NgInterface{Name: "tun", LinkType: layers.LinkTypeRaw, TimestampResolution: 6}); err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1700000000, 0)
	var orig int64
	for i := range 20 {
		f := tframe{at: time.Duration(i) * time.Microsecond, src: i % 2, dst: 1 - i%2, payload: 200, sport: 7}
		data, iface := ethFrame(f), 0
		if i%4 == 3 { // the same IP packet seen on a raw IP interface
			data, iface = data[14:], 1
		}
		ci := gopacket.CaptureInfo{Timestamp: base.Add(f.at), CaptureLength: len(data), Length: len(data), InterfaceIndex: iface}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
		orig += int64(len(data))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mixed.pcapng.gz")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw.Bytes())
	zw.Close()
	if err := os.WriteFile(path, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s, err := RunReplayWith(captureCfg(t, path, nil), Options{PcapOut: PcapOut{W: &out, Name: "out"}})
	if err != nil {
		t.Fatal(err)
	}
	// Two MACs on the Ethernet interface, two IPs on the raw one.
	if s.Trace.Format != "pcapng" || s.Requests != 20 || s.IssuedBytes != orig || len(s.Capture.Endpoints) != 4 {
		t.Fatalf("format %s, requests %d, bytes %d (want %d), endpoints %v", s.Trace.Format, s.Requests, s.IssuedBytes, orig, s.Capture.Endpoints)
	}
	rd, err := pcap.NewReader(&out, "out")
	if err != nil {
		t.Fatal(err)
	}
	links := map[layers.LinkType]int{}
	for {
		p, err := rd.Next()
		if err != nil {
			if err != io.EOF {
				t.Fatal(err)
			}
			break
		}
		links[p.LinkType]++
	}
	if links[layers.LinkTypeEthernet] != 15 || links[layers.LinkTypeRaw] != 5 || len(rd.Interfaces()) != 128+1 {
		t.Fatalf("links %v, %d interfaces", links, len(rd.Interfaces()))
	}
	// By MAC, the raw IP frames have no endpoint.
	s, err = RunReplay(captureCfg(t, path, func(c *ReplaySimConfig) { c.Replay.MapBy = MapByMAC }), nil)
	if err == nil || !strings.Contains(err.Error(), "record 4: link type") {
		t.Fatalf("map by mac over raw IP: %v %v", err, s)
	}
}

func TestCaptureMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the 60,000-frame replay in -short mode")
	}
	dir := t.TempDir()
	peak := func(n int) uint64 {
		path := filepath.Join(dir, "flat.pcap")
		// Well below the links' rate, staggered: nothing backs up, and
		// the engine's event wheel sees no bursts to grow its buckets for.
		fs := burst(8, n/8, 400, 8*time.Microsecond)
		for i := range fs {
			fs[i].at += time.Duration(fs[i].src) * time.Microsecond
		}
		writeCapture(t, path, fs, 0)
		var most uint64
		var ms runtime.MemStats
		_, err := RunReplayWith(captureCfg(t, path, nil), Options{PcapOut: PcapOut{W: io.Discard, Name: "discard"},
			Progress: func(done, total uint64, _ des.Time, _ uint64) {
				if done%(total/10) == 0 {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					most = max(most, ms.HeapAlloc)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return most
	}
	small, large := peak(6_000), peak(60_000)
	t.Logf("peak live heap: %d KiB at 6k frames, %d KiB at 60k frames", small>>10, large>>10)
	if large > small+2<<20 {
		t.Fatalf("live heap grew with the capture: %d KiB at 6k frames, %d KiB at 60k", small>>10, large>>10)
	}
}
