package emu

// Tests of the daemon's frame path on in-memory frame ports
// (emu/frameport/porttest): no privileges needed, run under -race.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/frameport/porttest"
	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"go.uber.org/zap/zaptest"
)

const (
	etherARP  = 0x0806
	etherTest = 0x88b5 // IEEE local experimental EtherType
)

// mac returns the locally administered unicast address of port i.
func mac(i int) ether.MAC { return ether.MAC{0x02, 0xfa, 0xbe, 0x99, 0, byte(i + 1)} }

// mkFrame returns a frame dst<-src of type typ whose payload of n bytes
// (n >= 4) starts with seq and is filled from rng.
func mkFrame(dst, src ether.MAC, typ uint16, seq uint32, n int, rng *rand.Rand) []byte {
	b := make([]byte, ether.HeaderLen+n)
	copy(b, dst[:])
	copy(b[6:], src[:])
	binary.BigEndian.PutUint16(b[12:], typ)
	for i := ether.HeaderLen + 4; i < len(b); i++ {
		b[i] = byte(rng.Uint32())
	}
	binary.BigEndian.PutUint32(b[ether.HeaderLen:], seq)
	return b
}

func seqOf(b []byte) uint32 { return binary.BigEndian.Uint32(b[ether.HeaderLen:]) }

// rig is an emulator on in-memory ports.
type rig struct {
	e     *Emulator
	ports []*porttest.Port
	peers []*porttest.Peer
	names []string
}

