package tap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"github.com/vishvananda/netlink"
	"go.uber.org/zap/zaptest"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error, "" for valid
	}{
		{"minimal", Config{Name: "tap0"}, ""},
		{"full", Config{Name: "tap0", MAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, MTU: 9000, TxQueueLen: 8,
			Addrs: []netip.Prefix{netip.MustParsePrefix("10.250.0.1/24")}}, ""},
		{"empty name", Config{}, "Name is empty"},
		{"long name", Config{Name: "abcdefghijklmnop"}, "longer than 15"},
		{"template", Config{Name: "tap%d"}, "not allowed"},
		{"slash", Config{Name: "a/b"}, "not allowed"},
		{"short MAC", Config{Name: "t", MAC: net.HardwareAddr{1, 2}}, "not a 48-bit"},
		{"multicast MAC", Config{Name: "t", MAC: net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}}, "multicast"},
		{"MTU too small", Config{Name: "t", MTU: 67}, "MTU 67 outside"},
		{"MTU too big", Config{Name: "t", MTU: 65522}, "MTU 65522 outside"},
		{"negative queue", Config{Name: "t", TxQueueLen: -1}, "negative"},
		{"invalid prefix", Config{Name: "t", Addrs: []netip.Prefix{{}}}, "invalid address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCauseString(t *testing.T) {
	want := []string{"queue_full", "too_short", "too_long", "write_error", "closed", "kernel", "no_peer"}
	for c := range NumCauses {
		if c.String() != want[c] {
			t.Errorf("Cause(%d) = %q, want %q", c, c.String(), want[c])
		}
	}
	if s := Cause(99).String(); s != "cause(99)" {
		t.Errorf("out-of-range cause = %q", s)
	}
}

func TestRateLimit(t *testing.T) {
	var r rateLimit
	t0 := time.Unix(1000, 0)
	if ok, _ := r.allow(t0); !ok {
		t.Fatal("first log suppressed")
	}
	for i := range 5 {
		if ok, _ := r.allow(t0.Add(time.Duration(i) * time.Millisecond)); ok {
			t.Fatal("log within the interval allowed")
		}
	}
	ok, sup := r.allow(t0.Add(logInterval))
	if !ok || sup != 5 {
		t.Fatalf("after the interval: allowed=%v suppressed=%d, want true 5", ok, sup)
	}
}

