package reorder

import (
	"fmt"
	"sort"
)

// Receiver is the destination side of one connection: the next expected
// PSN and the rearrangement buffer of early packets (paper 004 §3.2,
// Figure 1). T is whatever the caller carries with a packet (a pointer to
// the simulator's packet, a frame); the receiver only stores and returns it.
//
// A Receiver is not safe for concurrent use and must not be re-entered from
// the deliver callback.
type Receiver[T any] struct {
	mem      *Memory
	space    Space
	half     uint32
	expected PSN
	// buf[head:] holds the stored packets sorted by PSN in serial order
	// (all lie in (expected, expected+Half)), so the successors of the
	// expected PSN are at the front and the largest PSNs at the back.
	buf   []stored[T]
	head  int
	bytes int64
	nacks []PSN
	stats ConnStats
}

type stored[T any] struct {
	psn     PSN
	size    int64
	payload T
}

// NewReceiver makes the receiver of one connection whose first PSN is
// first, storing early packets in m. The space must be valid; PSNs are
// reduced modulo the space.
func NewReceiver[T any](m *Memory, space Space, first PSN) *Receiver[T] {
	if err := space.Validate(); err != nil {
		panic(err)
	}
	m.stats.Connections++
	return &Receiver[T]{mem: m, space: space, half: space.Half(), expected: space.Wrap(first)}
}

// Expected is the PSN the receiver waits for.
func (r *Receiver[T]) Expected() PSN { return r.expected }

// Stored returns how many packets and bytes are in the rearrangement buffer.
func (r *Receiver[T]) Stored() (packets int, bytes int64) { return len(r.buf) - r.head, r.bytes }

// Room is how many more bytes this connection could store right now
// without evicting anything; limited is false for unlimited memory (then
// bytes is 0). A source using the window policy (ADAP-LW, paper 004 §3.3)
// reads it as the known free space at the destination.
func (r *Receiver[T]) Room() (bytes int64, limited bool) {
	switch r.mem.spec.Kind {
	case Static:
		return r.mem.spec.PerConn - r.bytes, true
	case Dynamic:
		return min(r.mem.spec.Cap-r.bytes, r.mem.spec.Pool-r.mem.inUse), true
	}
	return 0, false
}

// Stats returns a snapshot of the connection's statistics.
func (r *Receiver[T]) Stats() ConnStats {
	s := r.stats
	s.StoredNowPackets = len(r.buf) - r.head
	s.StoredNowBytes = r.bytes
	return s
}

// Arrive processes one arriving packet of the connection (paper 004 §3.2):
//
//   - The expected PSN is delivered at once, without storage (so it is
//     accepted even when the buffer is smaller than one packet, §4.3), then
//     every stored successor in sequence; deliver is called for each in
//     order and one cumulative ACK is reported: ack is the PSN of the last
//     delivered packet, acked is true (§3.1: <ACK sn> covers every PSN <= sn).
//   - An early PSN (ahead of the expected one by less than half the space)
//     is stored if it fits; no ACK. If it does not fit, stored packets with
//     larger PSNs are rejected to make room, largest first and only as many
//     as needed; if rejecting all of them still cannot make room, none is
//     rejected and the arriving packet is rejected instead. nacks lists the
//     rejected PSNs, one NACK each.
//   - A PSN behind the expected one was already delivered: it is dropped
//     as a duplicate and re-ACKed with the cumulative ACK expected-1 (before
//     the first delivery this is first-1, which acknowledges nothing new).
//   - A duplicate of a stored PSN is dropped; no ACK, no NACK.
//
// size is the packet's size in bytes as it occupies the buffer (>= 0).
// deliver may be nil. The nacks slice is owned by the receiver, sorted by
// PSN in serial order, and valid until the next call to Arrive or Close.
func (r *Receiver[T]) Arrive(psn PSN, size int, payload T, deliver func(PSN, T)) (ack PSN, acked bool, nacks []PSN) {
	if size < 0 {
		panic(fmt.Sprintf("reorder: Arrive: negative packet size %d", size))
	}
	r.nacks = r.nacks[:0]
	psn = r.space.Wrap(psn)
	d := r.space.Distance(r.expected, psn)
	switch {
	case d == 0:
		return r.deliverRun(psn, int64(size), payload, deliver), true, nil
	case d >= r.half:
		r.stats.DuplicatePackets++
		r.mem.stats.DuplicatePackets++
		r.countAck()
		return r.space.Prev(r.expected), true, nil
	}
	return 0, false, r.arriveEarly(psn, d, int64(size), payload)
}