// newRig attaches one in-memory port per entry of pcs to hosts 0, 2, 4, ...
// of preset; edit adjusts the configuration first.
func newRig(t *testing.T, preset string, pcs []porttest.Config, edit func(*RunConfig)) *rig {
	t.Helper()
	c := DefaultRunConfig()
	c.Model.Preset = preset
	c.API.Socket = ""
	c.Metrics.Enabled = false
	r := &rig{}
	for i := range pcs {
		if pcs[i].Name == "" {
			pcs[i].Name = fmt.Sprintf("mem%d", i)
		}
		h := 2 * i
		c.TAPs = append(c.TAPs, TAPConfig{Name: pcs[i].Name, Host: &h})
	}
	if edit != nil {
		edit(&c)
	}
	var fps []frameport.Port
	for _, pc := range pcs {
		if pc.TxQueueLen == 0 {
			pc.TxQueueLen = c.TxQueue // as New gives the TAP devices
		}
		p, q := porttest.New(pc)
		r.ports, r.peers, r.names = append(r.ports, p), append(r.peers, q), append(r.names, pc.Name)
		fps = append(fps, p)
	}
	e, err := NewWithPorts(c, fps, zaptest.NewLogger(t).Named("emu"))
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// ports returns n in-memory port configs with their own MACs.
func ports(n int) []porttest.Config {
	var pcs []porttest.Config
	for i := range n {
		pcs = append(pcs, porttest.Config{MAC: mac(i)})
	}
	return pcs
}

func (r *rig) inject(t *testing.T, i int, b []byte) {
	t.Helper()
	if err := r.peers[i].Inject(b); err != nil {
		t.Fatal(err)
	}
}

// recv takes the next frame written to port i.
func (r *rig) recv(t *testing.T, i int) []byte {
	t.Helper()
	b, err := r.peers[i].Recv(10 * time.Second)
	if err != nil {
		var hosts []HostStatus
		if st, err := r.e.Status(); err == nil {
			hosts = st.Hosts
		}
		var peers []porttest.PeerStats
		for _, q := range r.peers {
			peers = append(peers, q.Stats())
		}
		t.Fatalf("%s: no frame: %v; hosts %+v; peers %+v", r.names[i], err, hosts, peers)
	}
	return b
}

// quiet checks that nothing more is written to port i.
func (r *rig) quiet(t *testing.T, i int) {
	t.Helper()
	if b, err := r.peers[i].Recv(30 * time.Millisecond); err == nil {
		t.Fatalf("%s: unexpected frame of %d bytes to %x", r.names[i], len(b), b[:6])
	}
}

func (r *rig) status(t *testing.T) *Status {
	t.Helper()
	st, err := r.e.Status()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// await polls the status until cond holds.
func (r *rig) await(t *testing.T, what string, cond func(*Status) bool) *Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := r.status(t)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %+v", what, st.Hosts)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *rig) drain(t *testing.T) {
	t.Helper()
	if !r.e.Drain(10 * time.Second) {
		t.Fatalf("fabric did not drain: %d bytes outstanding", r.e.Outstanding())
	}
}

func conn(st *Status, src, dst string) ConnStatus {
	for _, c := range st.Connections {
		if c.Src == src && c.Dst == dst {
			return c
		}
	}
	return ConnStatus{}
}

// An ARP request (broadcast) and an IPv6 neighbour solicitation
// (multicast) reach every other port once, byte-identical, and not the
// sender.
func TestFramePathBroadcastReplicated(t *testing.T) {
	r := newRig(t, "tap-square-10g", ports(4), nil)
	rng := rand.New(rand.NewPCG(1, 2))
	arp := mkFrame(ether.BroadcastMAC, mac(0), etherARP, 1, 28, rng)
	nd := mkFrame(ether.MAC{0x33, 0x33, 0xff, 0, 0, 2}, mac(1), 0x86dd, 2, 72, rng)
	r.inject(t, 0, arp)
	r.inject(t, 1, nd)
	for i := range 4 {
		var want [][]byte
		if i != 0 {
			want = append(want, arp)
		}
		if i != 1 {
			want = append(want, nd)
		}
		var got [][]byte
		for range want {
			got = append(got, r.recv(t, i))
		}
		// The two broadcasts come from different ports: any order.
		if len(got) == 2 && seqOf(got[0]) == 2 {
			got[0], got[1] = got[1], got[0]
		}
		for k := range want {
			if !bytes.Equal(got[k], want[k]) {
				t.Errorf("%s: copy %d differs from the frame sent", r.names[i], k)
			}
		}
		r.quiet(t, i)
	}
	st := r.status(t)
	for i, h := range st.Hosts {
		sent := boolInt(i < 2)
		if h.ToFabric != 3*sent || h.FramesIn != sent || h.FramesOut != 1+boolInt(i > 1) || h.UnknownUnicast != 0 {
			t.Errorf("%s: to_fabric %d frames_in %d frames_out %d unknown %d", h.TAP, h.ToFabric, h.FramesIn, h.FramesOut, h.UnknownUnicast)
		}
	}
	for i := 1; i < 4; i++ {
		if c := conn(st, r.names[0], r.names[i]); c.Frames != 1 || c.Bytes != uint64(len(arp)) {
			t.Errorf("%s>%s: %d frames %d bytes", r.names[0], r.names[i], c.Frames, c.Bytes)
		}
	}
}

func boolInt(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Unicast goes only to the port owning the destination MAC, known from
// the port's own address or learnt from the source of a frame; unknown
// unicast and frames to the sender's own address are counted and dropped.
func TestFramePathUnicastLearnt(t *testing.T) {
	// Ports 0 and 1 have addresses of their own; 2 and 3 have none, as a
	// VM's address behind a TAP is not the TAP's.
	pcs := []porttest.Config{{MAC: mac(0)}, {MAC: mac(1)}, {}, {}}
	r := newRig(t, "tap-square-10g", pcs, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	vm2, vm3 := mac(12), mac(13)

	// Known from the start: 0 -> 1.
	f01 := mkFrame(mac(1), mac(0), etherTest, 1, 100, rng)
	r.inject(t, 0, f01)
	if got := r.recv(t, 1); !bytes.Equal(got, f01) {
		t.Fatal("0>1 differs")
	}
	// vm3 has not spoken: unknown unicast, dropped and counted.
	r.inject(t, 0, mkFrame(vm3, mac(0), etherTest, 2, 100, rng))
	// Sent to its own address: dropped and counted.
	r.inject(t, 1, mkFrame(mac(1), mac(1), etherTest, 3, 100, rng))
	r.await(t, "the unknown unicast", func(st *Status) bool { return st.Hosts[0].UnknownUnicast == 1 })
	// vm3 speaks (to vm2, still unknown): its address is learnt.
	r.inject(t, 3, mkFrame(vm2, vm3, etherTest, 4, 100, rng))
	st := r.await(t, "the frames to be counted", func(st *Status) bool {
		return st.Hosts[1].ToSelf == 1 && st.Hosts[3].UnknownUnicast == 1
	})
	for i := range 4 {
		r.quiet(t, i)
	}
	want := [4]struct{ unknown, self uint64 }{{1, 0}, {0, 1}, {0, 0}, {1, 0}}
	for i, h := range st.Hosts {
		if h.UnknownUnicast != want[i].unknown || h.ToSelf != want[i].self {
			t.Errorf("%s: unknown_unicast %d to_self %d, want %d and %d", h.TAP, h.UnknownUnicast, h.ToSelf, want[i].unknown, want[i].self)
		}
	}

	// Learning, then unicast to the learnt address only.
	r = newRig(t, "tap-square-10g", pcs, nil)
	hello := mkFrame(ether.BroadcastMAC, vm3, etherARP, 5, 28, rng)
	r.inject(t, 3, hello)
	for i := range 3 {
		if got := r.recv(t, i); !bytes.Equal(got, hello) {
			t.Fatalf("%s: broadcast differs", r.names[i])
		}
	}
	uni := mkFrame(vm3, mac(0), etherTest, 6, 500, rng)
	r.inject(t, 0, uni)
	if got := r.recv(t, 3); !bytes.Equal(got, uni) {
		t.Fatal("unicast to the learnt address differs")
	}
	reply := mkFrame(mac(0), vm3, etherTest, 7, 500, rng)
	r.inject(t, 3, reply)
	if got := r.recv(t, 0); !bytes.Equal(got, reply) {
		t.Fatal("reply differs")
	}
	for i := range 4 {
		r.quiet(t, i)
	}
	st = r.status(t)
	for _, h := range st.Hosts {
		if h.UnknownUnicast != 0 || h.ToSelf != 0 {
			t.Errorf("%s: unknown_unicast %d to_self %d", h.TAP, h.UnknownUnicast, h.ToSelf)
		}
	}
}

// Frames longer than the fabric MTU are segmented by the NIC into
// ceil(len/MTU) packets and reassembled byte-identical.
func TestFramePathSegmentation(t *testing.T) {
	const fabricMTU = 256
	pcs := []porttest.Config{{MAC: mac(0), MTU: 9000}, {MAC: mac(1), MTU: 9000}}
	r := newRig(t, "tap-square-10g", pcs, func(c *RunConfig) {
		c.Model.Set = append(c.Model.Set, fmt.Sprintf("nic.mtu=%d", fabricMTU))
	})
	rng := rand.New(rand.NewPCG(5, 6))
	sizes := []int{46, 242, 255 - ether.HeaderLen, 256 - ether.HeaderLen, 257 - ether.HeaderLen, 1500, 4096, 8999, 9000}
	var sent [][]byte
	var packets, payload int64
	for i, n := range sizes {
		b := mkFrame(mac(1), mac(0), etherTest, uint32(i), n, rng)
		sent = append(sent, b)
		packets += int64((len(b) + fabricMTU - 1) / fabricMTU)
		payload += int64(len(b))
		r.inject(t, 0, b)
	}
	for i, want := range sent {
		if got := r.recv(t, 1); !bytes.Equal(got, want) {
			t.Fatalf("frame %d (%d bytes): received %d bytes, not identical", i, len(want), len(got))
		}
	}
	st := r.status(t)
	if st.Fabric.DeliveredPackets != uint64(packets) || st.Fabric.DeliveredBytes != payload {
		t.Errorf("fabric delivered %d packets, %d payload bytes; want %d and %d (MTU %d)",
			st.Fabric.DeliveredPackets, st.Fabric.DeliveredBytes, packets, payload, fabricMTU)
	}
	// A frame over the port MTU is refused at the reader and counted.
	r.inject(t, 0, mkFrame(mac(1), mac(0), etherTest, 99, 9001, rng))
	r.quiet(t, 1)
	if st := r.status(t); st.Hosts[0].InRefused["too_long"] != 1 {
		t.Errorf("in_refused %v, want one too_long", st.Hosts[0].InRefused)
	}
}

// reordered counts the RFC 4737 §3 reordered packets of a sequence in
// arrival order (a packet is reordered if its number is below the next
// expected, the highest seen plus one).
func reordered(seqs []uint32) uint64 {
	var n uint64
	next := uint32(0)
	for _, s := range seqs {
		if s < next {
			n++
		} else {
			next = s + 1
		}
	}
	return n
}

// The ground-truth counters of every stream (frames numbered at ingress,
// order measured at egress) agree with what the ports wrote: frame and
// byte counts, and the reordering an independent RFC 4737 count finds in
// the written order. Deterministic routing reorders nothing.
func TestFramePathOrderCounters(t *testing.T) {
	for _, tc := range []struct {
		delivery string
		load     float64 // background load on the other hosts; 0 = none
	}{{"deterministic", 0}, {"adaptive-ooo", 0.3}, {"adaptive-inorder", 0.1}} {
		t.Run(tc.delivery, func(t *testing.T) {
			r := newRig(t, "tap-square-10g", ports(2), func(c *RunConfig) {
				// Hosts 0 and 6 are at opposite corners of the 2x2 mesh:
				// two minimal paths.
				h := 6
				c.TAPs[1].Host = &h
				c.Model.Delivery = tc.delivery
				c.Background.Enabled = tc.load > 0
				c.Background.Traffic.Load = tc.load
				if tc.load > 0 {
					// Headroom for the model under the race detector on a
					// busy machine: a pacer far behind the wall clock does
					// not return to check for Stop, so Close would wait
					// until it caught up.
					c.Pacing.Dilation = 20
				}
			})
			rng := rand.New(rand.NewPCG(7, 8))
			const n = 300
			var bytesSent uint64
			frames := make([][]byte, n)
			for i := range frames {
				frames[i] = mkFrame(mac(1), mac(0), etherTest, uint32(i), 46+rng.IntN(1455), rng)
				bytesSent += uint64(len(frames[i]))
			}
			go func() { // returns at the latest when the rig closes
				for _, b := range frames {
					if r.peers[0].Inject(b) != nil {
						return
					}
				}
			}()
			var seqs []uint32
			for range n {
				seqs = append(seqs, seqOf(r.recv(t, 1)))
			}
			st := r.status(t)
			c := conn(st, r.names[0], r.names[1])
			want := reordered(seqs)
			t.Logf("%s: %d frames, reordered at egress %d (meter %d, ratio %.3f), NIC arrival reordered ratio %.3f",
				tc.delivery, c.Frames, want, c.Reordered, c.ReorderedRatio, st.NIC.ReorderedRatio)
			if c.Frames != n || c.Bytes != bytesSent || c.Order.Received != n {
				t.Errorf("stream: %d frames %d bytes (order meter %d); want %d and %d", c.Frames, c.Bytes, c.Order.Received, n, bytesSent)
			}
			if c.Reordered != want {
				t.Errorf("meter counts %d reordered, the written order has %d", c.Reordered, want)
			}
			if tc.delivery != "adaptive-ooo" && want != 0 {
				t.Errorf("%s: %d frames reordered", tc.delivery, want)
			}
		})
	}
}

// When the NIC cannot admit more (admit_bytes in the fabric), the reader
// stops reading: the port's inbound queue fills and the application
// waits; every frame still arrives, in order, identical, and nothing is
// refused anywhere.
func TestFramePathBackpressure(t *testing.T) {
	pcs := []porttest.Config{{MAC: mac(0), InQueueLen: 8}, {MAC: mac(1)}}
	r := newRig(t, "tap-square-10g", pcs, func(c *RunConfig) {
		c.AdmitBytes = 65536
		c.Pacing.Dilation = 200 // a fabric 200 times slower than the wall clock
	})
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 400
	sent := make([][]byte, n)
	for i := range sent {
		sent[i] = mkFrame(mac(1), mac(0), etherTest, uint32(i), 1500, rng)
	}
	injected := make(chan error, 1)
	go func() {
		for _, b := range sent {
			if err := r.peers[0].Inject(b); err != nil {
				injected <- err
				return
			}
		}
		injected <- nil
	}()
	var maxOut int
	for i := range n {
		maxOut = max(maxOut, r.e.Outstanding())
		if got := r.recv(t, 1); !bytes.Equal(got, sent[i]) {
			t.Fatalf("frame %d: received seq %d or different bytes", i, seqOf(got))
		}
	}
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	r.drain(t)
	st := r.status(t)
	a, b := st.Hosts[0], st.Hosts[1]
	ps := r.peers[0].Stats()
	t.Logf("admit stalls %d, reader stalls %d, application waits %d, most bytes in the fabric seen %d",
		a.AdmitStalls, a.ReaderStalls, ps.InjectWaits, maxOut)
	if a.AdmitStalls == 0 || ps.InjectWaits == 0 {
		t.Errorf("no backpressure: admit stalls %d, application waits %d", a.AdmitStalls, ps.InjectWaits)
	}
	if maxOut > 65536+1514 {
		t.Errorf("%d bytes in the fabric, over admit_bytes", maxOut)
	}
	if a.FramesIn != n || b.FramesOut != n || b.Delivered != n || ps.InjectRefused != 0 {
		t.Errorf("frames in %d out %d delivered %d refused at injection %d; want %d", a.FramesIn, b.FramesOut, b.Delivered, ps.InjectRefused, n)
	}
	for _, h := range st.Hosts {
		for cause, v := range h.InRefused {
			if v != 0 {
				t.Errorf("%s: %d refused in (%s)", h.TAP, v, cause)
			}
		}
		for cause, v := range h.OutRefused {
			if v != 0 {
				t.Errorf("%s: %d refused out (%s)", h.TAP, v, cause)
			}
		}
		if h.Outstanding != 0 {
			t.Errorf("%s: %d bytes outstanding after drain", h.TAP, h.Outstanding)
		}
	}
}

// A destination whose writer cannot keep up refuses nothing (lossless
// egress): past its queue the delivered frame waits, the destination NIC
// holds its reception and the fabric backs up to the source, whose reader
// stops reading. Once the writer writes again every frame arrives, in
// order, and nothing is refused anywhere.
func TestFramePathWriterQueueFull(t *testing.T) {
	pcs := []porttest.Config{{MAC: mac(0), InQueueLen: 8}, {MAC: mac(1)}}
	r := newRig(t, "tap-square-10g", pcs, func(c *RunConfig) { c.TxQueue = 4; c.AdmitBytes = 65536 })
	r.peers[1].HoldWriter()
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 600
	injected := make(chan error, 1)
	go func() {
		for i := range n {
			if err := r.peers[0].Inject(mkFrame(mac(1), mac(0), etherTest, uint32(i), 200, rng)); err != nil {
				injected <- err
				return
			}
		}
		injected <- nil
	}()
	st := r.await(t, "the fabric backed up to the source", func(st *Status) bool {
		return st.Hosts[1].EgressHolds > 0 && st.Hosts[1].HeldPackets > 0 && st.Hosts[0].AdmitStalls > 0
	})
	if b := st.Hosts[1]; b.WriteRefused != 0 || b.EgressBacklog == 0 {
		t.Fatalf("while held: write_refused %d, backlog %d", b.WriteRefused, b.EgressBacklog)
	}
	r.checkInvariants(t)
	r.peers[1].ReleaseWriter()
	for i := range n {
		if s := seqOf(r.recv(t, 1)); s != uint32(i) {
			t.Fatalf("frame %d written where %d was due", s, i)
		}
	}
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	r.quiet(t, 1)
	r.drain(t)
	r.checkLossless(t, n)
}

// A slow writer (held and released in turns) under many frames: every
// frame arrives in order, the fabric holds and resumes many times, no
// frame is refused at egress and the conservation laws hold throughout;
// also with adaptive-inorder (the held NIC's rearrangement and ACKs wait
// with its reception), between opposite corners (two minimal paths).
func TestFramePathLosslessSlowWriter(t *testing.T) {
	for _, delivery := range []string{"deterministic", "adaptive-inorder"} {
		t.Run(delivery, func(t *testing.T) { losslessSlowWriter(t, delivery) })
	}
}

func losslessSlowWriter(t *testing.T, delivery string) {
	pcs := []porttest.Config{{MAC: mac(0), InQueueLen: 16}, {MAC: mac(1)}}
	r := newRig(t, "tap-square-10g", pcs, func(c *RunConfig) {
		c.TxQueue = 8
		h := 6
		c.TAPs[1].Host = &h
		c.Model.Delivery = delivery
	})
	rng := rand.New(rand.NewPCG(17, 18))
	const n = 3000
	sent := make([][]byte, n)
	for i := range sent {
		sent[i] = mkFrame(mac(1), mac(0), etherTest, uint32(i), 64+rng.IntN(1400), rng)
	}
	injected := make(chan error, 1)
	go func() {
		for _, b := range sent {
			if err := r.peers[0].Inject(b); err != nil {
				injected <- err
				return
			}
		}
		injected <- nil
	}()
	stop := make(chan struct{})
	slow := make(chan struct{})
	go func() { // the slow sink
		defer close(slow)
		for {
			r.peers[1].HoldWriter()
			select {
			case <-stop:
				r.peers[1].ReleaseWriter()
				return
			case <-time.After(time.Millisecond):
			}
			r.peers[1].ReleaseWriter()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for i := range n {
		if i%500 == 0 {
			r.checkInvariants(t)
		}
		if got := r.recv(t, 1); !bytes.Equal(got, sent[i]) {
			t.Fatalf("frame %d: received seq %d or different bytes", i, seqOf(got))
		}
	}
	close(stop)
	<-slow
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	r.drain(t)
	st := r.checkLossless(t, n)
	t.Logf("egress holds %d, held %.3f s, admit stalls %d", st.Hosts[1].EgressHolds, st.Hosts[1].EgressHeldSeconds, st.Hosts[0].AdmitStalls)
	if st.Hosts[1].EgressHolds == 0 {
		t.Errorf("the slow writer never made the NIC hold its reception")
	}
}

// checkInvariants checks the fabric's conservation laws on the loop.
func (r *rig) checkInvariants(t *testing.T) {
	t.Helper()
	var iv fabric.Invariants
	if err := r.e.pacer.Do(func() { iv = r.e.sess.Fabric.CheckInvariants() }); err != nil {
		t.Fatal(err)
	}
	if !iv.OK() {
		t.Fatalf("fabric invariants: %v", iv.Violations)
	}
}

// checkLossless checks, after a drain, that n frames went from port 0 to
// port 1 and nothing was refused or is left anywhere.
func (r *rig) checkLossless(t *testing.T, n uint64) *Status {
	t.Helper()
	r.checkInvariants(t)
	st := r.status(t)
	a, b := st.Hosts[0], st.Hosts[1]
	if a.FramesIn != n || a.ToFabric != n || b.Delivered != n || b.FramesOut != n || b.WriteRefused != 0 {
		t.Errorf("frames in %d, into the fabric %d, delivered %d, written %d, write_refused %d; want %d",
			a.FramesIn, a.ToFabric, b.Delivered, b.FramesOut, b.WriteRefused, n)
	}
	for _, h := range st.Hosts {
		for cause, v := range h.InRefused {
			if v != 0 {
				t.Errorf("%s: %d refused in (%s)", h.TAP, v, cause)
			}
		}
		for cause, v := range h.OutRefused {
			if v != 0 {
				t.Errorf("%s: %d refused out (%s)", h.TAP, v, cause)
			}
		}
		if h.Outstanding != 0 || h.EgressBacklog != 0 || h.HeldPackets != 0 {
			t.Errorf("%s: %d bytes outstanding, %d frames in backlog, %d packets held after drain", h.TAP, h.Outstanding, h.EgressBacklog, h.HeldPackets)
		}
	}
	if ps := r.peers[0].Stats(); ps.InjectRefused != 0 {
		t.Errorf("%d frames refused at injection", ps.InjectRefused)
	}
	return st
}

// Drain then Close: every frame read is delivered, every pooled frame
// released, the ports closed (the application sees it), the goroutines
// gone; Close is idempotent and the status is refused afterwards. Close
// without draining does not hang with frames in the fabric.
func TestFramePathCleanClose(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		r := newRig(t, "tap-square-10g", ports(3), nil)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(13, uint64(i)))
				for k := range 100 {
					dst := mac((i + 1 + k%2) % 3)
					if k%10 == 0 {
						dst = ether.BroadcastMAC
					}
					if err := r.peers[i].Inject(mkFrame(dst, mac(i), etherTest, uint32(k), 64+k*10, rng)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		// Each port sends 90 unicast frames and 10 broadcast ones (two
		// copies each): wait for the 330 copies before stopping the
		// readers, so none is refused for the shutdown.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			var out uint64
			for _, h := range r.status(t).Hosts {
				out += h.FramesOut
			}
			if out == 330 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		r.drain(t)
		st := r.status(t)
		if err := r.e.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.e.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if _, err := r.e.Status(); !errors.Is(err, des.ErrPacerStopped) {
			t.Errorf("Status after Close: %v", err)
		}
		var in, copies, out uint64
		for i, h := range st.Hosts {
			in += h.FramesIn
			copies += h.ToFabric
			out += h.FramesOut
			if held := r.ports[i].Held(); held != 0 {
				t.Errorf("%s: %d pooled frames not released", h.TAP, held)
			}
			if err := r.peers[i].Inject(make([]byte, 64)); !errors.Is(err, frameport.ErrClosed) {
				t.Errorf("%s: Inject after Close: %v", h.TAP, err)
			}
			ps := r.peers[i].Stats()
			if ps.Discarded != 0 || ps.Written != h.FramesOut {
				t.Errorf("%s: peer %+v, frames out %d", h.TAP, ps, h.FramesOut)
			}
		}
		if in != 300 || copies != 330 || out != 330 {
			t.Errorf("frames in %d, copies into the fabric %d, written %d", in, copies, out)
		}
	}()

	// Close at once with frames in a slow fabric.
	r := newRig(t, "tap-square-10g", ports(2), func(c *RunConfig) { c.Pacing.Dilation = 1e5 })
	rng := rand.New(rand.NewPCG(15, 16))
	for i := range 20 {
		r.inject(t, 0, mkFrame(mac(1), mac(0), etherTest, uint32(i), 1000, rng))
	}
	closed := make(chan error, 1)
	go func() { closed <- r.e.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs with frames in the fabric")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after Close, %d before", g, before)
	}
}

// NewWithPorts refuses ports that do not match the configuration and
// closes them.
func TestNewWithPortsMismatch(t *testing.T) {
	c := DefaultRunConfig()
	c.TAPs = []TAPConfig{{Name: "a"}, {Name: "b"}}
	pa, qa := porttest.New(porttest.Config{Name: "a"})
	pb, _ := porttest.New(porttest.Config{Name: "x"})
	if _, err := NewWithPorts(c, []frameport.Port{pa, pb}, nil); err == nil {
		t.Fatal("a port named x accepted for taps[1] b")
	}
	if err := qa.Inject(make([]byte, 60)); !errors.Is(err, frameport.ErrClosed) {
		t.Errorf("port not closed after the refusal: %v", err)
	}
	if _, err := NewWithPorts(c, []frameport.Port{pa}, nil); err == nil {
		t.Fatal("one port accepted for two taps")
	}
}

// More TAPs than the fabric has hosts (--demo 65 on a 64-host preset) is
// refused with one line that says so, not with a clash on host 0.
func TestMoreTAPsThanHosts(t *testing.T) {
	c, err := DemoConfig(5)
	if err != nil {
		t.Fatal(err)
	}
	c.Model.Preset = "tap-pair-10g" // 4 hosts
	_, err = newEmulator(c, nil)
	if err == nil || !strings.Contains(err.Error(), "5 TAP devices but the fabric") || !strings.Contains(err.Error(), "has 4 hosts") {
		t.Fatalf("error %v", err)
	}
}
