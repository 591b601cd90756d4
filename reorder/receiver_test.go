package reorder

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// step is one arrival of a scenario and what it must produce.
type step struct {
	psn       PSN
	size      int
	delivered []PSN
	ack       PSN
	acked     bool
	nacks     []PSN
	stored    []PSN // buffer contents after the step
}

func runSteps(t *testing.T, r *Receiver[PSN], steps []step) {
	t.Helper()
	for k, s := range steps {
		var got []PSN
		ack, acked, nacks := r.Arrive(s.psn, s.size, s.psn, func(p PSN, payload PSN) {
			if p != payload {
				t.Fatalf("step %d: delivered PSN %d with the payload of %d", k, p, payload)
			}
			got = append(got, p)
		})
		if !slices.Equal(got, s.delivered) {
			t.Errorf("step %d (psn %d): delivered %v, want %v", k, s.psn, got, s.delivered)
		}
		if acked != s.acked || (acked && ack != s.ack) {
			t.Errorf("step %d (psn %d): ack %d/%v, want %d/%v", k, s.psn, ack, acked, s.ack, s.acked)
		}
		if !slices.Equal(nacks, s.nacks) {
			t.Errorf("step %d (psn %d): nacks %v, want %v", k, s.psn, nacks, s.nacks)
		}
		var st []PSN
		for _, e := range r.buf[r.head:] {
			st = append(st, e.psn)
		}
		if !slices.Equal(st, s.stored) {
			t.Errorf("step %d (psn %d): stored %v, want %v", k, s.psn, st, s.stored)
		}
	}
}

