package tap

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkForward measures the TAP path of the daemon: UDP datagrams sent in
// namespace A leave through TAP A, are read by A's reader, handed over a
// channel to a one-goroutine forwarder, written by B's writer into TAP B and
// received by a socket in namespace B. The sender keeps at most window
// datagrams in flight, so the kernel never drops and the figure is the
// sustained rate of the whole read→write path (both kernel stacks included).
//
//	go test -run '^$' -bench Forward -benchtime 20000x ./emu/tap
func BenchmarkForward(b *testing.B) {
	for _, bc := range []struct {
		name    string
		payload int
	}{{"64B", 64}, {"1400B", 1400}} {
		b.Run(bc.name, func(b *testing.B) { benchForward(b, bc.payload) })
	}
}

func benchForward(b *testing.B, payload int) {
	// 32 datagrams of up to ~2.3 KB truesize fit the default socket receive
	// buffer (rmem_default, 208 KB), so the receiver does not drop either.
	const window = 32
	p := newPair(b, 256)
	addNeigh(b, p.a, p.ipB, p.macB)
	addNeigh(b, p.b, p.ipA, p.macA)
	p.forward(b)
	srv := listenUDP(b, p.b.Netns(), netip.AddrPortFrom(p.ipB, 7777))
	cli := listenUDP(b, p.a.Netns(), netip.AddrPortFrom(p.ipA, 0))
	dst := netip.AddrPortFrom(p.ipB, 7777)

	var received atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := srv.Read(buf); err != nil {
				return // socket closed by cleanup
			}
			received.Add(1)
		}
	}()
	msg := make([]byte, payload)
	lost := 0
	b.SetBytes(int64(payload))
	b.ResetTimer()
	start := time.Now()
	sent := 0
	for sent < b.N {
		if int64(sent)-received.Load()-int64(lost) >= window {
			// Wait for the window to open; give up on datagrams after 200 ms.
			t0 := time.Now()
			for int64(sent)-received.Load()-int64(lost) >= window {
				if time.Since(t0) > 200*time.Millisecond {
					lost = sent - int(received.Load())
					break
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
		if _, err := cli.WriteToUDPAddrPort(msg, dst); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	for deadline := time.Now().Add(time.Second); received.Load()+int64(lost) < int64(sent) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Microsecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	got := received.Load()
	b.ReportMetric(float64(got)/elapsed.Seconds(), "frames/s")
	b.ReportMetric(float64(int64(sent)-got), "lost")
}
