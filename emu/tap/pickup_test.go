package tap

import (
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/fabemu/fabemu/tracefmt/ether"
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
	others := 0 // frames of the namespace's own stack picked up on the way
	take := func(f *Frame) bool {
		if seq, ok := echoReplySeq(f.Data); ok {
			picked = append(picked, seq)
		} else {
			others++
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
	// PickUps counts every frame handed over: the echo replies and any
	// frame of the namespace's own stack that was waiting (others).
	if got, tries := d.PickUps(); got != uint64(len(picked)+others) || tries != n {
		t.Errorf("PickUps %d of %d tries, handed over %d echo replies and %d other frames for %d inline writes", got, tries, len(picked), others, n)
	}
	// Who wins is the machine's: with the other CPU halted the picker
	// reads first (38-40 of 40 on an idle machine); with it awake the
	// woken reader often takes the lock first (0-25 of 40 while other
	// tests run). TestPickUpReadsWhatIsWaiting checks the picker alone.
	t.Logf("%d of %d echo replies picked up, the rest read by the reader", len(picked), n)
}

// TestPickUpReadsWhatIsWaiting: without a reader to race with, PickUp
// hands over the answer waiting on the device after each inline write, in
// order, counted as read, and nothing while it is not armed, even with a
// frame waiting.
func TestPickUpReadsWhatIsWaiting(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	const n = 20
	s := byte(time.Now().UnixNano() >> 8)
	ip := netip.AddrFrom4([4]byte{10, 250, s, 1})
	peer := netip.AddrFrom4([4]byte{10, 250, s, 2})
	peerMAC := ether.MAC{0x02, 0xfe, 0, 0, s, 2}
	d := create(t, Config{Name: "ftw" + uniq(), Netns: "fe-tap-w-" + uniq(), InlineWriteMax: 200,
		Addrs: []netip.Prefix{netip.PrefixFrom(ip, 24)}})
	d.inlineQuiet = 0
	addNeigh(t, d, peer, net.HardwareAddr(peerMAC[:]))
	// Inline writes need a started device; no reader and no writer run, so
	// the answers stay in the device's queue for PickUp.
	d.started.Store(true)
	var picked []uint16
	others := 0 // frames of the namespace's own stack picked up on the way
	take := func(f *Frame) bool {
		if seq, ok := echoReplySeq(f.Data); ok {
			picked = append(picked, seq)
		} else {
			others++
		}
		f.Release()
		return true
	}
	// pickUp retries while the kernel has not queued the answer yet (it
	// may leave the reply to a softirq thread on a loaded machine), and
	// while what it picked was another frame of the namespace's stack (an
	// IPv6 router solicitation, say) rather than the echo reply.
	pickUp := func(i uint16) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for !d.PickUp(take) || len(picked) == 0 || picked[len(picked)-1] != i {
			if time.Now().After(deadline) {
				t.Fatalf("no answer to echo request %d picked up (picked %v)", i, picked)
			}
			time.Sleep(100 * time.Microsecond)
			d.pickArm.Store(true) // as the inline write did
		}
	}
	for i := range uint16(n) {
		before := d.InlineWrites()
		if err := d.Write(echoRequest(d.MAC(), peerMAC, peer, ip, i, 32)); err != nil {
			t.Fatal(err)
		}
		if d.InlineWrites() != before+1 {
			t.Fatalf("echo request %d was not written inline", i)
		}
		pickUp(i)
	}
	// A request written past Send leaves its answer waiting, unarmed.
	if _, err := d.file.Write(echoRequest(d.MAC(), peerMAC, peer, ip, n, 32)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if d.PickUp(take) {
		t.Error("PickUp handed a frame over without an inline write")
	}
	d.pickArm.Store(true)
	pickUp(n)
	want := make([]uint16, n+1)
	for i := range want {
		want[i] = uint16(i)
	}
	if !slices.Equal(picked, want) {
		t.Errorf("picked up echo replies %v, want %v", picked, want)
	}
	if got, _ := d.PickUps(); d.Stats().FramesIn != uint64(n+1+others) || got != uint64(n+1+others) {
		t.Errorf("frames in %d, pick-ups %d, want %d of each (%d echo replies, %d other frames)", d.Stats().FramesIn, got, n+1+others, n+1, others)
	}
}