func TestReceiverScenarios(t *testing.T) {
	tests := []struct {
		name  string
		spec  MemorySpec
		space Space
		first PSN
		steps []step
	}{
		{
			// §3.2 Figure 2/3: early packets wait, the expected one releases them under one ACK.
			name: "deliver run with cumulative ACK", spec: Static2KiB, first: 0,
			steps: []step{
				{psn: 2, size: 100, stored: []PSN{2}},
				{psn: 1, size: 100, stored: []PSN{1, 2}},
				{psn: 4, size: 100, stored: []PSN{1, 2, 4}},
				{psn: 0, size: 100, delivered: []PSN{0, 1, 2}, ack: 2, acked: true, stored: []PSN{4}},
				{psn: 3, size: 100, delivered: []PSN{3, 4}, ack: 4, acked: true},
				{psn: 5, size: 100, delivered: []PSN{5}, ack: 5, acked: true},
			},
		},
		{
			// §3.2 Figure 4: a full buffer rejects the larger PSN to make room for a smaller one.
			name: "evict larger PSN, largest first, only as needed", spec: MemorySpec{Kind: Static, PerConn: 300},
			steps: []step{
				{psn: 2, size: 100, stored: []PSN{2}},
				{psn: 3, size: 100, stored: []PSN{2, 3}},
				{psn: 4, size: 100, stored: []PSN{2, 3, 4}},
				{psn: 1, size: 100, nacks: []PSN{4}, stored: []PSN{1, 2, 3}},
				{psn: 5, size: 100, nacks: []PSN{5}, stored: []PSN{1, 2, 3}}, // nothing larger: reject arrival
				{psn: 0, size: 100, delivered: []PSN{0, 1, 2, 3}, ack: 3, acked: true},
			},
		},
		{
			name: "evict several, NACKs in PSN order", spec: MemorySpec{Kind: Static, PerConn: 300},
			steps: []step{
				{psn: 2, size: 100, stored: []PSN{2}},
				{psn: 3, size: 100, stored: []PSN{2, 3}},
				{psn: 4, size: 100, stored: []PSN{2, 3, 4}},
				{psn: 1, size: 250, nacks: []PSN{2, 3, 4}, stored: []PSN{1}},
			},
		},
		{
			// §3.2: "If the NIC cannot free enough buffer space, no packet in
			// the buffer is removed, and only the incoming packet is rejected."
			name: "larger PSNs too small to make room: reject arrival only", spec: MemorySpec{Kind: Static, PerConn: 300},
			steps: []step{
				{psn: 1, size: 100, stored: []PSN{1}},
				{psn: 2, size: 100, stored: []PSN{1, 2}},
				{psn: 4, size: 100, stored: []PSN{1, 2, 4}},
				{psn: 3, size: 150, nacks: []PSN{3}, stored: []PSN{1, 2, 4}},
			},
		},
		{
			name: "early packet larger than the buffer", spec: MemorySpec{Kind: Static, PerConn: 300},
			steps: []step{
				{psn: 5, size: 100, stored: []PSN{5}},
				{psn: 1, size: 400, nacks: []PSN{1}, stored: []PSN{5}},
			},
		},
		{
			// §4.3: a buffer smaller than one packet stores nothing, yet the
			// expected packet is always delivered.
			name: "buffer smaller than a packet", spec: MemorySpec{Kind: Static, PerConn: 32},
			steps: []step{
				{psn: 1, size: 256, nacks: []PSN{1}},
				{psn: 0, size: 256, delivered: []PSN{0}, ack: 0, acked: true},
				{psn: 1, size: 256, delivered: []PSN{1}, ack: 1, acked: true},
			},
		},
		{
			name: "duplicates: delivered re-ACKed, stored dropped", spec: Static2KiB, first: 10,
			steps: []step{
				{psn: 9, size: 100, ack: 9, acked: true}, // before any delivery: ACK first-1
				{psn: 12, size: 100, stored: []PSN{12}},
				{psn: 12, size: 100, stored: []PSN{12}},
				{psn: 10, size: 100, delivered: []PSN{10}, ack: 10, acked: true, stored: []PSN{12}},
				{psn: 10, size: 100, ack: 10, acked: true, stored: []PSN{12}},
				{psn: 11, size: 100, delivered: []PSN{11, 12}, ack: 12, acked: true},
				{psn: 11, size: 100, ack: 12, acked: true},
			},
		},
		{
			name: "wraparound 24-bit", spec: Static2KiB, first: 0xFFFFFE,
			steps: []step{
				{psn: 1, size: 100, stored: []PSN{1}},
				{psn: 0, size: 100, stored: []PSN{0, 1}},
				{psn: 0xFFFFFF, size: 100, stored: []PSN{0xFFFFFF, 0, 1}},
				{psn: 3, size: 100, stored: []PSN{0xFFFFFF, 0, 1, 3}},
				{psn: 0xFFFFFE, size: 100, delivered: []PSN{0xFFFFFE, 0xFFFFFF, 0, 1}, ack: 1, acked: true, stored: []PSN{3}},
				{psn: 0xFFFFFE, size: 100, ack: 1, acked: true, stored: []PSN{3}}, // old, behind by 3
			},
		},
		{
			name: "wraparound 4-bit, far packet is old", spec: Static2KiB, space: Space{Bits: 4}, first: 14,
			steps: []step{
				{psn: 5, size: 100, stored: []PSN{5}},                       // 14 -> 5 is 7 ahead (< half = 8)
				{psn: 6, size: 100, ack: 13, acked: true, stored: []PSN{5}}, // 8 ahead = half: behind
				{psn: 14, size: 100, delivered: []PSN{14}, ack: 14, acked: true, stored: []PSN{5}},
			},
		},
		{
			name: "unlimited never rejects", spec: UnlimitedSpace,
			steps: []step{
				{psn: 3, size: 1 << 20, stored: []PSN{3}},
				{psn: 2, size: 1 << 20, stored: []PSN{2, 3}},
				{psn: 1, size: 1 << 20, stored: []PSN{1, 2, 3}},
				{psn: 0, size: 1, delivered: []PSN{0, 1, 2, 3}, ack: 3, acked: true},
			},
		},
		{
			name: "zero-size packets always fit", spec: MemorySpec{Kind: Static},
			steps: []step{
				{psn: 1, size: 0, stored: []PSN{1}},
				{psn: 0, size: 0, delivered: []PSN{0, 1}, ack: 1, acked: true},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory(tc.spec)
			r := NewReceiver[PSN](m, tc.space, tc.first)
			runSteps(t, r, tc.steps)
		})
	}
}

func TestReceiverStats(t *testing.T) {
	m := NewMemory(MemorySpec{Kind: Static, PerConn: 300})
	r := NewReceiver[int](m, Space{}, 0)
	for _, p := range []PSN{2, 3, 4, 1, 5, 4, 0} {
		r.Arrive(p, 100, 0, nil)
	}
	// 2,3,4 stored; 1 evicts 4; 5 rejected; 4 stored again? no: buffer holds 1,2,3 (full) and
	// 4 > all, so it is rejected; 0 delivers 0..3.
	got := r.Stats()
	want := ConnStats{MBSBytes: 300, MaxStoredPackets: 3, Counts: Counts{DeliveredPackets: 4, DeliveredBytes: 400,
		StoredPackets: 4, RejectedPackets: 3, EvictedPackets: 1, Acks: 1, Nacks: 3}}
	if got != want {
		t.Errorf("conn stats\n got %+v\nwant %+v", got, want)
	}
	ns := m.Stats()
	if ns.MMSBytes != 300 || ns.MBSBytes != 300 || ns.RejectedPackets != 3 || ns.Nacks != 3 || ns.Acks != 1 ||
		ns.DeliveredPackets != 4 || ns.Connections != 1 || ns.InUseBytes != 0 || ns.Memory != "static:300B" {
		t.Errorf("NIC stats %+v", ns)
	}
	r.Arrive(9, 50, 0, nil)
	if n := r.Close(); n != 1 || m.InUse() != 0 {
		t.Errorf("Close dropped %d packets, memory in use %d", n, m.InUse())
	}
}