// deliverRun hands the expected packet and its stored successors to the
// host and returns the PSN to acknowledge (§3.2, Figure 2).
func (r *Receiver[T]) deliverRun(psn PSN, size int64, payload T, deliver func(PSN, T)) PSN {
	r.delivered(psn, size, payload, deliver)
	last := psn
	r.expected = r.space.Next(psn)
	var zero T
	for r.head < len(r.buf) && r.buf[r.head].psn == r.expected {
		e := &r.buf[r.head]
		p, s, pl := e.psn, e.size, e.payload
		e.payload = zero // drop the reference held by the buffer
		r.head++
		r.bytes -= s
		r.mem.give(s)
		r.delivered(p, s, pl, deliver)
		last = p
		r.expected = r.space.Next(p)
	}
	if r.head == len(r.buf) {
		r.buf = r.buf[:0]
		r.head = 0
	}
	r.countAck()
	return last
}

func (r *Receiver[T]) delivered(psn PSN, size int64, payload T, deliver func(PSN, T)) {
	r.stats.DeliveredPackets++
	r.stats.DeliveredBytes += uint64(size)
	r.mem.stats.DeliveredPackets++
	r.mem.stats.DeliveredBytes += uint64(size)
	if deliver != nil {
		deliver(psn, payload)
	}
}

func (r *Receiver[T]) countAck() {
	r.stats.Acks++
	r.mem.stats.Acks++
}

// arriveEarly stores or rejects a packet d PSNs ahead of the expected one.
func (r *Receiver[T]) arriveEarly(psn PSN, d uint32, size int64, payload T) []PSN {
	live := r.buf[r.head:]
	i := sort.Search(len(live), func(k int) bool { return r.space.Distance(r.expected, live[k].psn) >= d })
	if i < len(live) && live[i].psn == psn {
		r.stats.DuplicatePackets++
		r.mem.stats.DuplicatePackets++
		return nil
	}
	need := r.mem.shortfall(r.bytes, size)
	if need > 0 {
		// Paper 004 §3.2: "the NIC will try to free enough buffer space
		// rejecting packets with greater sequence number than that of the
		// packet newly arrived (i.e., the packets that were sent later)
		// [...] If the NIC cannot free enough buffer space, no packet in the
		// buffer is removed, and only the incoming packet is rejected."
		// Reading: the candidates are the stored packets with larger PSNs
		// (live[i:]); they are rejected from the largest PSN down, only as
		// many as needed, and only if all of them together free enough.
		var greater int64
		for k := i; k < len(live) && greater < need; k++ {
			greater += live[k].size
		}
		if greater < need {
			need = -1
		}
	}
	if need < 0 {
		r.reject(psn, false)
		return r.nacks
	}
	var zero T
	for freed := int64(0); freed < need; {
		last := len(r.buf) - 1
		e := &r.buf[last]
		freed += e.size
		r.bytes -= e.size
		r.mem.give(e.size)
		r.reject(e.psn, true)
		e.payload = zero
		r.buf = r.buf[:last]
	}
	// Evicted PSNs were appended largest first; report them in PSN order.
	for a, b := 0, len(r.nacks)-1; a < b; a, b = a+1, b-1 {
		r.nacks[a], r.nacks[b] = r.nacks[b], r.nacks[a]
	}
	r.insert(r.head+i, stored[T]{psn: psn, size: size, payload: payload})
	r.bytes += size
	r.mem.take(size)
	r.stats.StoredPackets++
	r.mem.stats.StoredPackets++
	if r.bytes > r.stats.MBSBytes {
		r.stats.MBSBytes = r.bytes
		if r.bytes > r.mem.stats.MBSBytes {
			r.mem.stats.MBSBytes = r.bytes
		}
	}
	if n := len(r.buf) - r.head; n > r.stats.MaxStoredPackets {
		r.stats.MaxStoredPackets = n
	}
	return r.nacks
}

