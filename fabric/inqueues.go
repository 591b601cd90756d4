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

// roundRobin appends to dst the queues of ip holding packets in
// round-robin order from queue start on (start, start+1, ..., the last,
// 0, ..., start-1) and returns it. With up to 64 queues the bit set is one
// word, rotated so that start's bit comes first.
func (ip *inPort) roundRobin(dst []int32, start int) []int32 {
	nw := len(ip.nonEmpty)
	if nw == 1 {
		for m := bits.RotateLeft64(ip.nonEmpty[0], -start); m != 0; m &= m - 1 {
			dst = append(dst, int32((bits.TrailingZeros64(m)+start)&63))
		}
		return dst
	}
	w0, below := start>>6, uint64(1)<<uint(start&63)-1
	for k := 0; k <= nw; k++ {
		w := w0 + k
		if w >= nw {
			w -= nw
		}
		m := ip.nonEmpty[w]
		if k == 0 {
			m &^= below
		} else if k == nw {
			m &= below
		}
		for ; m != 0; m &= m - 1 {
			dst = append(dst, int32(w<<6+bits.TrailingZeros64(m)))
		}
	}
	return dst
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