func TestDynamicPoolSharedAcrossConnections(t *testing.T) {
	m := NewMemory(MemorySpec{Kind: Dynamic, Pool: 300, Cap: 200})
	a := NewReceiver[int](m, Space{}, 0)
	b := NewReceiver[int](m, Space{}, 0)
	check := func(what string, gotNacks []PSN, want []PSN) {
		t.Helper()
		if !slices.Equal(gotNacks, want) {
			t.Errorf("%s: nacks %v, want %v", what, gotNacks, want)
		}
	}
	_, _, n := a.Arrive(1, 100, 0, nil)
	check("a1", n, nil)
	_, _, n = a.Arrive(2, 100, 0, nil)
	check("a2", n, nil)
	_, _, n = a.Arrive(3, 100, 0, nil) // a at its cap (200): 3 is the largest, rejected
	check("a3 over cap", n, []PSN{3})
	_, _, n = b.Arrive(5, 100, 0, nil) // pool now full (300)
	check("b5", n, nil)
	_, _, n = b.Arrive(4, 100, 0, nil) // pool full: b evicts its own larger 5
	check("b4 evicts b5", n, []PSN{5})
	_, _, n = b.Arrive(3, 100, 0, nil) // pool full, b has no larger PSN than... 4 is larger: evict 4
	check("b3 evicts b4", n, []PSN{4})
	_, _, n = b.Arrive(7, 100, 0, nil) // pool full by a (200) and b (100 < 7): reject arrival
	check("b7 rejected", n, []PSN{7})
	if room, ok := b.Room(); !ok || room != 0 {
		t.Errorf("b room %d/%v, want 0/true", room, ok)
	}
	a.Arrive(0, 100, 0, nil) // a delivers 0,1,2 and frees 200
	if m.InUse() != 100 || m.Stats().MMSBytes != 300 || m.Stats().MBSBytes != 200 {
		t.Errorf("in use %d, stats %+v", m.InUse(), m.Stats())
	}
	if room, _ := b.Room(); room != 100 {
		t.Errorf("b room %d, want 100 (its cap 200 minus its 100)", room)
	}
}

// sim is a source and the network for one connection: it holds every
// unacknowledged packet, resends on NACK and sometimes resends spuriously.
type sim struct {
	space    Space
	first    PSN
	n        int   // packets to send
	sizes    []int // by offset
	next     int   // next offset to inject
	base     int   // lowest unacknowledged offset
	window   int
	got      int // packets delivered to the host
	r        *Receiver[int]
	peakConn int64
}

type flight struct {
	conn, off int
}

// TestPropertyInOrderExactlyOnce drives random arrival orders through
// receivers with random memories (down to buffers smaller than a packet)
// while the sources resend every NACKed packet, and checks that every host
// receives every packet exactly once and in order, across PSN wraparound,
// and that memory limits hold with MMS/MBS equal to the observed peaks.
func TestPropertyInOrderExactlyOnce(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	iterations := 300
	if testing.Short() {
		iterations = 60
	}
	for it := range iterations {
		var spec MemorySpec
		switch rng.Intn(4) {
		case 0:
			spec = MemorySpec{Kind: Static, PerConn: int64(rng.Intn(1200))}
		case 1:
			pool := int64(rng.Intn(2000))
			spec = MemorySpec{Kind: Dynamic, Pool: pool, Cap: rng.Int63n(pool + 1)}
		case 2:
			spec = UnlimitedSpace
		case 3:
			spec = MemorySpec{Kind: Static, PerConn: int64(rng.Intn(64))} // smaller than any packet
		}
		name := fmt.Sprintf("it%d/%s", it, spec)
		runSim(t, rng, name, spec)
		if t.Failed() {
			return
		}
	}
}

