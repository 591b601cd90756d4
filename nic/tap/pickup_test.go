package tap

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/fabemu/fabemu/nic/ether"
)

// echoRequest builds an Ethernet/IPv4/ICMP echo request from src (MAC
// srcMAC) to dst with identifier 0x4645 and sequence seq, padded to
// payload bytes of data.
func echoRequest(dstMAC, srcMAC ether.MAC, src, dst netip.Addr, seq uint16, payload int) []byte {
	icmp := []byte{8, 0, 0, 0, 0x46, 0x45}
	icmp = binary.BigEndian.AppendUint16(icmp, seq)
	icmp = append(icmp, make([]byte, payload)...)
	binary.BigEndian.PutUint16(icmp[2:], checksum(icmp))
	return ipv4Frame(dstMAC, srcMAC, src, dst, 1, icmp)
}

// echoReplySeq returns the sequence number of an ICMP echo reply with
// identifier 0x4645, or false.
func echoReplySeq(f []byte) (uint16, bool) {
	const ip = ether.HeaderLen
	if len(f) < ip+28 || f[12] != 0x08 || f[13] != 0x00 || f[ip+9] != 1 {
		return 0, false
	}
	icmp := ip + int(f[ip]&0x0f)*4
	if len(f) < icmp+8 || f[icmp] != 0 || f[icmp+4] != 0x46 || f[icmp+5] != 0x45 {
		return 0, false
	}
	return binary.BigEndian.Uint16(f[icmp+6:]), true
}

// TestPickUpTakesTheAnswerOnce: the kernel answers an echo request inside
// the write that carries it, so after an inline Send the reply is waiting
// on the device and PickUp hands it over on the caller's goroutine. Every
// reply arrives exactly once, through PickUp or the reader (woken by the
// kernel for the same frame, it may get there first on a loaded machine),
// and PickUp does nothing unless an inline write came since the last one.
func TestPickUpTakesTheAnswerOnce(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	const n = 40
	s := byte(time.Now().UnixNano() >> 8)
	ip := netip.AddrFrom4([4]byte{10, 250, s, 1})
	peer := netip.AddrFrom4([4]byte{10, 250, s, 2})
	peerMAC := ether.MAC{0x02, 0xfe, 0, 0, s, 2}
	d := create(t, Config{Name: "ftp" + uniq(), Netns: "fe-tap-p-" + uniq(), InlineWriteMax: 200,
		Addrs: []netip.Prefix{netip.PrefixFrom(ip, 24)}})
	d.inlineQuiet = 0
	addNeigh(t, d, peer, net.HardwareAddr(peerMAC[:]))
	read := make(chan *Frame, 2*n)
	if err := d.Start(read); err != nil {
		t.Fatal(err)
	}
	var picked []uint16
	take := func(f *Frame) bool {
		if seq, ok := echoReplySeq(f.Data); ok {
			picked = append(picked, seq)
		}
		f.Release()
		return true
	}
	if d.PickUp(take) {
		t.Fatal("PickUp handed a frame over before any inline write")
	}
	for i := range uint16(n) {
		before := d.InlineWrites()
		if err := d.Write(echoRequest(d.MAC(), peerMAC, peer, ip, i, 32)); err != nil {
			t.Fatal(err)
		}
		if d.InlineWrites() != before+1 {
			t.Fatalf("echo request %d was not written inline", i)
		}
		d.PickUp(take)
		if d.PickUp(take) {
			t.Fatalf("a second PickUp after echo request %d handed a frame over", i)
		}
	}
	// A request through the writer (too long for inline) arms nothing.
	if err := d.Write(echoRequest(d.MAC(), peerMAC, peer, ip, n, 400)); err != nil {
		t.Fatal(err)
	}
	within(time.Second, func() bool { return d.Stats().FramesOut == n+1 })
	if d.PickUp(take) {
		t.Error("PickUp handed a frame over after a write through the writer")
	}
	seen := make(map[uint16]int)
	for _, q := range picked {
		seen[q]++
	}
	deadline := time.After(2 * time.Second)
	for len(seen) < n+1 {
		select {
		case f := <-read:
			if seq, ok := echoReplySeq(f.Data); ok {
				seen[seq]++
			}
			f.Release()
		case <-deadline:
			t.Fatalf("%d of %d echo replies arrived (%d picked up)", len(seen), n+1, len(picked))
		}
	}
	for q, c := range seen {
		if c != 1 || q > n {
			t.Errorf("echo reply %d arrived %d times", q, c)
		}
	}
	if got := d.PickUps(); got != uint64(len(picked)) {
		t.Errorf("PickUps %d, handed over %d", got, len(picked))
	}
	// The picker reads within a system call of the write's end; the reader
	// needs a thread wake-up. A quarter leaves room for a loaded machine.
	if len(picked) < n/4 {
		t.Errorf("%d of %d echo replies picked up, want at least a quarter", len(picked), n)
	}
	t.Logf("%d of %d echo replies picked up, the rest read by the reader", len(picked), n)
}
