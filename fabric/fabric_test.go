package fabric

import (
	"math/rand/v2"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// line builds n switches in a row, each with h hosts on ports 0..h-1 and
// neighbours on ports h (left) and h+1 (right).
func line(t testing.TB, n, h int) *topo.Topology {
	tp := &topo.Topology{Name: "line", Kind: topo.KindGeneric}
	for s := 0; s < n; s++ {
		tp.Switches = append(tp.Switches, topo.Switch{Ports: h + 2})
		for i := 0; i < h; i++ {
			tp.Hosts = append(tp.Hosts, topo.Host{At: topo.PortRef{Switch: s, Port: i}})
		}
		if s > 0 {
			tp.Links = append(tp.Links, topo.Link{A: topo.PortRef{Switch: s - 1, Port: h + 1}, B: topo.PortRef{Switch: s, Port: h}})
		}
	}
	if err := tp.Finish(); err != nil {
		t.Fatal(err)
	}
	return tp
}

// testEP is a minimal endpoint: per-host FIFO injection queues and a
// delivery log.
type testEP struct {
	f       *Fabric
	q       [][]*Packet
	got     []*Packet
	at      []des.Time
	lastSeq map[[2]int32]uint64
	ooo     int
}

func (e *testEP) Peek(h int) *Packet {
	if len(e.q[h]) == 0 {
		return nil
	}
	return e.q[h][0]
}
func (e *testEP) Pop(h int, at des.Time) { e.q[h] = e.q[h][1:] }
func (e *testEP) Deliver(h int, p *Packet, at des.Time) {
	if int(p.Dst) != h {
		panic("delivered to the wrong host")
	}
	k := [2]int32{p.Src, p.Dst}
	if p.Seq != e.lastSeq[k] {
		e.ooo++
	}
	e.lastSeq[k] = p.Seq + 1
	e.got = append(e.got, p)
	e.at = append(e.at, at)
}

func (e *testEP) send(src, dst, size int, seq uint64) *Packet {
	p := e.f.NewPacket()
	p.Src, p.Dst, p.Size, p.Seq = int32(src), int32(dst), int32(size), seq
	p.Gen = e.f.eng.Now()
	e.q[src] = append(e.q[src], p)
	e.f.Kick(src)
	return p
}

func build(t testing.TB, tp *topo.Topology, cfg Config, rc route.Config) (*des.Engine, *Fabric, *testEP) {
	eng := des.New()
	r, err := route.New(tp, rc)
	if err != nil {
		t.Fatal(err)
	}
	ep := &testEP{q: make([][]*Packet, tp.NumHosts()), lastSeq: map[[2]int32]uint64{}}
	f, err := New(eng, cfg, tp, r, 282, ep)
	if err != nil {
		t.Fatal(err)
	}
	ep.f = f
	return eng, f, ep
}

// TestZeroLoadLatency: one packet through an idle fabric takes, under
// virtual cut-through, the routing delay at each switch, the propagation
// delay on each cable, and its serialization time once.
func TestZeroLoadLatency(t *testing.T) {
	for _, tc := range []struct {
		name   string
		outBuf bool
	}{{"CIOQ", true}, {"IQ", false}} {
		for hops := 1; hops <= 4; hops++ {
			tp := line(t, hops, 2)
			cfg := DefaultConfig()
			if !tc.outBuf {
				cfg.Switch, cfg.OutputBuffer = "iq", 0
			}
			eng, f, ep := build(t, tp, cfg, route.DefaultConfig())
			ep.send(0, 2*hops-1, 282, 0) // first host of the first switch to last of the last
			eng.RunUntil(10 * des.Microsecond)
			if len(ep.got) != 1 {
				t.Fatalf("%s, %d switches: delivered %d packets", tc.name, hops, len(ep.got))
			}
			want := des.Time(hops)*cfg.RoutingDelay + des.Time(hops+1)*cfg.PropagationDelay() + cfg.SerializationTime(282)
			if got := ep.at[0] - ep.got[0].Gen; got != want {
				t.Errorf("%s, %d switches: latency %v, want %v (analytic)", tc.name, hops, got, want)
			}
			if iv := f.CheckInvariants(); !iv.OK() {
				t.Errorf("%s: invariants: %v", tc.name, iv.Violations)
			}
		}
	}
}

func TestSerializationTime(t *testing.T) {
	cfg := DefaultConfig()
	// 256 bytes at 2.5 Gb/s with 8b/10b: 256*8/2e9 s = 1024 ns.
	if got := cfg.SerializationTime(256); got != 1024*des.Nanosecond {
		t.Fatalf("serialization of 256 bytes: %v, want 1024ns", got)
	}
	if got := cfg.PropagationDelay(); got != 100*des.Nanosecond {
		t.Fatalf("propagation over 20 m at 5 ns/m: %v, want 100ns", got)
	}
}

// TestSaturationInvariants drives a line of switches with random traffic
// well past saturation in both modes and buffer schemes, then drains it:
// every packet is delivered exactly once, credits are conserved at every
// instant checked, and deterministic routing delivers in order.
func TestSaturationInvariants(t *testing.T) {
	for _, mode := range []route.Mode{route.Deterministic, route.Adaptive} {
		for _, outBuf := range []bool{true, false} {
			tp := line(t, 4, 3)
			cfg := DefaultConfig()
			if !outBuf {
				cfg.Switch, cfg.OutputBuffer = "iq", 0
			}
			rc := route.DefaultConfig()
			rc.Mode = mode
			eng, f, ep := build(t, tp, cfg, rc)
			rng := rand.New(rand.NewPCG(1, 2))
			seq := map[[2]int]uint64{}
			sent := 0
			for step := 0; step < 200; step++ {
				for i := 0; i < 12; i++ {
					src := rng.IntN(12)
					dst := rng.IntN(11)
					if dst >= src {
						dst++
					}
					k := [2]int{src, dst}
					ep.send(src, dst, 64+rng.IntN(219), seq[k])
					seq[k]++
					sent++
				}
				eng.RunUntil(eng.Now() + 500*des.Nanosecond)
				if iv := f.CheckInvariants(); !iv.OK() {
					t.Fatalf("%s outBuf=%v step %d: %v", mode, outBuf, step, iv.Violations)
				}
			}
			eng.RunUntil(eng.Now() + 10*des.Millisecond)
			if f.Deadlock != nil {
				t.Fatalf("%s: %v", mode, f.Deadlock)
			}
			if len(ep.got) != sent {
				t.Fatalf("%s outBuf=%v: delivered %d of %d", mode, outBuf, len(ep.got), sent)
			}
			if iv := f.CheckInvariants(); !iv.OK() {
				t.Fatalf("after drain: %v", iv.Violations)
			}
			if f.InFabric() != 0 || f.Occupancy() != 0 {
				t.Fatalf("after drain: %d in fabric, %d stored", f.InFabric(), f.Occupancy())
			}
			if mode == route.Deterministic && ep.ooo != 0 {
				t.Fatalf("deterministic routing delivered %d packets out of order", ep.ooo)
			}
		}
	}
}

// TestBufferTooSmall: a lane that cannot hold one packet is refused.
func TestBufferTooSmall(t *testing.T) {
	tp := line(t, 2, 1)
	cfg := DefaultConfig()
	cfg.InputBuffer = 256
	r, _ := route.New(tp, route.DefaultConfig())
	if _, err := New(des.New(), cfg, tp, r, 282, &testEP{}); err == nil {
		t.Fatal("a 256-byte buffer for 282-byte packets was accepted")
	}
}
