package fabric

import (
	"fmt"
	"math/bits"
)

// The queues of an input port that hold packets are also kept as a bit
// set (inPort.nonEmpty, bit v for queue v), so that the allocators visit
// only them: an architecture with many queues per input (voqnet's queue
// per destination, pciq-K's queue per read port and lane, RECN-IQ's SAQs)
// keeps most of them empty, and a scan of every queue of an input costs
// in proportion to the queues rather than to the heads that request. The
// visiting order is the one of the scan it replaces: queues in round-robin
// order from a pointer on, so every arbitration decision is unchanged.

// newInQueues returns the queues of a switch input port and their bit set.
func newInQueues(n int) ([]queue, []uint64) {
	return make([]queue, n), make([]uint64, (n+63)/64)
}

// pushQ appends p to queue v of ip; every packet joining a switch input
// queue goes through it (or moveQ), so that the bit set stays exact.
func (ip *inPort) pushQ(v int, p *Packet) *queue {
	q := &ip.queues[v]
	q.push(p)
	ip.nonEmpty[v>>6] |= 1 << uint(v&63)
	return q
}

// popQ removes the head packet of queue v of ip.
func (ip *inPort) popQ(v int) *Packet {
	q := &ip.queues[v]
	p := q.pop()
	if q.head == nil {
		ip.nonEmpty[v>>6] &^= 1 << uint(v&63)
	}
	return p
}

// queueOrder yields the queues of an input holding packets in
// round-robin order from a start queue on (start, start+1, ..., the last,
// 0, ..., start-1), as a scan of every queue would meet them.
type queueOrder struct {
	// m holds the bits of the current word still to visit, from bit 0 up;
	// queue base + (bit + rot) mod 64. With up to 64 queues the one word
	// is rotated so that the start queue's bit comes first, and its bits
	// in increasing order are then the queues in round-robin order.
	m    uint64
	rot  int
	base int
	// With more queues, the words from the start queue's on, round to it
	// again: the first of them from start's bit on, its second visit
	// below start's bit. k counts the words visited; wide is nil with one.
	wide  []uint64
	k, w0 int
	below uint64
}

// queuesFrom returns the non-empty queues of ip in round-robin order from
// queue start on.
func (ip *inPort) queuesFrom(start int) queueOrder {
	if len(ip.nonEmpty) == 1 {
		return queueOrder{m: bits.RotateLeft64(ip.nonEmpty[0], -start), rot: start}
	}
	w0, below := start>>6, uint64(1)<<uint(start&63)-1
	return queueOrder{m: ip.nonEmpty[w0] &^ below, base: w0 << 6, wide: ip.nonEmpty, w0: w0, below: below}
}

// next returns the next queue, or false after the last.
func (o *queueOrder) next() (int, bool) {
	for o.m == 0 {
		if o.wide == nil || !o.nextWord() {
			return 0, false
		}
	}
	v := o.base + (bits.TrailingZeros64(o.m)+o.rot)&63
	o.m &= o.m - 1
	return v, true
}

// nextWord moves to the next word of a set of more than 64 queues, and
// reports false after the last.
func (o *queueOrder) nextWord() bool {
	nw := len(o.wide)
	if o.k++; o.k > nw {
		return false
	}
	w := o.w0 + o.k
	if w >= nw {
		w -= nw
	}
	o.m, o.base = o.wide[w], w<<6
	if o.k == nw {
		o.m &= o.below
	}
	return true
}

// CheckQueueIndex verifies, for tests, that every switch input's bit set
// of non-empty queues names exactly the queues holding packets, and
// returns what differs, or nil.
func (f *Fabric) CheckQueueIndex() error {
	for ii := range f.in {
		ip := &f.in[ii]
		for v := range ip.queues {
			has := ip.nonEmpty[v>>6]&(1<<uint(v&63)) != 0
			if held := ip.queues[v].head != nil; has != held {
				return fmt.Errorf("in-port %d (switch %d port %d) queue %d: holds packets %v, marked non-empty %v", ii, ip.sw, ip.port, v, held, has)
			}
		}
	}
	return nil
}
