package fabric

import (
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
