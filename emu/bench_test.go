package emu

import (
	"math/rand/v2"
	"testing"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/frameport/porttest"
)

// BenchmarkFramePath is one 1000-byte frame from one in-memory port to the
// other through the paced model (tap-square-10g, idle otherwise), one at a
// time: a ping's path without the kernel. With -benchmem its allocations
// per frame are the daemon's and the in-memory ports' (Inject copies the
// frame in, Recv copies it out: two of them).
func BenchmarkFramePath(b *testing.B) {
	r := newRigB(b, "tap-square-10g", ports(2))
	rng := rand.New(rand.NewPCG(51, 52))
	frame := mkFrame(mac(1), mac(0), etherTest, 1, 1000, rng)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := r.peers[0].Inject(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := r.peers[1].Recv(10e9); err != nil {
			b.Fatal(err)
		}
	}
}

// newRigB is newRig for a benchmark.
func newRigB(b *testing.B, preset string, pcs []porttest.Config) *rig {
	b.Helper()
	c := DefaultRunConfig()
	c.Model.Preset = preset
	c.API.Socket = ""
	c.Metrics.Enabled = false
	r := &rig{}
	var names []string
	for i := range pcs {
		pcs[i].Name = string(rune('a' + i))
		h := 2 * i
		c.TAPs = append(c.TAPs, TAPConfig{Name: pcs[i].Name, Host: &h})
		names = append(names, pcs[i].Name)
	}
	for _, pc := range pcs {
		pc.TxQueueLen = c.TxQueue
		p, q := porttest.New(pc)
		r.ports, r.peers = append(r.ports, p), append(r.peers, q)
	}
	r.names = names
	var fps []frameport.Port
	for _, p := range r.ports {
		fps = append(fps, p)
	}
	e, err := NewWithPorts(c, fps, nil)
	if err != nil {
		b.Fatal(err)
	}
	r.e = e
	b.Cleanup(func() { _ = e.Close() })
	if err := e.Start(); err != nil {
		b.Fatal(err)
	}
	return r
}
