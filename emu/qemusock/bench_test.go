package qemusock

import (
	"encoding/binary"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
)

// BenchmarkForward measures the QEMU socket path of the daemon beside
// emu/tap's BenchmarkForward: a fake QEMU writes length-prefixed frames
// into port A's socketpair, A's reader hands each to a handler that copies
// it into a frame of port B and sends it, B's writer writes it to B's fake
// QEMU, which reads it. The sender keeps at most window frames in flight,
// so the figure is the sustained rate of the read→write path with both
// socket ends (no guest, no kernel network stack: QEMU's side is the
// fake's read and write system calls).
//
//	go test -run '^$' -bench Forward -benchtime 20000x ./emu/qemusock
func BenchmarkForward(b *testing.B) {
	for _, bc := range []struct {
		name    string
		payload int
	}{{"64B", 64}, {"1400B", 1400}} {
		b.Run(bc.name, func(b *testing.B) { benchForward(b, bc.payload) })
	}
}

func benchForward(b *testing.B, payload int) {
	const window = 32
	var pb *Port
	lb := newPairListener()
	pb, err := newPort(Config{Name: "b", Addr: "/b.sock"}, lb)
	if err != nil {
		b.Fatal(err)
	}
	la := newPairListener()
	pa, err := newPort(Config{Name: "a", Addr: "/a.sock"}, la)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pa.Close(); pb.Close() })
	if err := pb.StartFunc(func(f *frameport.Frame) bool { f.Release(); return true }); err != nil {
		b.Fatal(err)
	}
	if err := pa.StartFunc(func(f *frameport.Frame) bool {
		nf := pb.NewFrame()
		nf.Data = append(nf.Data, f.Data...)
		f.Release()
		_ = pb.Send(nf)
		return true
	}); err != nil {
		b.Fatal(err)
	}
	qa, qb := la.dial(b), lb.dial(b)
	for !pa.Connected() || !pb.Connected() {
		time.Sleep(time.Millisecond)
	}
	var received atomic.Int64
	go func() {
		var pre [4]byte
		buf := make([]byte, 1<<16)
		for {
			if _, err := io.ReadFull(qb, pre[:]); err != nil {
				return
			}
			if _, err := io.ReadFull(qb, buf[:binary.BigEndian.Uint32(pre[:])]); err != nil {
				return
			}
			received.Add(1)
		}
	}()
	msg := wire(frame(macB, macA, 0, payload))
	b.SetBytes(int64(payload))
	b.ResetTimer()
	start := time.Now()
	for sent := 0; sent < b.N; sent++ {
		for int64(sent)-received.Load() >= window {
			time.Sleep(20 * time.Microsecond)
		}
		if _, err := qa.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(hangLimit); received.Load() < int64(b.N) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Microsecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	got := received.Load()
	b.ReportMetric(float64(got)/elapsed.Seconds(), "frames/s")
	b.ReportMetric(float64(int64(b.N)-got), "lost")
	if st := pb.Stats(); st.OutRefused != [frameport.NumCauses]uint64{} {
		b.Errorf("refused %v", st.OutRefused)
	}
}