func (r *Receiver[T]) reject(psn PSN, evicted bool) {
	r.nacks = append(r.nacks, psn)
	r.stats.RejectedPackets++
	r.stats.Nacks++
	r.mem.stats.RejectedPackets++
	r.mem.stats.Nacks++
	if evicted {
		r.stats.EvictedPackets++
		r.mem.stats.EvictedPackets++
	}
}

// insert puts e at absolute index at of buf, compacting the dead prefix
// buf[:head] first when the slice is full so that it never grows with the
// number of packets that passed through, only with the number stored.
func (r *Receiver[T]) insert(at int, e stored[T]) {
	if r.head > 0 && len(r.buf) == cap(r.buf) {
		n := copy(r.buf, r.buf[r.head:])
		var zero stored[T]
		for k := n; k < len(r.buf); k++ {
			r.buf[k] = zero
		}
		r.buf = r.buf[:n]
		at -= r.head
		r.head = 0
	}
	r.buf = append(r.buf, e)
	if at < len(r.buf)-1 {
		copy(r.buf[at+1:], r.buf[at:len(r.buf)-1])
		r.buf[at] = e
	}
}

// Close releases every stored packet back to the NIC memory without
// delivering or rejecting it (the connection is torn down) and returns how
// many packets were dropped. The receiver's statistics stay readable.
func (r *Receiver[T]) Close() int {
	n := len(r.buf) - r.head
	r.mem.give(r.bytes)
	r.bytes = 0
	clear(r.buf)
	r.buf = r.buf[:0]
	r.head = 0
	r.nacks = r.nacks[:0]
	return n
}

// ConnStats are the figures of one connection at its destination NIC.
type ConnStats struct {
	// MBSBytes is the largest buffer this connection used (paper 004 "MBS").
	MBSBytes int64 `json:"mbs_bytes"`
	// MaxStoredPackets is the most packets stored at one time.
	MaxStoredPackets int `json:"max_stored_packets"`
	// StoredNowPackets and StoredNowBytes are the current buffer contents.
	StoredNowPackets int   `json:"stored_now_packets"`
	StoredNowBytes   int64 `json:"stored_now_bytes"`
	Counts
}

// Counts are the packet counters a receiver keeps for its connection and
// its Memory sums over every connection of the NIC. Embedded, their JSON
// keys sit beside the other statistics.
type Counts struct {
	// DeliveredPackets and DeliveredBytes count packets handed to the host in order.
	DeliveredPackets uint64 `json:"delivered_packets"`
	DeliveredBytes   uint64 `json:"delivered_bytes"`
	// StoredPackets counts early packets stored (once per storing).
	StoredPackets uint64 `json:"stored_packets"`
	// RejectedPackets counts every NACKed packet: arrivals refused plus
	// stored packets evicted to make room. EvictedPackets is the second part.
	RejectedPackets uint64 `json:"rejected_packets"`
	EvictedPackets  uint64 `json:"evicted_packets"`
	// DuplicatePackets counts arrivals dropped as duplicates (already
	// delivered, or already stored).
	DuplicatePackets uint64 `json:"duplicate_packets"`
	// Acks and Nacks count the control packets the NIC must send back:
	// one cumulative ACK per Arrive that reported one, one NACK per rejected packet.
	Acks  uint64 `json:"acks"`
	Nacks uint64 `json:"nacks"`
}
