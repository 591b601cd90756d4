package emu

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
)

// TestCaptureConfig: the background.capture keys are checked on their own.
func TestCaptureConfig(t *testing.T) {
	for _, tc := range []struct {
		edit func(*BackgroundConfig)
		want string
	}{
		{func(b *BackgroundConfig) { b.Capture = "a/b" }, `background.capture "a/b": want an interface name`},
		{func(b *BackgroundConfig) { b.Capture = "averyveryverylongname" }, "at most 15 bytes"},
		{func(b *BackgroundConfig) { b.Capture, b.CaptureMapBy = "eth0", "vlan" }, `background.capture_map_by "vlan"`},
		{func(b *BackgroundConfig) { b.Capture, b.CaptureRing = "eth0", 100 }, "background.capture_ring 100"},
		{func(b *BackgroundConfig) { b.Capture, b.CaptureAttach = "eth0", "xdp" }, `background.capture_attach: attach mode "xdp"`},
	} {
		c := DefaultRunConfig()
		c.TAPs = []TAPConfig{{Name: "a"}}
		tc.edit(&c.Background)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	c := DefaultRunConfig()
	c.TAPs = []TAPConfig{{Name: "a"}}
	c.Background.Capture, c.Background.CaptureMapBy, c.Background.CaptureAttach = "eth0", "ip", "tcx"
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

// capVeth is two namespaces joined by a veth pair with static neighbours
// and no IPv6, so that only the frames a test sends cross it.
type capVeth struct {
	nsA, nsB, devA, devB string
	ipA, ipB             netip.Addr
}

func runCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newCapVeth(t *testing.T) *capVeth {
	t.Helper()
	privtest.Require(t, "network namespaces and eBPF")
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	id := fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
	s := byte(rand.IntN(200) + 20)
	v := &capVeth{nsA: "fe-cap-a-" + id, nsB: "fe-cap-b-" + id, devA: "fca" + id, devB: "fcb" + id,
		ipA: netip.AddrFrom4([4]byte{10, 252, s, 1}), ipB: netip.AddrFrom4([4]byte{10, 252, s, 2})}
	for _, ns := range []string{v.nsA, v.nsB} {
		if err := netnsutil.Create(ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if netnsutil.Exists(ns) {
				if err := netnsutil.Delete(ns); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			}
		})
		runCmd(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	runCmd(t, "ip", "link", "add", v.devA, "netns", v.nsA, "type", "veth", "peer", "name", v.devB, "netns", v.nsB)
	macA, macB := "02:fc:00:00:00:01", "02:fc:00:00:00:02"
	for _, e := range []struct{ ns, dev, mac, ip, peerIP, peerMAC string }{
		{v.nsA, v.devA, macA, v.ipA.String(), v.ipB.String(), macB},
		{v.nsB, v.devB, macB, v.ipB.String(), v.ipA.String(), macA},
	} {
		runCmd(t, "ip", "-n", e.ns, "link", "set", e.dev, "address", e.mac)
		runCmd(t, "ip", "-n", e.ns, "addr", "add", e.ip+"/24", "dev", e.dev)
		runCmd(t, "ip", "-n", e.ns, "link", "set", e.dev, "up")
		runCmd(t, "ip", "-n", e.ns, "neigh", "replace", e.peerIP, "lladdr", e.peerMAC, "dev", e.dev, "nud", "permanent")
	}
	return v
}

// packets returns the device's received + sent packet counters.
func (v *capVeth) packets(t *testing.T) uint64 {
	t.Helper()
	h, err := netnsutil.Handle(v.nsA)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName(v.devA)
	if err != nil {
		t.Fatal(err)
	}
	st := l.Attrs().Statistics
	return st.RxPackets + st.TxPackets
}

// sendUDP sends n datagrams of size bytes from A to a sink in B.
func (v *capVeth) sendUDP(t *testing.T, n, size int) {
	t.Helper()
	var sink *net.UDPConn
	if err := netnsutil.Do(v.nsB, func() (err error) {
		sink, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(v.ipB, 9000)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	go io.Copy(io.Discard, sink)
	if err := netnsutil.Do(v.nsA, func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(v.ipB, 9000)))
		if err != nil {
			return err
		}
		defer c.Close()
		msg := make([]byte, size)
		for range n {
			if _, err := c.Write(msg); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
}

// tcxPrograms counts the programs attached to the device with tcx.
func (v *capVeth) tcxPrograms(t *testing.T) int {
	t.Helper()
	n := 0
	if err := netnsutil.Do(v.nsA, func() error {
		ifc, err := net.InterfaceByName(v.devA)
		if err != nil {
			return err
		}
		for _, at := range []ebpf.AttachType{ebpf.AttachTCXIngress, ebpf.AttachTCXEgress} {
			r, err := link.QueryPrograms(link.QueryOptions{Target: ifc.Index, Attach: at})
			if err != nil {
				return err
			}
			n += len(r.Programs)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBackgroundCapture mirrors a veth end's traffic into the fabric: a
// known UDP burst crosses the veth pair between two namespaces, and every
// frame is accounted for (captured + ring drops = sent = what the device
// counted), reaches the model and crosses the fabric as a background
// message between two background hosts, while frames between the ports
// still arrive. On drain the program is detached and no tcx program is
// left on the device.
//
// With the smallest ring buffer the kernel drops frames; they are counted,
// and the rest still add up.
func TestBackgroundCapture(t *testing.T) {
	for _, ring := range []int{0, 4096} {
		t.Run(fmt.Sprintf("ring=%d", ring), func(t *testing.T) { testBackgroundCapture(t, ring) })
	}
}

func testBackgroundCapture(t *testing.T, ring int) {
	v := newCapVeth(t)
	r := newRig(t, "tap-square-10g", ports(2), func(c *RunConfig) {
		c.Background.Capture, c.Background.CaptureNetns = v.devA, v.nsA
		c.Background.CaptureRing = ring
	})
	if got := v.tcxPrograms(t); got != 2 {
		t.Fatalf("%d tcx programs on %s, want 2 (ingress and egress)", got, v.devA)
	}
	dev0 := v.packets(t)
	const sent, size = 3000, 200
	const frameLen = 14 + 20 + 8 + size
	v.sendUDP(t, sent, size)
	devN := v.packets(t) - dev0
	// The fabric still carries the ports' frames beside the capture.
	b := mkFrame(mac(1), mac(0), etherTest, 1, 100, rand.New(rand.NewPCG(1, 2)))
	r.inject(t, 0, b)
	if got := r.recv(t, 1); string(got) != string(b) {
		t.Fatal("frame between the ports changed")
	}
	st := r.await(t, "every captured frame to cross the fabric", func(st *Status) bool {
		c := st.BackgroundCapture
		return c != nil && c.Matched >= sent && c.Read == c.Captured && c.Fabric.Frames == c.Submitted &&
			c.Fabric.Outstanding == 0
	})
	c := st.BackgroundCapture
	f := c.Fabric
	t.Logf("sent %d, device counted %d; capture %+v", sent, devN, *c)
	if devN != sent {
		t.Fatalf("the device counted %d frames, %d sent: other traffic on the veth", devN, sent)
	}
	if c.Matched != c.Captured+c.Dropped || c.Matched != sent {
		t.Errorf("matched %d, captured %d + ring dropped %d; sent %d", c.Matched, c.Captured, c.Dropped, sent)
	}
	if c.Read != c.Captured || c.Submitted != c.Read || c.Late != 0 || c.Error != "" || c.Attach != "tcx" {
		t.Errorf("read %d, submitted %d, late %d of %d captured; attach %s; error %q", c.Read, c.Submitted, c.Late, c.Captured, c.Attach, c.Error)
	}
	if f.Sent != c.Submitted || f.Copies != f.Sent || f.Delivered != f.Copies || f.Bytes != f.Sent*frameLen || f.DeliveredBytes != f.Bytes {
		t.Errorf("fabric %+v for %d submitted frames of %d bytes", f, c.Submitted, frameLen)
	}
	bg := []int{1, 3, 4, 5, 6, 7} // tap-square-10g's 8 hosts, less the ports' 0 and 2
	if len(f.Endpoints) != 2 || f.Endpoints[0].Endpoint != "02:fc:00:00:00:01" ||
		!slices.Contains(bg, f.Endpoints[0].Host) || !slices.Contains(bg, f.Endpoints[1].Host) {
		t.Errorf("endpoints %+v, want the two MACs on background hosts %v", f.Endpoints, bg)
	}
	if st.BackgroundHosts != len(bg) || st.Fabric.DeliveredBytes < int64(f.DeliveredBytes) {
		t.Errorf("background hosts %d, fabric delivered %d bytes", st.BackgroundHosts, st.Fabric.DeliveredBytes)
	}

	// Draining (as on SIGTERM) stops the capture: the program is
	// detached, and what follows is not seen.
	r.drain(t)
	st = r.await(t, "the capture to stop", func(st *Status) bool { return st.BackgroundCapture.Stopped })
	if n := v.tcxPrograms(t); n != 0 {
		t.Errorf("%d tcx programs left on %s after the drain", n, v.devA)
	}
	if c := st.BackgroundCapture; c.Matched != c.Captured+c.Dropped || c.Read != c.Captured {
		t.Errorf("after the drain: matched %d, captured %d, dropped %d, read %d", c.Matched, c.Captured, c.Dropped, c.Read)
	}
	if err := r.e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBackgroundCaptureNoInterface: a missing interface is refused with
// the key and the interface named, before anything runs.
func TestBackgroundCaptureNoInterface(t *testing.T) {
	privtest.Require(t, "eBPF")
	c := DefaultRunConfig()
	c.Model.Preset = "tap-square-10g"
	c.TAPs = []TAPConfig{{Name: "a"}}
	c.Background.Capture = "fabemu-nosuch"
	_, err := newEmulator(c, nil)
	if err == nil || !strings.Contains(err.Error(), "background.capture: interface fabemu-nosuch") {
		t.Fatalf("got %v", err)
	}
}