func runSim(t *testing.T, rng *rand.Rand, name string, spec MemorySpec) {
	t.Helper()
	m := NewMemory(spec)
	space := Space{Bits: uint(4 + rng.Intn(29))} // 4..32 bits
	nconn := 1 + rng.Intn(4)
	conns := make([]*sim, nconn)
	for c := range conns {
		n := 1 + rng.Intn(150)
		s := &sim{space: space, n: n, window: 1 + rng.Intn(min(48, int(space.Half())-1))}
		// Start near the top of the space so the run wraps.
		s.first = space.Wrap(PSN(space.Size() - 1 - uint64(rng.Intn(20))))
		s.sizes = make([]int, n)
		for k := range s.sizes {
			s.sizes[k] = 64 + rng.Intn(256)
		}
		s.r = NewReceiver[int](m, space, s.first)
		conns[c] = s
	}
	var inflight []flight
	largestFirst := rng.Intn(2) == 0 // adversary: let the latest packets overtake
	var peakMem int64
	limit := 0
	for _, s := range conns {
		limit += 400 * (s.n + 10)
	}
	for steps := 0; ; steps++ {
		done := true
		for c, s := range conns {
			for s.next < s.n && s.next-s.base < s.window {
				inflight = append(inflight, flight{c, s.next})
				s.next++
			}
			if s.got < s.n {
				done = false
			}
			// A spurious resend of something already sent (delivered, stored or in flight).
			if s.next > 0 && rng.Intn(20) == 0 {
				inflight = append(inflight, flight{c, rng.Intn(s.next)})
			}
		}
		if done {
			break
		}
		if steps > limit {
			t.Fatalf("%s: no progress after %d arrivals", name, steps)
		}
		if len(inflight) == 0 {
			t.Fatalf("%s: nothing in flight but not all delivered", name)
		}
		k := rng.Intn(len(inflight))
		if largestFirst && rng.Intn(2) == 0 {
			for j := range inflight {
				if inflight[j].off > inflight[k].off {
					k = j
				}
			}
		}
		f := inflight[k]
		inflight[k] = inflight[len(inflight)-1]
		inflight = inflight[:len(inflight)-1]
		s := conns[f.conn]
		if s.got-f.off > int(space.Half()) {
			// A stale duplicate older than half the PSN space would alias a
			// new PSN; real networks bound packet lifetime, so it expires.
			continue
		}
		psn := space.Add(s.first, uint32(f.off))
		ack, acked, nacks := s.r.Arrive(psn, s.sizes[f.off], f.off, func(p PSN, off int) {
			if off != s.got || p != space.Add(s.first, uint32(off)) {
				t.Fatalf("%s: conn %d delivered offset %d (psn %d), want offset %d", name, f.conn, off, p, s.got)
			}
			s.got++
		})
		// Offsets from PSNs: relative to the expected PSN, which is within
		// half the space of anything the receiver can legitimately report.
		expPSN := space.Add(s.first, uint32(s.got))
		if acked {
			if a := s.got + int(space.Sub(ack, expPSN)) + 1; a > s.base {
				s.base = a
			}
			if s.base != s.got {
				t.Fatalf("%s: ACK %d acknowledges %d packets, host got %d", name, ack, s.base, s.got)
			}
		}
		for _, p := range nacks {
			off := s.got + int(space.Sub(p, expPSN))
			if off < s.got || off >= s.next {
				t.Fatalf("%s: NACK for offset %d, delivered %d, sent %d", name, off, s.got, s.next)
			}
			// Resend in an adversarial order: the random pick above permutes it
			// among the other packets in flight.
			inflight = append(inflight, flight{f.conn, off})
		}
		// Memory invariants.
		var sum int64
		for c, s := range conns {
			_, b := s.r.Stored()
			sum += b
			s.peakConn = max(s.peakConn, b)
			switch spec.Kind {
			case Static:
				if b > spec.PerConn {
					t.Fatalf("%s: conn %d holds %d bytes, buffer %d", name, c, b, spec.PerConn)
				}
			case Dynamic:
				if b > spec.Cap {
					t.Fatalf("%s: conn %d holds %d bytes, cap %d", name, c, b, spec.Cap)
				}
			}
		}
		if sum != m.InUse() {
			t.Fatalf("%s: memory accounts %d bytes, connections hold %d", name, m.InUse(), sum)
		}
		if spec.Kind == Dynamic && sum > spec.Pool {
			t.Fatalf("%s: pool of %d bytes holds %d", name, spec.Pool, sum)
		}
		peakMem = max(peakMem, sum)
	}
	ns := m.Stats()
	var wantMBS int64
	for c, s := range conns {
		if s.peakConn != s.r.Stats().MBSBytes {
			t.Fatalf("%s: conn %d MBS %d, observed peak %d", name, c, s.r.Stats().MBSBytes, s.peakConn)
		}
		wantMBS = max(wantMBS, s.peakConn)
		if st := s.r.Stats(); st.DeliveredPackets != uint64(s.n) || st.StoredNowPackets != 0 {
			t.Fatalf("%s: conn %d stats %+v", name, c, st)
		}
		if spec.Kind == Unlimited && s.r.Stats().RejectedPackets != 0 {
			t.Fatalf("%s: unlimited memory rejected packets", name)
		}
	}
	if ns.MMSBytes != peakMem || ns.MBSBytes != wantMBS || ns.InUseBytes != 0 {
		t.Fatalf("%s: NIC stats %+v, observed MMS %d MBS %d", name, ns, peakMem, wantMBS)
	}
	if ns.Nacks != ns.RejectedPackets {
		t.Fatalf("%s: %d NACKs for %d rejected packets", name, ns.Nacks, ns.RejectedPackets)
	}
}

