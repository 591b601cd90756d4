//go:build linux

package bpf

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/tracefmt/pcap"
)

func TestParseFilter(t *testing.T) {
	f, err := ParseFilter([]string{"host 10.0.0.1", "port=5201", "proto tcp"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Host != netip.MustParseAddr("10.0.0.1") || f.Port != 5201 || f.Proto != 6 {
		t.Fatalf("got %+v", f)
	}
	if s := f.String(); s != "host 10.0.0.1 and port 5201 and proto tcp" {
		t.Errorf("String() = %q", s)
	}
	for _, bad := range []string{"host", "host x", "port 0", "port 70000", "proto sctpx", "vlan 3"} {
		if _, err := ParseFilter([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if f, _ := ParseFilter(nil); f != AnyFilter || f.String() != "" {
		t.Errorf("empty filter = %+v", f)
	}
}

// FuzzParseFilter: no input panics, and an accepted filter prints as
// terms that parse back to it.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"host 10.0.0.1", "port=5201", "proto tcp", "proto 47", "host ::1", "vlan 3", "port 0"} {
		f.Add(s, "proto udp")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		flt, err := ParseFilter([]string{a, b})
		if err != nil {
			return
		}
		var terms []string
		if s := flt.String(); s != "" {
			terms = strings.Split(s, " and ")
		}
		back, err := ParseFilter(terms)
		if err != nil || back != flt {
			t.Fatalf("%q %q -> %+v -> %q -> %+v, %v", a, b, flt, flt.String(), back, err)
		}
	})
}

// TestCaptureAccountsForEveryFrame sends a known number of UDP datagrams
// across a veth pair and checks that every frame the device counted was
// captured or counted as a ring-buffer drop, and that the file holds them.
func TestCaptureAccountsForEveryFrame(t *testing.T) {
	p := newVethPair(t)
	const sent = 5000
	// The sink in B drains its socket; nothing answers.
	var sink *net.UDPConn
	if err := netnsutil.Do(p.nsB, func() (err error) {
		sink, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ipB, 9000)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	go io.Copy(io.Discard, sink)

	c, err := OpenCapture(CaptureConfig{Netns: p.nsA, Iface: p.devA, Filter: AnyFilter, Snaplen: 64})
	requireLoaded(t, err)
	t.Cleanup(func() { c.Close() })
	rx0, tx0 := linkCounts(t, p.nsA, p.devA)

	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var st *CaptureStats
	var werr error
	go func() {
		defer close(done)
		st, werr = c.WritePcapng(ctx, &out, 0)
	}()

	var conn *net.UDPConn
	if err := netnsutil.Do(p.nsA, func() (err error) {
		conn, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ipB, 9000)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg := make([]byte, 200)
	for i := 0; i < sent; i++ {
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	rx1, tx1 := linkCounts(t, p.nsA, p.devA)
	cancel()
	<-done
	if werr != nil {
		t.Fatal(werr)
	}
	t.Logf("sent %d; device rx %d tx %d; %+v", sent, rx1-rx0, tx1-tx0, *st)
	if tx1-tx0 < sent {
		t.Fatalf("device counted %d frames out, fewer than the %d sent", tx1-tx0, sent)
	}
	if st.Matched != st.Captured+st.Dropped {
		t.Errorf("matched %d != captured %d + dropped %d", st.Matched, st.Captured, st.Dropped)
	}
	if st.Captured != st.Written+st.Discarded || st.Discarded != 0 {
		t.Errorf("captured %d, written %d, discarded %d", st.Captured, st.Written, st.Discarded)
	}
	if dev := (rx1 - rx0) + (tx1 - tx0); st.Matched != dev {
		t.Errorf("captured %d + dropped %d = %d frames, the device counted %d", st.Captured, st.Dropped, st.Matched, dev)
	}
	if st.Dropped == 0 && (st.Egress != tx1-tx0 || st.Ingress != rx1-rx0) {
		t.Errorf("written egress %d ingress %d, device tx %d rx %d", st.Egress, st.Ingress, tx1-tx0, rx1-rx0)
	}
	// The file reads back with the same count and the UDP flow complete.
	r, err := pcap.NewReader(bytes.NewReader(out.Bytes()), "capture.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := pcap.Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(fs.Records) != st.Written {
		t.Errorf("file holds %d frames, wrote %d", fs.Records, st.Written)
	}
	if st.Dropped == 0 && fs.Protocols.UDP != sent {
		t.Errorf("file holds %d UDP frames, sent %d", fs.Protocols.UDP, sent)
	}
	if len(fs.Interfaces) == 0 || fs.Interfaces[0].Snaplen != 64 {
		t.Errorf("interfaces %+v", fs.Interfaces)
	}
}

// TestCaptureFilterAndFallback attaches through the clsact fallback with
// a port filter: only the filtered flow's frames are matched.
func TestCaptureFilterAndFallback(t *testing.T) {
	p := newVethPair(t)
	f, err := ParseFilter([]string{"port 9001", "proto udp"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCapture(CaptureConfig{Netns: p.nsA, Iface: p.devA, Filter: f, Attach: AttachTC})
	requireLoaded(t, err)
	t.Cleanup(func() { c.Close() })
	if c.Mode() != AttachTC {
		t.Fatalf("mode %s", c.Mode())
	}
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var st *CaptureStats
	var werr error
	go func() {
		defer close(done)
		st, werr = c.WritePcapng(ctx, &out, 0)
	}()
	if err := netnsutil.Do(p.nsA, func() error {
		// Unconnected, so that B's port-unreachable answers do not
		// fail the later writes.
		conn, err := net.ListenUDP("udp4", nil)
		if err != nil {
			return err
		}
		defer conn.Close()
		for _, port := range []int{9001, 9002} {
			for i := 0; i < 10; i++ {
				if _, err := conn.WriteToUDP([]byte("x"), &net.UDPAddr{IP: p.ipB.AsSlice(), Port: port}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	<-done
	if werr != nil {
		t.Fatal(werr)
	}
	// Port 9001 has no listener: B answers with ICMP port unreachable,
	// which quotes the UDP header and so is not matched (proto udp).
	if st.Matched != 10 || st.Written != 10 || st.Egress != 10 {
		t.Errorf("%+v, want 10 frames out", *st)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The clsact qdisc fabemu added is gone again.
	out2, _ := execOut("tc", "-n", p.nsA, "qdisc", "show", "dev", p.devA)
	if bytes.Contains(out2, []byte("clsact")) {
		t.Errorf("clsact left behind: %s", out2)
	}
}