// TestCreateClose checks MAC, MTU, addresses and up state inside the
// namespace Create made, and that Close removes device and namespace.
func TestCreateClose(t *testing.T) {
	privtest.Require(t, "TAP devices")
	id := uniq()
	ns, name := "fe-tap-c-"+id, "ftc"+id
	mac := net.HardwareAddr{0x02, 0xfe, 0x12, 0x34, 0x56, 0x78}
	d, err := Create(Config{Name: name, MAC: mac, MTU: 9000, Netns: ns, MultiQueue: true, Owner: 65534, Group: 65534,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.250.7.1/24"), netip.MustParsePrefix("fd00:fe::1/64")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		if netnsutil.Exists(ns) {
			netnsutil.Delete(ns)
		}
	})
	if d.Name() != name || d.MTU() != 9000 || d.Netns() != ns || d.Reclaimed() {
		t.Fatalf("device %s mtu %d netns %q reclaimed %v", d.Name(), d.MTU(), d.Netns(), d.Reclaimed())
	}
	if d.MAC() != ether.MAC(mac) {
		t.Fatalf("MAC() = %v, want %v", d.MAC(), mac)
	}
	if _, err := netlink.LinkByName(name); err == nil {
		t.Fatal("device still visible in the test's own namespace")
	}
	link, err := linkIn(t, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	attrs := link.Attrs()
	if tt, ok := link.(*netlink.Tuntap); !ok || tt.Mode != netlink.TUNTAP_MODE_TAP ||
		tt.Flags&netlink.TUNTAP_MULTI_QUEUE == 0 || tt.Flags&netlink.TUNTAP_NO_PI == 0 || !tt.NonPersist ||
		tt.Owner != 65534 || tt.Group != 65534 || tt.Queues != 1 {
		t.Fatalf("link is %#v, want a non-persistent multi-queue TAP without PI, owner and group 65534, one queue attached", link)
	}
	if attrs.MTU != 9000 || !bytes.Equal(attrs.HardwareAddr, mac) || attrs.Flags&net.FlagUp == 0 {
		t.Fatalf("link mtu %d mac %v flags %v", attrs.MTU, attrs.HardwareAddr, attrs.Flags)
	}
	h, err := netnsutil.Handle(ns)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := h.AddrList(link, netlink.FAMILY_ALL)
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, a := range addrs {
		got[a.IPNet.String()] = true
	}
	if !got["10.250.7.1/24"] || !got["fd00:fe::1/64"] {
		t.Fatalf("addresses %v, want 10.250.7.1/24 and fd00:fe::1/64", got)
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if netnsutil.Exists(ns) {
		t.Fatal("namespace Create made survived Close")
	}
	if _, err := netlink.LinkByName(name); err == nil {
		t.Fatal("device survived Close")
	}
	if err := d.Start(make(chan *Frame)); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

// TestReclaim simulates a crash (the process dies: its queue fd closes,
// nothing is deleted) and checks that the next Create reclaims the device.
func TestReclaim(t *testing.T) {
	privtest.Require(t, "TAP devices")
	ns := newNS(t, "r")
	name := "ftr" + uniq()

	t.Run("persistent device survives a crash and is reclaimed", func(t *testing.T) {
		d, err := Create(Config{Name: name, Netns: ns, Persist: true})
		if err != nil {
			t.Fatal(err)
		}
		d.file.Close() // crash: the kernel closes our fd, the device stays
		if _, err := linkIn(t, ns, name); err != nil {
			t.Fatalf("persistent device gone after crash: %v", err)
		}
		d2 := create(t, Config{Name: name, Netns: ns, Persist: true})
		if !d2.Reclaimed() {
			t.Fatal("Reclaimed() = false after replacing a stale device")
		}
		if err := d2.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := linkIn(t, ns, name); err == nil {
			t.Fatal("persistent device survived Close")
		}
		if !netnsutil.Exists(ns) {
			t.Fatal("Close deleted a namespace it did not create")
		}
	})

	t.Run("non-persistent device vanishes with its fd", func(t *testing.T) {
		d, err := Create(Config{Name: name, Netns: ns})
		if err != nil {
			t.Fatal(err)
		}
		d.file.Close()
		if _, err := linkIn(t, ns, name); err == nil {
			t.Fatal("non-persistent device survived its last fd")
		}
		d2 := create(t, Config{Name: name, Netns: ns})
		if d2.Reclaimed() {
			t.Fatal("nothing should have been reclaimed")
		}
	})

	t.Run("device in use is not stolen", func(t *testing.T) {
		n2 := "ftu" + uniq()
		create(t, Config{Name: n2, Netns: ns})
		_, err := Create(Config{Name: n2, Netns: ns})
		if err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("second Create of a live device: %v, want an in-use error", err)
		}
	})
}

// TestNameClash: a link of another kind with the TAP's name is never deleted.
func TestNameClash(t *testing.T) {
	privtest.Require(t, "TAP devices")
	ns := newNS(t, "x")
	h, err := netnsutil.Handle(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tested := 0
	for _, kind := range []string{"dummy", "veth", "bridge"} {
		t.Run(kind, func(t *testing.T) {
			name := "ftx" + uniq()
			attrs := netlink.LinkAttrs{Name: name}
			var link netlink.Link
			switch kind {
			case "dummy":
				link = &netlink.Dummy{LinkAttrs: attrs}
			case "veth":
				link = &netlink.Veth{LinkAttrs: attrs, PeerName: name + "p"}
			case "bridge":
				link = &netlink.Bridge{LinkAttrs: attrs}
			}
			if err := h.LinkAdd(link); err != nil {
				t.Skipf("kernel cannot create a %s link here: %v", kind, err)
			}
			tested++
			_, err = Create(Config{Name: name, Netns: ns})
			want := fmt.Sprintf("name clash: link %s exists in namespace %s and is a %s, not a TAP; refusing to delete it", name, ns, kind)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Create over a %s link: %v\nwant error containing %q", kind, err, want)
			}
			if l, err := h.LinkByName(name); err != nil || l.Type() != kind {
				t.Fatalf("the %s link was touched: %v %v", kind, l, err)
			}
			if _, err := netlink.LinkByName(name); err == nil {
				t.Fatal("failed Create left a TAP behind")
			}
		})
	}
	if tested == 0 {
		t.Fatal("no link kind could be created to clash with")
	}
}

// TestBridge connects two namespaces through the readers and writers of two
// TAPs and a one-goroutine forwarder: a UDP exchange and ping work across it.
func TestBridge(t *testing.T) {
	p := newPair(t, 64)
	p.forward(t)
	nsA, nsB := p.a.Netns(), p.b.Netns()

	srv := listenUDP(t, nsB, netip.AddrPortFrom(p.ipB, 7777))
	cli := listenUDP(t, nsA, netip.AddrPortFrom(p.ipA, 0))
	msg := []byte("hello through the fabric boundary")
	dst := net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.ipB, 7777))
	buf := make([]byte, 2048)
	// ARP resolution happens through the bridge too; the first datagram may
	// wait for it, so retry a bounded number of times.
	var got bool
	for range 20 {
		if _, err := cli.WriteToUDP(msg, dst); err != nil {
			t.Fatal(err)
		}
		srv.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		n, from, err := srv.ReadFromUDPAddrPort(buf)
		if err == nil {
			if !bytes.Equal(buf[:n], msg) || from.Addr() != p.ipA {
				t.Fatalf("received %q from %v", buf[:n], from)
			}
			if _, err := srv.WriteToUDPAddrPort(buf[:n], from); err != nil {
				t.Fatal(err)
			}
			got = true
			break
		}
	}
	if !got {
		t.Fatalf("no datagram crossed the bridge; A %+v B %+v", p.a.Stats(), p.b.Stats())
	}
	cli.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, _, err := cli.ReadFromUDP(buf); err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("reply: %q %v", buf[:n], err)
	}

	t.Run("ping", func(t *testing.T) {
		ping, err := exec.LookPath("ping")
		if err != nil {
			t.Skip("ping not installed; the UDP exchange above covered the path")
		}
		var out []byte
		err = netnsutil.Do(nsA, func() error {
			// Forked from a thread inside nsA, so ping runs there.
			var err error
			out, err = exec.Command(ping, "-c", "3", "-i", "0.2", "-W", "2", p.ipB.String()).CombinedOutput()
			return err
		})
		if err != nil {
			t.Fatalf("ping %v: %v\n%s", p.ipB, err, out)
		}
		if !strings.Contains(string(out), " 0% packet loss") {
			t.Fatalf("ping lost packets:\n%s", out)
		}
		t.Logf("%s", lastLines(string(out), 2))
	})

	p.stop()
	sa, sb := p.a.Stats(), p.b.Stats()
	t.Logf("A: %+v", sa)
	t.Logf("B: %+v", sb)
	// Readers keep running after the forwarder stops (stray IPv6 frames may
	// still arrive), so "in" may exceed "forwarded", never the reverse.
	if sa.FramesIn < p.forwarded[0] || sb.FramesIn < p.forwarded[1] {
		t.Fatalf("frames in A %d B %d, forwarded %v", sa.FramesIn, sb.FramesIn, p.forwarded)
	}
	// Every forwarded frame was written (or is still queued); none refused.
	if !within(2*time.Second, func() bool {
		return p.b.Stats().FramesOut == p.forwarded[0] && p.a.Stats().FramesOut == p.forwarded[1]
	}) {
		t.Fatalf("written B %d A %d, forwarded %v", p.b.Stats().FramesOut, p.a.Stats().FramesOut, p.forwarded)
	}
	for _, s := range []Stats{sa, sb} {
		if s.InRefused != [NumCauses]uint64{} || s.OutRefused != [NumCauses]uint64{} || s.ReadErrors != 0 {
			t.Fatalf("refusals on a clean path: %+v", s)
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestCloseStopsReader: a reader blocked in read, and one blocked handing a
// frame to a full channel, both exit promptly on Close.
func TestCloseStopsReader(t *testing.T) {
	privtest.Require(t, "TAP devices")
	for _, tc := range []struct {
		name    string
		traffic bool
	}{{"idle reader blocked in read", false}, {"reader blocked on a full channel", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := byte(time.Now().UnixNano())
			ip := netip.AddrFrom4([4]byte{10, 250, s, 1})
			peer := netip.AddrFrom4([4]byte{10, 250, s, 2})
			d, err := Create(Config{Name: "ftz" + uniq(), Netns: "fe-tap-z-" + uniq(),
				Addrs: []netip.Prefix{netip.PrefixFrom(ip, 24)}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			in := make(chan *Frame) // nobody receives
			if err := d.Start(in); err != nil {
				t.Fatal(err)
			}
			if tc.traffic {
				addNeigh(t, d, peer, net.HardwareAddr{2, 0, 0, 0, 0, 2})
				c := listenUDP(t, d.Netns(), netip.AddrPortFrom(ip, 0))
				if _, err := c.WriteToUDPAddrPort([]byte("x"), netip.AddrPortFrom(peer, 9)); err != nil {
					t.Fatal(err)
				}
				if !within(2*time.Second, func() bool { return d.Stats().Stalls > 0 }) {
					t.Fatalf("reader never blocked: %+v", d.Stats())
				}
			} else {
				time.Sleep(20 * time.Millisecond) // let the reader enter read
			}
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- d.Close() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Close did not return within 2 s: reader still blocked")
			}
			t.Logf("Close took %v", time.Since(start))
			if tc.traffic && d.Stats().InRefused[CauseClosed] != 1 {
				t.Fatalf("the frame held at Close was not counted: %+v", d.Stats())
			}
			if d.Err() != nil {
				t.Fatalf("reader error %v", d.Err())
			}
		})
	}
}

// udpSeq builds/reads the sequence number carried in test datagrams.
func udpSeq(f *Frame) (uint32, bool) {
	// IPv4 (no options, as Linux sends) + UDP header = 28 bytes.
	const off = ether.HeaderLen + 28
	if f.Header.EtherType != 0x0800 || len(f.Data) < off+8 || f.Data[ether.HeaderLen+9] != 17 ||
		!bytes.Equal(f.Data[off:off+4], []byte("seq:")) {
		return 0, false
	}
	return binary.BigEndian.Uint32(f.Data[off+4:]), true
}

// TestBackpressure: while the consumer admits nothing, the reader stops
// reading; the kernel holds the frames; once the consumer drains, every
// frame arrives, in order, and the counters agree.
func TestBackpressure(t *testing.T) {
	privtest.Require(t, "TAP devices")
	const sinkCap, n = 4, 100 // n well below the TAP's kernel queue (500 frames)
	s := byte(time.Now().UnixNano() >> 8)
	ip := netip.AddrFrom4([4]byte{10, 250, s, 1})
	peer := netip.AddrFrom4([4]byte{10, 250, s, 2})
	d := create(t, Config{Name: "ftp" + uniq(), Netns: "fe-tap-p-" + uniq(),
		Addrs: []netip.Prefix{netip.PrefixFrom(ip, 24)}})
	addNeigh(t, d, peer, net.HardwareAddr{2, 0, 0, 0, 0, 2})
	in := make(chan *Frame, sinkCap)
	if err := d.Start(in); err != nil {
		t.Fatal(err)
	}
	c := listenUDP(t, d.Netns(), netip.AddrPortFrom(ip, 0))
	for i := range uint32(n) {
		msg := binary.BigEndian.AppendUint32([]byte("seq:"), i)
		if _, err := c.WriteToUDPAddrPort(msg, netip.AddrPortFrom(peer, 9)); err != nil {
			t.Fatal(err)
		}
	}
	// The reader fills the channel, holds one more frame, and stops.
	if !within(2*time.Second, func() bool { return d.Stats().Stalls > 0 }) {
		t.Fatalf("reader never stalled: %+v", d.Stats())
	}
	time.Sleep(50 * time.Millisecond)
	// FramesIn includes the one frame the reader holds while blocked.
	if st := d.Stats(); st.FramesIn > sinkCap+1 {
		t.Fatalf("reader kept reading while the consumer admitted nothing: %+v", st)
	}
	// Drain. Other frames (IPv6 router solicitations, ...) may be interleaved.
	var seqs []uint32
	var total uint64
	deadline := time.After(5 * time.Second)
	for len(seqs) < n {
		select {
		case f := <-in:
			total++
			if q, ok := udpSeq(f); ok {
				seqs = append(seqs, q)
			}
			f.Release()
		case <-deadline:
			t.Fatalf("got %d of %d datagrams; stats %+v", len(seqs), n, d.Stats())
		}
	}
	for i, q := range seqs {
		if q != uint32(i) {
			t.Fatalf("datagram %d carries seq %d: reordered or lost", i, q)
		}
	}
	st := d.Stats()
	if st.FramesIn < total || st.InRefused != [NumCauses]uint64{} || st.ReadErrors != 0 {
		t.Fatalf("stats %+v after receiving %d frames", st, total)
	}
	link, err := linkIn(t, d.Netns(), d.Name())
	if err != nil {
		t.Fatal(err)
	}
	if ls := link.Attrs().Statistics; ls != nil && ls.TxDropped != 0 {
		t.Fatalf("kernel dropped %d frames at the TAP", ls.TxDropped)
	}
	t.Logf("stalls %d, frames in %d, all %d datagrams in order", st.Stalls, st.FramesIn, n)
}

// TestSendRefusals checks the writer queue bound and every outbound cause.
func TestSendRefusals(t *testing.T) {
	privtest.Require(t, "TAP devices")
	d, err := Create(Config{Name: "fts" + uniq(), Netns: "fe-tap-s-" + uniq(), TxQueueLen: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	frame := append(append(append([]byte{}, ether.BroadcastMAC[:]...), 2, 0, 0, 0, 0, 9), 0x88, 0xb5) // local experimental EtherType
	frame = append(frame, make([]byte, 46)...)

	// Not started: the queue fills.
	for i := range 2 {
		if err := d.Write(frame); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := d.Write(frame); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third write: %v, want ErrQueueFull", err)
	}
	if err := d.Write(frame[:10]); !errors.Is(err, ether.ErrTooShort) {
		t.Fatalf("short write: %v", err)
	}
	if err := d.Write(make([]byte, ether.HeaderLen+d.MTU()+1)); !errors.Is(err, ether.ErrTooLong) {
		t.Fatalf("long write: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(frame); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
	st := d.Stats()
	want := [NumCauses]uint64{CauseQueueFull: 1, CauseTooShort: 1, CauseTooLong: 1, CauseClosed: 3}
	if st.OutRefused != want || st.FramesOut != 0 {
		t.Fatalf("OutRefused %v FramesOut %d, want %v 0", st.OutRefused, st.FramesOut, want)
	}
}

// TestWriteError: writes to a TAP that is down fail in the kernel; they are
// counted, and the writer keeps going.
func TestWriteError(t *testing.T) {
	privtest.Require(t, "TAP devices")
	d := create(t, Config{Name: "ftw" + uniq(), Netns: "fe-tap-w-" + uniq()})
	h, err := netnsutil.Handle(d.Netns())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link, err := h.LinkByName(d.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetDown(link); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(make(chan *Frame, 1)); err != nil {
		t.Fatal(err)
	}
	frame := append(append(append([]byte{}, ether.BroadcastMAC[:]...), 2, 0, 0, 0, 0, 9), 0x88, 0xb5)
	frame = append(frame, make([]byte, 46)...)
	for range 3 {
		if err := d.Write(frame); err != nil {
			t.Fatal(err)
		}
	}
	if !within(2*time.Second, func() bool { return d.Stats().OutRefused[CauseWriteError] == 3 }) {
		t.Fatalf("stats %+v, want 3 write errors", d.Stats())
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(frame); err != nil {
		t.Fatal(err)
	}
	if !within(2*time.Second, func() bool { return d.Stats().FramesOut == 1 }) {
		t.Fatalf("stats %+v, want the writer to recover", d.Stats())
	}
}

// TestRuntimeMTU: when the interface MTU is raised at runtime (ip link set
// mtu), frames longer than the configured MTU are read and written
// instead of being black-holed, and MTU reports the new value; frames too
// long for the new MTU are still refused and counted.
func TestRuntimeMTU(t *testing.T) {
	privtest.Require(t, "TAP devices")
	s := byte(time.Now().UnixNano() >> 12)
	ip := netip.AddrFrom4([4]byte{10, 250, s, 1})
	peer := netip.AddrFrom4([4]byte{10, 250, s, 2})
	d := create(t, Config{Name: "ftl" + uniq(), Netns: "fe-tap-l-" + uniq(),
		Addrs: []netip.Prefix{netip.PrefixFrom(ip, 24)}, Logger: zaptest.NewLogger(t)})
	addNeigh(t, d, peer, net.HardwareAddr{2, 0, 0, 0, 0, 2})
	h, err := netnsutil.Handle(d.Netns())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link, err := h.LinkByName(d.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(link, 4000); err != nil {
		t.Fatal(err)
	}
	in := make(chan *Frame, 16)
	if err := d.Start(in); err != nil {
		t.Fatal(err)
	}
	c := listenUDP(t, d.Netns(), netip.AddrPortFrom(ip, 0))
	for _, size := range []int{3000, 100} {
		msg := append(binary.BigEndian.AppendUint32([]byte("seq:"), uint32(size)), make([]byte, size)...)
		if _, err := c.WriteToUDPAddrPort(msg, netip.AddrPortFrom(peer, 9)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(3 * time.Second)
	var got []uint32
	var big *Frame
	for len(got) < 2 {
		select {
		case f := <-in:
			q, ok := udpSeq(f)
			if !ok {
				f.Release()
				continue
			}
			got = append(got, q)
			if q == 3000 {
				big = f
			} else {
				f.Release()
			}
		case <-deadline:
			t.Fatalf("got datagrams %v, want 3000 and 100; stats %+v, reader error %v", got, d.Stats(), d.Err())
		}
	}
	if got[0] != 3000 || got[1] != 100 || d.MTU() != 4000 {
		t.Fatalf("got datagrams %v with MTU %d, want [3000 100] with 4000", got, d.MTU())
	}
	if st := d.Stats(); st.InRefused[CauseTooLong] != 0 || st.ReadErrors != 0 {
		t.Fatalf("stats %+v, want no refusal", st)
	}
	// The same jumbo frame goes back out through the device; one past the
	// new MTU is refused.
	if err := d.Write(big.Data); err != nil {
		t.Fatalf("writing a 3000-byte payload at MTU 4000: %v", err)
	}
	big.Release()
	if err := d.Write(make([]byte, 14+4001)); !errors.Is(err, ether.ErrTooLong) {
		t.Fatalf("writing a 4001-byte payload at MTU 4000: %v, want too long", err)
	}
	for start := time.Now(); d.Stats().FramesOut < 1; time.Sleep(time.Millisecond) {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("jumbo frame never written; stats %+v", d.Stats())
		}
	}
	if st := d.Stats(); st.OutRefused[CauseTooLong] != 1 || st.OutRefused[CauseWriteError] != 0 {
		t.Fatalf("stats %+v, want one too_long refusal out", st)
	}
}

// TestDeletedFromOutside: if someone deletes the device under the daemon,
// the reader stops with an error instead of spinning, and Close still works.
func TestDeletedFromOutside(t *testing.T) {
	privtest.Require(t, "TAP devices")
	d := create(t, Config{Name: "fto" + uniq(), Netns: "fe-tap-o-" + uniq()})
	if err := d.Start(make(chan *Frame, 1)); err != nil {
		t.Fatal(err)
	}
	link, err := linkIn(t, d.Netns(), d.Name())
	if err != nil {
		t.Fatal(err)
	}
	h, err := netnsutil.Handle(d.Netns())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.LinkDel(link); err != nil {
		t.Fatal(err)
	}
	if !within(2*time.Second, func() bool { return d.Err() != nil }) {
		t.Fatalf("reader did not notice the deletion; stats %+v", d.Stats())
	}
	t.Logf("reader stopped with: %v", d.Err())
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestKernelDrops: with the reader stopped (its consumer takes nothing),
// the kernel's queue to the daemon overflows and the kernel counts the
// drops as the device's tx_dropped; KernelDrops reads them as drops in.
func TestKernelDrops(t *testing.T) {
	privtest.Require(t, "TAP devices")
	s := byte(time.Now().UnixNano() >> 8)
	ip := netip.AddrFrom4([4]byte{10, 251, s, 1})
	peer := netip.AddrFrom4([4]byte{10, 251, s, 2})
	d := create(t, Config{Name: "ftk" + uniq(), Netns: "fe-tap-k-" + uniq(),
		Addrs: []netip.Prefix{netip.PrefixFrom(ip, 24)}})
	addNeigh(t, d, peer, net.HardwareAddr{2, 0, 0, 0, 0, 2})
	if in, out, err := d.KernelDrops(); err != nil || in != 0 || out != 0 {
		t.Fatalf("fresh device: kernel drops in %d out %d, %v", in, out, err)
	}
	in := make(chan *Frame, 1)
	if err := d.Start(in); err != nil {
		t.Fatal(err)
	}
	c := listenUDP(t, d.Netns(), netip.AddrPortFrom(ip, 0))
	const n = 2000 // well past the kernel's queue (500 frames)
	for i := range uint32(n) {
		msg := binary.BigEndian.AppendUint32([]byte("seq:"), i)
		if _, err := c.WriteToUDPAddrPort(msg, netip.AddrPortFrom(peer, 9)); err != nil {
			t.Fatal(err)
		}
	}
	var dropIn uint64
	if !within(2*time.Second, func() bool {
		dropIn, _, _ = d.KernelDrops()
		return dropIn > 0
	}) {
		t.Fatalf("no kernel drops counted after %d datagrams into a stopped reader; stats %+v", n, d.Stats())
	}
	link, err := linkIn(t, d.Netns(), d.Name())
	if err != nil {
		t.Fatal(err)
	}
	if got := link.Attrs().Statistics.TxDropped; got < dropIn {
		t.Fatalf("KernelDrops in %d, the link's tx_dropped %d", dropIn, got)
	}
	t.Logf("kernel dropped %d of %d datagrams; the reader took %d", dropIn, n, d.Stats().FramesIn)
	for len(in) > 0 {
		(<-in).Release()
	}
}

// TestReclaimOnlyMarked: reclaim deletes only what fabemu marked. A
// user's persistent TAP of the same name (ip tuntap add) and a user's
// namespace (ip netns add, with a veth) are refused by name and left
// alone; a namespace fabemu created is recognised as its own.
func TestReclaimOnlyMarked(t *testing.T) {
	privtest.Require(t, "TAP devices")
	ns := newNS(t, "m") // as `ip netns add` makes it: no mark
	h, err := netnsutil.Handle(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	// A TAP is created in the namespace of the thread that opens the
	// tun device: this one is in ours, as ip tuntap add run here makes it.
	name := "ftm" + uniq()
	user := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TAP, Flags: netlink.TUNTAP_NO_PI}
	if err := netlink.LinkAdd(user); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			netlink.LinkDel(l)
		}
	})
	for _, f := range user.Fds {
		f.Close() // persistent, like ip tuntap add: no process holds it
	}
	if _, err := Create(Config{Name: name}); err == nil || !strings.Contains(err.Error(), "was not created by fabemu") {
		t.Fatalf("Create over a user's TAP: %v, want a refusal", err)
	}
	if _, err := netlink.LinkByName(name); err != nil {
		t.Fatalf("the user's TAP was deleted: %v", err)
	}

	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "fve" + uniq()}, PeerName: "fvp" + uniq()}); err != nil {
		t.Skipf("cannot create a veth here: %v", err)
	}
	ok, what, err := NetnsIsFabemus(ns)
	if err != nil || ok || !strings.Contains(what, "fabemu did not create") {
		t.Errorf("a user's namespace: ours %v (%s), %v", ok, what, err)
	}

	own := "fe-tap-own-" + uniq()
	t.Cleanup(func() {
		if netnsutil.Exists(own) {
			netnsutil.Delete(own)
		}
	})
	d, err := Create(Config{Name: "fto" + uniq(), Netns: own, Persist: true})
	if err != nil {
		t.Fatal(err)
	}
	ok, what, err = NetnsIsFabemus(own)
	if err != nil || !ok {
		t.Errorf("a namespace fabemu created: ours %v (%s), %v", ok, what, err)
	}
	d.file.Close() // crash: the persistent, marked TAP stays
	d2 := create(t, Config{Name: d.Name(), Netns: own, Persist: true})
	if !d2.Reclaimed() {
		t.Error("fabemu's own stale TAP was not reclaimed")
	}
}
