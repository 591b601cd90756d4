package replay

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/tracefmt/pcap"
)

// feedLive hands every frame of the capture at path to l at the
// engine's present, 1 µs apart, and runs the engine until the fabric is
// idle.
func feedLive(t *testing.T, path string, l *LiveCapture, eng *des.Engine) {
	t.Helper()
	rd, err := pcap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for {
		p, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		l.Frame(p, eng.Now())
		eng.RunUntil(eng.Now() + des.Microsecond)
	}
	eng.RunUntil(eng.Now() + des.Millisecond)
}

// TestLiveCaptureMatchesReplay: frames handed to a live capture one by
// one land on the hosts a replay of the same capture puts them on, with
// the same messages, all delivered.
func TestLiveCaptureMatchesReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.pcap")
	frames := burst(6, 3, 200, time.Microsecond)
	frames = append(frames, tframe{at: 4 * time.Microsecond, src: 1, dst: -1})
	writeCapture(t, path, frames, 0)
	cfg := captureCfg(t, path, func(c *ReplaySimConfig) { c.Run.Seed = 7 })
	sum, err := RunReplay(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSession(cfg, des.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]int, s.Topo.NumHosts())
	for i := range hosts {
		hosts[i] = i
	}
	l, err := NewLiveCapture(s, "test", "", 7, hosts)
	if err != nil {
		t.Fatal(err)
	}
	feedLive(t, path, l, s.Eng)
	p := l.Progress()
	if !slices.Equal(p.Endpoints, sum.Capture.Endpoints) {
		t.Fatalf("live endpoints %v, replay %v", p.Endpoints, sum.Capture.Endpoints)
	}
	ci := sum.Capture
	if p.Frames != uint64(ci.Frames) || p.Sent != uint64(ci.Sent) || p.Copies != uint64(ci.Copies) || p.Group != 1 {
		t.Fatalf("live %+v, replay frames %d sent %d copies %d", p, ci.Frames, ci.Sent, ci.Copies)
	}
	if p.Delivered != p.Copies || p.Outstanding != 0 || p.DeliveredBytes != uint64(ci.CopyBytes) || p.Bytes != uint64(sum.IssuedBytes) {
		t.Fatalf("live %+v, replay copy bytes %d issued %d", p, ci.CopyBytes, sum.IssuedBytes)
	}
}

// TestLiveCaptureSubset: endpoints go to the hosts given only; those
// past them are counted as unplaced, with the first reported.
func TestLiveCaptureSubset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.pcap")
	writeCapture(t, path, burst(6, 2, 100, time.Microsecond), 0)
	cfg := captureCfg(t, path, nil)
	s, err := newSession(cfg, des.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	sub := []int{3, 5, 7}
	l, err := NewLiveCapture(s, "veth0", "ip", 1, sub)
	if err != nil {
		t.Fatal(err)
	}
	feedLive(t, path, l, s.Eng)
	p := l.Progress()
	for _, e := range p.Endpoints {
		if !slices.Contains(sub, e.Host) {
			t.Errorf("endpoint %s on host %d, not one of %v", e.Endpoint, e.Host, sub)
		}
	}
	if p.EndpointsTotal != 3 || p.Unplaced == 0 || p.Frames != p.Sent+p.Unplaced || p.Delivered != p.Copies {
		t.Fatalf("%+v", p)
	}
	if !strings.Contains(p.Error, "veth0: frame ") || !strings.Contains(p.Error, "3 hosts carrying the capture") {
		t.Errorf("error %q", p.Error)
	}
	if _, err := NewLiveCapture(s, "x", "vlan", 1, sub); err == nil {
		t.Error("map by vlan accepted")
	}
	if _, err := NewLiveCapture(s, "x", "", 1, sub[:1]); err == nil {
		t.Error("one host accepted")
	}
}