// FuzzReceiver feeds arbitrary arrival sequences (PSN, size) to a receiver
// and checks that it never panics, never delivers out of order or twice,
// and never exceeds its memory.
func FuzzReceiver(f *testing.F) {
	f.Add(uint8(0), uint16(300), []byte{2, 3, 4, 1, 5, 0})
	f.Add(uint8(1), uint16(100), []byte{1, 1, 0, 0, 7, 6, 5})
	f.Add(uint8(2), uint16(0), []byte{255, 254, 0, 1})
	f.Fuzz(func(t *testing.T, kind uint8, limit uint16, data []byte) {
		var spec MemorySpec
		switch kind % 3 {
		case 0:
			spec = MemorySpec{Kind: Static, PerConn: int64(limit)}
		case 1:
			spec = MemorySpec{Kind: Dynamic, Pool: int64(limit), Cap: int64(limit / 2)}
		default:
			spec = UnlimitedSpace
		}
		m := NewMemory(spec)
		space := Space{Bits: 8}
		r := NewReceiver[PSN](m, space, 250)
		next := PSN(250)
		for k := 0; k+1 < len(data); k += 2 {
			r.Arrive(PSN(data[k]), int(data[k+1]), PSN(data[k]), func(p, payload PSN) {
				if p != next || payload != p {
					t.Fatalf("delivered %d, want %d", p, next)
				}
				next = space.Next(next)
			})
			_, b := r.Stored()
			if lim, ok := r.Room(); ok && lim < 0 {
				t.Fatalf("negative room %d with %d bytes stored", lim, b)
			}
			if m.InUse() != b {
				t.Fatalf("memory %d, stored %d", m.InUse(), b)
			}
		}
	})
}

func BenchmarkArriveInOrder(b *testing.B) {
	m := NewMemory(Static32KiB)
	r := NewReceiver[int](m, Space{}, 0)
	deliver := func(PSN, int) {}
	b.ReportAllocs()
	psn := PSN(0)
	for b.Loop() {
		r.Arrive(psn, 256, 0, deliver)
		psn = Space{}.Next(psn)
	}
}

// BenchmarkArriveReordered delivers blocks of 16 packets in reverse order:
// 15 are stored, then one arrival releases all 16.
func BenchmarkArriveReordered(b *testing.B) {
	m := NewMemory(Static32KiB)
	r := NewReceiver[int](m, Space{}, 0)
	deliver := func(PSN, int) {}
	const block = 16
	b.ReportAllocs()
	base, k := PSN(0), 0
	for b.Loop() {
		r.Arrive(Space{}.Add(base, uint32(block-1-k)), 256, 0, deliver)
		if k++; k == block {
			k = 0
			base = Space{}.Add(base, block)
		}
	}
}

// BenchmarkArriveEvicting keeps a small buffer full so that arrivals evict.
func BenchmarkArriveEvicting(b *testing.B) {
	m := NewMemory(MemorySpec{Kind: Static, PerConn: 4 * 256})
	r := NewReceiver[int](m, Space{}, 0)
	rng := rand.New(rand.NewSource(1))
	b.ReportAllocs()
	for b.Loop() {
		off := uint32(rng.Intn(64))
		r.Arrive(Space{}.Add(r.Expected(), off), 256, 0, nil)
	}
}
