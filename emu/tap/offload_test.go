package tap

import (
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/vnet"
	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"go.uber.org/zap"
)

// TestOffloadTCP sends 16 MiB of pseudo-random data over TCP between two
// TAPs in two namespaces joined by the trivial bridge, and checks that it
// arrives intact (SHA-256). With offloads on the sending side the kernel
// hands up super-frames, which cross as one frame each: to a device with
// offloads they are written back as super-frames, to one without they are
// segmented and checksummed in software.
func TestOffloadTCP(t *testing.T) {
	for _, tc := range []struct {
		name       string
		offA, offB bool
		wantSuper  bool
	}{
		{"offload-both", true, true, true},
		{"offload-to-plain", true, false, true},
		{"plain-to-offload", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPairOffload(t, 256, tc.offA, tc.offB)
			p.forward(t)
			const size = 16 << 20
			var ln net.Listener
			err := netnsutil.Do(p.b.Netns(), func() (err error) {
				ln, err = net.Listen("tcp4", netip.AddrPortFrom(p.ipB, 0).String())
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			type result struct {
				n   int64
				sum [32]byte
				err error
			}
			got := make(chan result, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					got <- result{err: err}
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				h := sha256.New()
				n, err := io.Copy(h, c)
				var r result
				r.n, r.err = n, err
				copy(r.sum[:], h.Sum(nil))
				got <- r
			}()
			var c net.Conn
			err = netnsutil.Do(p.a.Netns(), func() (err error) {
				c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
				return err
			})
			if err != nil {
				t.Fatalf("dial: %v; A %+v B %+v", err, p.a.Stats(), p.b.Stats())
			}
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			rng := rand.New(rand.NewPCG(1, 2))
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			if _, err := c.Write(data); err != nil {
				t.Fatalf("write: %v", err)
			}
			c.Close()
			r := <-got
			if r.err != nil || r.n != size {
				t.Fatalf("received %d bytes, %v; want %d", r.n, r.err, size)
			}
			if r.sum != sha256.Sum256(data) {
				t.Fatal("data arrived corrupted (SHA-256 differs)")
			}
			p.stop()
			t.Logf("forwarded %v frames, %d super-frames from A; A %+v; B %+v", p.forwarded, p.superA, p.a.Stats(), p.b.Stats())
			if tc.wantSuper && p.superA == 0 {
				t.Error("no super-frame crossed: offloads not in effect")
			}
			if !tc.wantSuper && p.superA != 0 {
				t.Errorf("%d super-frames from a device without offloads", p.superA)
			}
			if st := p.b.Stats(); st.OutRefused[CauseWriteError] != 0 || st.OutRefused[CauseTooLong] != 0 {
				t.Errorf("B refused frames: %+v", st)
			}
		})
	}
}

// TestCheckSize: a super-frame may carry a whole IP packet (65535 bytes)
// whatever the MTU; any other frame is held to the MTU.
func TestCheckSize(t *testing.T) {
	d := &Device{log: zap.NewNop()}
	d.mtu.Store(1500)
	d.mtuNext.Store(math.MaxInt64) // never ask the kernel: there is no device
	gso := vnet.Header{GSOType: vnet.GSOTCPv4, GSOSize: 1448}
	for _, tc := range []struct {
		n    int
		off  vnet.Header
		long bool
	}{
		{14 + 1500, vnet.Header{}, false},
		{14 + 1501, vnet.Header{}, true},
		{14 + 65535, gso, false},
		{14 + 65536, gso, true},
	} {
		_, err := d.checkSize(make([]byte, tc.n), tc.off)
		if got := errors.Is(err, ether.ErrTooLong); got != tc.long || (err != nil && !got) {
			t.Errorf("%d bytes, offload %+v: %v", tc.n, tc.off, err)
		}
	}
	if b := vnet.HeaderLen + ether.MaxFrameLen(maxSuperPayload) + 1; b <= 14+65535+vnet.HeaderLen {
		t.Errorf("buffer of %d bytes cannot hold the largest super-frame", b)
	}
}
