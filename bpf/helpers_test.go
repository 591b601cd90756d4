//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
)

// uniq returns a random suffix so parallel test runs do not clash.
func uniq() string { return fmt.Sprintf("%06x", rand.Uint32()&0xffffff) }

// vethPair is two namespaces joined by a veth pair: A (addr ipA, device
// devA in nsA) and B.
type vethPair struct {
	nsA, nsB   string
	devA, devB string
	ipA, ipB   netip.Addr
}

// run runs a command and fails the test with its output on error.
func run(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newVethPair needs root and the ip command; it removes everything on
// cleanup, also when the test fails half way.
func newVethPair(t testing.TB) *vethPair {
	t.Helper()
	privtest.Require(t, "network namespaces and eBPF")
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	id := uniq()
	s := rand.IntN(200) + 20
	p := &vethPair{
		nsA: "fe-bpf-a-" + id, nsB: "fe-bpf-b-" + id,
		devA: "fba" + id, devB: "fbb" + id,
		ipA: netip.AddrFrom4([4]byte{10, 251, byte(s), 1}),
		ipB: netip.AddrFrom4([4]byte{10, 251, byte(s), 2}),
	}
	for _, ns := range []string{p.nsA, p.nsB} {
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
		// No IPv6: its router and listener reports would add frames
		// nobody sent on purpose.
		run(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	run(t, "ip", "link", "add", p.devA, "netns", p.nsA, "type", "veth", "peer", "name", p.devB, "netns", p.nsB)
	macA, macB := "02:fb:00:00:00:01", "02:fb:00:00:00:02"
	for _, e := range []struct{ ns, dev, mac, ip, peerIP, peerMAC string }{
		{p.nsA, p.devA, macA, p.ipA.String(), p.ipB.String(), macB},
		{p.nsB, p.devB, macB, p.ipB.String(), p.ipA.String(), macA},
	} {
		run(t, "ip", "-n", e.ns, "link", "set", e.dev, "address", e.mac)
		run(t, "ip", "-n", e.ns, "addr", "add", e.ip+"/24", "dev", e.dev)
		run(t, "ip", "-n", e.ns, "link", "set", e.dev, "up")
		run(t, "ip", "-n", e.ns, "link", "set", "lo", "up")
		// A permanent neighbour entry: no ARP on the wire either.
		run(t, "ip", "-n", e.ns, "neigh", "replace", e.peerIP, "lladdr", e.peerMAC, "dev", e.dev, "nud", "permanent")
	}
	return p
}

// linkCounts are a device's packet counters, as in
// /sys/class/net/IF/statistics, read over netlink in its namespace.
func linkCounts(t testing.TB, ns, dev string) (rx, tx uint64) {
	t.Helper()
	h, err := netnsutil.Handle(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	l, err := h.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	st := l.Attrs().Statistics
	return st.RxPackets, st.TxPackets
}

// requireLoaded skips (or fails under FABEMU_REQUIRE_PRIV=1) when the
// kernel cannot load or attach the programs at all.
func requireLoaded(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, ebpf.ErrNotSupported) && os.Getenv(privtest.EnvRequire) != "1" {
		t.Skipf("kernel lacks what the programs need: %v", err)
	}
	t.Fatal(err)
}

// listenTCP starts a TCP sink in namespace ns that reads and discards
// every connection; it returns its address.
func listenTCP(t testing.TB, ns string, ip netip.Addr, port uint16) netip.AddrPort {
	t.Helper()
	var ln net.Listener
	addr := netip.AddrPortFrom(ip, port)
	if err := netnsutil.Do(ns, func() (err error) {
		ln, err = net.Listen("tcp4", addr.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return addr
}

// sendTCP opens a connection from namespace ns and writes n bytes.
// sendTCP sends n bytes to a listener from inside ns and waits for the
// peer's FIN. It returns the kernel's count of retransmitted segments for
// the connection (TCP_INFO), read before the socket closes.
func sendTCP(t testing.TB, ns string, to netip.AddrPort, n int) (retrans uint32) {
	t.Helper()
	var c net.Conn
	if err := netnsutil.Do(ns, func() (err error) {
		c, err = net.DialTimeout("tcp4", to.String(), 5*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 64<<10)
	for n > 0 {
		k := min(n, len(buf))
		if _, err := c.Write(buf[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		t.Fatalf("dialled %T, not a TCP connection", c)
	}
	tc.CloseWrite()
	// Wait for the peer's FIN so that every segment has crossed.
	_, _ = io.Copy(io.Discard, c)
	raw, err := tc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var infoErr error
	if err := raw.Control(func(fd uintptr) {
		info, infoErr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || infoErr != nil {
		t.Fatalf("TCP_INFO: %v %v", err, infoErr)
	}
	return info.Total_retrans
}

func execOut(args ...string) ([]byte, error) {
	return exec.Command(args[0], args[1:]...).CombinedOutput()
}
