package emu

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/frameport/porttest"
	"github.com/fabemu/fabemu/tracefmt/pcap"
	"go.uber.org/zap/zaptest"
)

// TestPcapOut: N frames through the daemon are recorded as pcapng, each
// on the interface of the port it was written to, byte for byte, minus
// the counted overflow (none at this rate).
func TestPcapOut(t *testing.T) {
	c := DefaultRunConfig()
	c.Model.Preset = "tap-square-10g"
	c.API.Socket = ""
	c.Metrics.Enabled = false
	var fps []frameport.Port
	var peers []*porttest.Peer
	for i := range 2 {
		h := 2 * i
		name := fmt.Sprintf("mem%d", i)
		c.TAPs = append(c.TAPs, TAPConfig{Name: name, Host: &h})
		p, q := porttest.New(porttest.Config{Name: name, MAC: mac(i), TxQueueLen: c.TxQueue})
		fps, peers = append(fps, p), append(peers, q)
	}
	e, err := NewWithPorts(c, fps, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := e.RecordPcap(&out, "out.pcapng"); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 50
	var sent [][]byte
	for i := range n {
		src := i % 2
		b := mkFrame(mac(1-src), mac(src), etherTest, uint32(i), 46+i*20, rng)
		sent = append(sent, b)
		if err := peers[src].Inject(b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if _, err := peers[1-i%2].Recv(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if !e.Drain(10 * time.Second) {
		t.Fatal("fabric did not drain")
	}
	st, err := e.Status()
	if err != nil {
		t.Fatal(err)
	}
	var left int
	var cmt string
	if err := e.pacer.Do(func() {
		left = len(e.arrivals.meta)
		cmt = pcapComment(&copyTag{ref: &frameRef{src: e.ports[0]}, dst: e.ports[1], seq: 3}, 812400, frameMeta{packets: 2, maxHops: 3, lanes: 0b101}, true)
	}); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d frames' metadata left after the drain", left)
	}
	if want := "fabemu: mem0 > mem1, latency 812.4 ns, hops 3, vl 0+2, 2 packets, frame 3 reordered in its stream"; cmt != want {
		t.Errorf("comment %q, want %q", cmt, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if st.PcapOut == nil {
		t.Fatal("no pcap_out in the status")
	}
	rd, err := pcap.NewReader(&out, "out.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for i, b := range sent {
		want[fmt.Sprint(1-i%2, string(b))]++
	}
	got := 0
	for {
		p, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		k := fmt.Sprint(p.Interface, string(p.Data))
		if want[k] == 0 {
			t.Errorf("packet %d on interface %d is no frame written there", got, p.Interface)
		}
		want[k]--
		got++
	}
	if ifs := rd.Interfaces(); len(ifs) != 2 || ifs[0].Name != "mem0" || ifs[1].Name != "mem1" {
		t.Fatalf("interfaces %+v", ifs)
	}
	ov := e.pcap.overflow.Load()
	if uint64(got)+ov != n || e.pcap.written.Load() != uint64(got) {
		t.Errorf("pcapng holds %d frames, overflow %d, written %d; want %d in all", got, ov, e.pcap.written.Load(), n)
	}
}

// fullWriter takes room bytes, then fails as a full disk does.
type fullWriter struct{ room int }

func (w *fullWriter) Write(p []byte) (int, error) {
	if len(p) > w.room {
		n := w.room
		w.room = 0
		return n, syscall.ENOSPC
	}
	w.room -= len(p)
	return len(p), nil
}

// TestPcapOutErrorAtOnce: a recording that cannot be written (--pcap-out
// /dev/full) shows its error in the status while the daemon runs, with
// no frame counted as written; before, the status said "written 18" and
// the error came at exit.
func TestPcapOutErrorAtOnce(t *testing.T) {
	c := DefaultRunConfig()
	c.Model.Preset = "tap-pair-10g"
	c.API.Socket = ""
	c.Metrics.Enabled = false
	var fps []frameport.Port
	var peers []*porttest.Peer
	for i := range 2 {
		name := fmt.Sprintf("full%d", i)
		c.TAPs = append(c.TAPs, TAPConfig{Name: name})
		p, q := porttest.New(porttest.Config{Name: name, MAC: mac(i), TxQueueLen: c.TxQueue})
		fps, peers = append(fps, p), append(peers, q)
	}
	e, err := NewWithPorts(c, fps, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RecordPcap(&fullWriter{room: 0}, "/dev/full"); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	if err := peers[0].Inject(mkFrame(mac(1), mac(0), etherTest, 1, 100, rng)); err != nil {
		t.Fatal(err)
	}
	if _, err := peers[1].Recv(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard, not a speed target
	for {
		st, err := e.Status()
		if err != nil {
			t.Fatal(err)
		}
		if p := st.PcapOut; p != nil && p.Error != "" {
			if p.Written != 0 {
				t.Errorf("written %d with a failing file", p.Written)
			}
			if !strings.Contains(p.Error, "no space") {
				t.Errorf("error %q does not say why", p.Error)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write error never showed in the status")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
