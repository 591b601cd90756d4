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

// pushQ appends p to queue v of ip. Every packet joining a switch input
// queue goes through pushQ and every one leaving through popQ, so that the
// bit set stays exact (Fabric.CheckQueueIndex).
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

// queueOrder walks the non-empty queues of an input in round-robin order
// from a start queue on: with up to 64 queues, the bits of the set
// rotated so that start's bit comes first (in increasing order they are
// the queues start, start+1, ..., the last, 0, ..., start-1: queue
// (bit + start) mod 64); for inputs of more queues, a list (appendWide).
type queueOrder struct {
	m     uint64
	start int
	list  []int32
	i     int
}

// nonEmptyFrom returns the walk of ip's non-empty queues from queue start
// on; scratch is reused for the list of an input of more than 64 queues
// (the walk's list keeps it for the next call).
func (ip *inPort) nonEmptyFrom(start int, scratch []int32) queueOrder {
	if len(ip.nonEmpty) == 1 {
		return queueOrder{m: bits.RotateLeft64(ip.nonEmpty[0], -start), start: start, list: scratch}
	}
	return queueOrder{start: start, list: ip.appendWide(scratch[:0], start)}
}

// next returns the next queue of the walk, or false at its end.
func (o *queueOrder) next() (int, bool) {
	if o.m != 0 {
		qi := (bits.TrailingZeros64(o.m) + o.start) & 63
		o.m &= o.m - 1
		return qi, true
	}
	if o.i < len(o.list) {
		o.i++
		return int(o.list[o.i-1]), true
	}
	return 0, false
}

// appendWide appends to list the queues of ip holding packets in
// round-robin order from queue start on (an input of more than 64 queues).
func (ip *inPort) appendWide(list []int32, start int) []int32 {
	for k := 0; k <= len(ip.nonEmpty); k++ {
		w, m := ip.wideWord(start, k)
		for ; m != 0; m &= m - 1 {
			list = append(list, int32(w<<6+bits.TrailingZeros64(m)))
		}
	}
	return list
}

// wideWord returns step k (0 to len(nonEmpty)) of a round-robin walk from
// queue start over the bit set of an input of more than 64 queues: the
// word w to visit and its bits to visit. The walk takes the words from
// start's on, round to it again, the first of them from start's bit on,
// its second visit below start's bit.
func (ip *inPort) wideWord(start, k int) (w int, m uint64) {
	nw := len(ip.nonEmpty)
	if w = start>>6 + k; w >= nw {
		w -= nw
	}
	m = ip.nonEmpty[w]
	below := uint64(1)<<uint(start&63) - 1
	switch k {
	case 0:
		m &^= below
	case nw:
		m &= below
	}
	return w, m
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
