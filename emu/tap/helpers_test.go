package tap

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// uniq returns a random suffix so parallel test runs do not clash.
func uniq() string { return fmt.Sprintf("%06x", rand.Uint32()&0xffffff) }

// newNS creates a namespace the test owns and removes it on cleanup.
func newNS(t testing.TB, tag string) string {
	t.Helper()
	name := "fe-tap-" + tag + "-" + uniq()
	if err := netnsutil.Create(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if netnsutil.Exists(name) {
			if err := netnsutil.Delete(name); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return name
}

// create makes a device and closes it on cleanup.
func create(t testing.TB, cfg Config) *Device {
	t.Helper()
	d, err := Create(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return d
}

// pair is two TAPs in two namespaces of one 10.250.x.0/24 subnet.
type pair struct {
	a, b       *Device
	ipA, ipB   netip.Addr
	in         chan *Frame
	stopFwd    chan struct{}
	fwdDone    sync.WaitGroup
	forwarded  [2]uint64 // a->b, b->a; read after stop
	superA     uint64    // super-frames (GSO, longer than the MTU) read from a; read after stop
	macA, macB net.HardwareAddr
}

func newPair(t testing.TB, sinkCap int) *pair {
	t.Helper()
	return newPairOffload(t, sinkCap, false, false)
}

// newPairOffload is newPair with offloads (Config.Offload) on A and B as
// given.
func newPairOffload(t testing.TB, sinkCap int, offA, offB bool) *pair {
	t.Helper()
	privtest.Require(t, "TAP devices and network namespaces")
	s := rand.IntN(256)
	p := &pair{
		ipA:  netip.AddrFrom4([4]byte{10, 250, byte(s), 1}),
		ipB:  netip.AddrFrom4([4]byte{10, 250, byte(s), 2}),
		macA: net.HardwareAddr{0x02, 0xfe, 0, 0, byte(s), 1},
		macB: net.HardwareAddr{0x02, 0xfe, 0, 0, byte(s), 2},
		in:   make(chan *Frame, sinkCap),
	}
	id := uniq()
	p.a = create(t, Config{Name: "fta" + id, MAC: p.macA, Netns: "fe-tap-a-" + id, Offload: offA,
		Addrs: []netip.Prefix{netip.PrefixFrom(p.ipA, 24)}})
	p.b = create(t, Config{Name: "ftb" + id, MAC: p.macB, Netns: "fe-tap-b-" + id, Offload: offB,
		Addrs: []netip.Prefix{netip.PrefixFrom(p.ipB, 24)}})
	return p
}

// forward starts the trivial bridge: every frame read from one TAP is sent
// to the other, by one goroutine, in order.
func (p *pair) forward(t testing.TB) {
	t.Helper()
	if err := p.a.Start(p.in); err != nil {
		t.Fatal(err)
	}
	if err := p.b.Start(p.in); err != nil {
		t.Fatal(err)
	}
	p.stopFwd = make(chan struct{})
	p.fwdDone.Add(1)
	go func() {
		defer p.fwdDone.Done()
		for {
			select {
			case f := <-p.in:
				if f.Port == p.a {
					p.forwarded[0]++
					if f.Offload.IsGSO() && len(f.Data) > 1514 {
						p.superA++
					}
					_ = p.b.Send(f)
				} else {
					p.forwarded[1]++
					_ = p.a.Send(f)
				}
			case <-p.stopFwd:
				return
			}
		}
	}()
	t.Cleanup(p.stop)
}

func (p *pair) stop() {
	if p.stopFwd != nil {
		close(p.stopFwd)
		p.fwdDone.Wait()
		p.stopFwd = nil
	}
}

// listenUDP opens a UDP socket inside namespace ns.
func listenUDP(t testing.TB, ns string, addr netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := netnsutil.Do(ns, func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		return err
	})
	if err != nil {
		t.Fatalf("listen %v in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// forceReadBuffer gives c a receive buffer of n bytes regardless of the
// host's net.core.rmem_max (SO_RCVBUFFORCE; the privileged tests have
// CAP_NET_ADMIN), so a burst the test sends cannot overflow it while the
// test's reader waits for a CPU on a busy machine.
func forceReadBuffer(t testing.TB, c *net.UDPConn, n int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatalf("SO_RCVBUFFORCE %d: %v", n, serr)
	}
}

// addNeigh installs a permanent ARP entry so traffic leaves at once without
// address resolution.
func addNeigh(t testing.TB, d *Device, ip netip.Addr, mac net.HardwareAddr) {
	t.Helper()
	h, err := netnsutil.Handle(d.Netns())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link, err := h.LinkByName(d.Name())
	if err != nil {
		t.Fatal(err)
	}
	err = h.NeighAdd(&netlink.Neigh{LinkIndex: link.Attrs().Index, Family: netlink.FAMILY_V4,
		State: netlink.NUD_PERMANENT, IP: ip.AsSlice(), HardwareAddr: mac})
	if err != nil {
		t.Fatal(err)
	}
}

// linkIn looks a device up in its namespace.
func linkIn(t testing.TB, ns, name string) (netlink.Link, error) {
	t.Helper()
	h, err := netnsutil.Handle(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return h.LinkByName(name)
}

// within polls cond until it holds or the deadline passes.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// ipv4Frame builds an Ethernet/IPv4 frame (no options, TTL 64, don't
// fragment) from src to dst carrying l4 as protocol proto.
func ipv4Frame(dstMAC, srcMAC ether.MAC, src, dst netip.Addr, proto byte, l4 []byte) []byte {
	b := make([]byte, 0, ether.HeaderLen+20+len(l4))
	b = append(b, dstMAC[:]...)
	b = append(b, srcMAC[:]...)
	b = append(b, 0x08, 0x00)
	ip := len(b)
	b = append(b, 0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0)
	s4, d4 := src.As4(), dst.As4()
	b = append(b, s4[:]...)
	b = append(b, d4[:]...)
	binary.BigEndian.PutUint16(b[ip+2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(b[ip+10:], checksum(b[ip:ip+20]))
	return append(b, l4...)
}
