package tap

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/fabemu/fabemu/tracefmt/ether"
)

// udpFrame builds an Ethernet/IPv4/UDP frame to dst carrying "seq:"+seq
// padded to payload bytes (UDP checksum 0: none, allowed over IPv4).
func udpFrame(dstMAC ether.MAC, src, dst netip.Addr, port uint16, seq uint32, payload int) []byte {
	udp := make([]byte, 0, 8+payload)
	udp = binary.BigEndian.AppendUint16(udp, 40000)
	udp = binary.BigEndian.AppendUint16(udp, port)
	udp = binary.BigEndian.AppendUint16(udp, uint16(8+payload))
	udp = append(udp, 0, 0)
	body := binary.BigEndian.AppendUint32([]byte("seq:"), seq)
	body = append(body, make([]byte, payload-len(body))...)
	return ipv4Frame(dstMAC, ether.MAC{2, 0, 0, 0, 0, 9}, src, dst, 17, append(udp, body...))
}

// TestInlineWritesKeepOrder: with InlineWriteMax (and no quiet gap
// required), small frames sent while the writer is idle are written by
// Send itself and large ones go through
// the writer's queue; sent back to back, mixed, every datagram arrives in
// Send order and both paths were used.
func TestInlineWritesKeepOrder(t *testing.T) {
	privtest.Require(t, "TAP devices")
	const n = 3000
	s := byte(time.Now().UnixNano() >> 8)
	ip := netip.AddrFrom4([4]byte{10, 250, s, 1})
	peer := netip.AddrFrom4([4]byte{10, 250, s, 2})
	d := create(t, Config{Name: "fti" + uniq(), Netns: "fe-tap-i-" + uniq(), InlineWriteMax: 200,
		Addrs: []netip.Prefix{netip.PrefixFrom(ip, 24)}})
	d.inlineQuiet = 0 // every small frame may go inline: the order under test
	if err := d.Start(make(chan *Frame, 64)); err != nil {
		t.Fatal(err)
	}
	c := listenUDP(t, d.Netns(), netip.AddrPortFrom(ip, 0))
	forceReadBuffer(t, c, 16<<20) // the whole burst fits: none lost while the reader waits
	port := uint16(c.LocalAddr().(*net.UDPAddr).Port)
	got := make(chan []uint32, 1)
	go func() {
		var seqs []uint32
		buf := make([]byte, 2048)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for len(seqs) < n {
			m, err := c.Read(buf)
			if err != nil {
				break
			}
			if m >= 8 && string(buf[:4]) == "seq:" {
				seqs = append(seqs, binary.BigEndian.Uint32(buf[4:]))
			}
		}
		got <- seqs
	}()
	retried := uint64(0) // refusals for a full queue, each offered again
	for i := range uint32(n) {
		payload := 32 // inline when the writer is idle
		if i%3 == 0 {
			payload = 1200 // through the writer's queue
		}
		// A full writer queue (a busy machine's writer falls behind) is
		// a refusal of this frame, not a reordering: offer it again,
		// which keeps the order under test.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := d.Write(udpFrame(d.MAC(), peer, ip, port, i, payload))
			if err == nil {
				break
			}
			if !errors.Is(err, ErrQueueFull) || time.Now().After(deadline) {
				t.Fatalf("frame %d: %v", i, err)
			}
			retried++
			time.Sleep(100 * time.Microsecond)
		}
		if i%100 == 0 {
			time.Sleep(time.Millisecond) // let the socket reader keep up
		}
	}
	seqs := <-got
	if len(seqs) != n {
		t.Fatalf("received %d of %d datagrams; stats %+v", len(seqs), n, d.Stats())
	}
	for i, q := range seqs {
		if q != uint32(i) {
			t.Fatalf("datagram %d carries seq %d: reordered", i, q)
		}
	}
	// The writer counts a frame after its write returns, which may be
	// after the datagram was read.
	within(2*time.Second, func() bool { return d.Stats().FramesOut == n })
	st := d.Stats()
	inl := d.InlineWrites()
	if inl == 0 || inl >= n-n/3 {
		t.Errorf("%d of %d small frames written inline: want some, not all (the writer was busy with large ones at times)", inl, n-n/3)
	}
	// Every refusal is one the test saw and offered again.
	want := [NumCauses]uint64{}
	want[CauseQueueFull] = retried
	if st.FramesOut != n || st.OutRefused != want {
		t.Errorf("stats %+v, want %d frames out and only the %d full-queue refusals offered again", st, n, retried)
	}
	t.Logf("%d frames, %d written inline, all in order; %d offered again after a full queue", n, inl, retried)
}

// TestInlineWriteNeedsQuiet: a stream of small frames goes through the
// writer; only one after a quiet millisecond is written inline.
func TestInlineWriteNeedsQuiet(t *testing.T) {
	privtest.Require(t, "TAP devices")
	d := create(t, Config{Name: "ftq" + uniq(), Netns: "fe-tap-q-" + uniq(), InlineWriteMax: 200})
	// A quiet time far above any descheduling of this goroutine between
	// two writes: with the daemon's 1 ms, a loaded machine (two busy
	// loops on two cores, .ci/under-load) stretched 7 of the 49 gaps past
	// it. The rule under test is the same at any quiet time.
	quiet := 300 * time.Millisecond
	d.inlineQuiet = int64(quiet)
	if err := d.Start(make(chan *Frame, 64)); err != nil {
		t.Fatal(err)
	}
	ip := netip.AddrFrom4([4]byte{10, 250, 1, 1})
	for i := range uint32(50) {
		if err := d.Write(udpFrame(d.MAC(), ip, ip, 9, i, 32)); err != nil {
			t.Fatal(err)
		}
	}
	// The first frame found the device quiet; the next 49 followed within
	// microseconds, far less than the quiet time (the margin allows a
	// very loaded machine a descheduling or two past it).
	if n := d.InlineWrites(); n < 1 || n > 3 {
		t.Errorf("%d of 50 back-to-back small frames written inline, want the first (and at most a few)", n)
	}
	// A frame goes inline only when the writer has nothing pending: on a
	// loaded machine it may still be writing the 50 after the quiet time,
	// so wait for it to drain first.
	if !within(5*time.Second, func() bool { return d.Stats().FramesOut == 50 }) {
		t.Fatalf("the writer did not drain: stats %+v", d.Stats())
	}
	time.Sleep(2 * quiet)
	before := d.InlineWrites()
	if err := d.Write(udpFrame(d.MAC(), ip, ip, 9, 50, 32)); err != nil {
		t.Fatal(err)
	}
	if !within(time.Second, func() bool { return d.Stats().FramesOut == 51 }) {
		t.Fatalf("stats %+v", d.Stats())
	}
	if d.InlineWrites() != before+1 {
		t.Errorf("a small frame after %v quiet was not written inline", 2*quiet)
	}
}
