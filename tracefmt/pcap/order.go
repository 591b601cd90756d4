package pcap

import (
	"sort"

	"github.com/fabemu/fabemu/reorder"
)

// tcpOrder measures the order of one direction of a TCP connection as the
// capture saw it, by RFC 4737 on TCP sequence numbers.
//
// reorder.OrderMeter wants packets numbered 1, 2, 3, ... by the sender;
// TCP numbers bytes, and segments have any size, so this meter applies the
// RFC's definitions to byte ranges instead. Each segment carrying sequence
// space (payload, SYN or FIN) is a packet whose number is its first
// sequence number s and whose end is e = s + length:
//   - NextExp is the highest end seen (RFC 4737 §3); a segment with
//     s >= NextExp is in order, and s > NextExp opens a gap (a sequence
//     discontinuity) that the meter remembers as missing bytes.
//   - A segment with s < NextExp that fills missing bytes is reordered
//     (§3); one whose bytes were all received already is a duplicate
//     (§3.6), which for TCP is a retransmission, counted and not
//     evaluated further.
//   - Extent (§4.2) is i - j with j the earliest arrival numbered above s,
//     which is always an in-order arrival (a "record"); late time (§4.3)
//     the time since that arrival; byte offset (§4.4) the bytes received
//     above the segment, i.e. NextExp - e minus the bytes still missing
//     there; and n-reordering (§5) is kept for n = 3, TCP's duplicate-ACK
//     threshold: the three previous distinct arrivals all numbered above s.
//
// A capture point behind a loss sees the sender's retransmission of the
// lost segment fill a gap: that counts here as reordered, since at the
// capture point it is a late first copy. Memory is bounded: at most
// maxHoles gaps and maxRecs records per flow, records kept only while a
// gap below them is open; a late segment whose reordering discontinuity
// was dropped is counted as reordered beyond the window (extent unknown,
// RFC 4737 §6), and one in a forgotten gap as a retransmission.
type tcpOrder struct {
	started        bool
	highRaw        uint32
	highExt        int64
	nextExp        int64
	floor          int64 // bytes below were forgotten
	index          uint64
	recs           []segRec // in-order arrivals, increasing start
	overflowed     bool     // records were dropped for room ...
	overflowTop    int64    // ... the highest start among them
	holes          []span   // missing byte ranges below nextExp, sorted
	last           [3]int64
	lastN          int
	segments       uint64
	retrans        uint64
	reordered      uint64
	beyond         uint64
	three          uint64
	discs          uint64
	extent, lateNS stat
	byteOffset     stat
}

type segRec struct {
	start int64
	idx   uint64
	at    int64
}

type span struct{ lo, hi int64 }

const (
	maxHoles = 64
	maxRecs  = 1024
	// maxSegment bounds how far below the lowest gap a late segment can
	// start (an IPv4 packet's largest payload).
	maxSegment = 1 << 16
)

type stat struct {
	n   uint64
	sum float64
	max int64
}

func (s *stat) add(v int64) {
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += float64(v)
}

func (s stat) summary() reorder.Summary {
	r := reorder.Summary{Count: s.n, Max: s.max}
	if s.n > 0 {
		r.Mean = s.sum / float64(s.n)
	}
	return r
}

// unwrap maps a 32-bit sequence number onto a 64-bit line (serial
// arithmetic, RFC 1982; RFC 4737 §6 on rollover).
func (o *tcpOrder) unwrap(seq uint32) int64 {
	if !o.started {
		o.highRaw, o.highExt = seq, 1<<40
		return o.highExt
	}
	ext := o.highExt + int64(int32(seq-o.highRaw))
	if ext > o.highExt {
		o.highRaw, o.highExt = seq, ext
	}
	return ext
}

// observe counts one segment: seq, its sequence-space length (payload plus
// SYN and FIN) and its capture time in nanoseconds.
func (o *tcpOrder) observe(seq uint32, length int, at int64) {
	if length <= 0 {
		return
	}
	o.segments++
	s := o.unwrap(seq)
	e := s + int64(length)
	if !o.started || s >= o.nextExp {
		if o.started && s > o.nextExp {
			o.discs++
			o.addHole(o.nextExp, s)
		}
		o.started = true
		o.nextExp = e
		o.index++
		o.pushRec(segRec{start: s, idx: o.index, at: at})
		o.pushLast(s)
		return
	}
	filled := o.fill(s, min(e, o.nextExp))
	if e > o.nextExp {
		o.nextExp = e // new bytes ride along
	}
	if filled == 0 {
		o.retrans++
		return
	}
	o.index++
	o.reordered++
	if o.lastN == len(o.last) && o.last[0] > s && o.last[1] > s && o.last[2] > s {
		o.three++
	}
	o.pushLast(s)
	i := sort.Search(len(o.recs), func(k int) bool { return o.recs[k].start > s })
	if i == len(o.recs) || (o.overflowed && o.overflowTop > s) {
		o.beyond++
		return
	}
	r := o.recs[i]
	o.extent.add(int64(o.index - r.idx))
	o.lateNS.add(at - r.at)
	above := o.nextExp - e - o.missing(e, o.nextExp)
	o.byteOffset.add(max(above, 0))
}

// pushRec appends an in-order arrival. Records no late segment can need
// go first: a late segment fills a gap, so it starts less than maxSegment
// below the lowest gap (or below NextExp when there is none), and the
// earliest arrival numbered above it is among the records above that.
// If a gap stays open for more than maxRecs in-order arrivals the oldest
// quarter is dropped and later segments below them count as beyond the
// window.
func (o *tcpOrder) pushRec(r segRec) {
	lo := o.nextExp
	if len(o.holes) > 0 {
		lo = o.holes[0].lo
	}
	k := 0
	for k < len(o.recs) && o.recs[k].start <= lo-maxSegment {
		k++
	}
	if len(o.recs)-k >= maxRecs {
		k += maxRecs / 4
		o.overflowed, o.overflowTop = true, o.recs[k-1].start
	}
	if k > 0 {
		n := copy(o.recs, o.recs[k:])
		o.recs = o.recs[:n]
	}
	o.recs = append(o.recs, r)
}

func (o *tcpOrder) pushLast(s int64) {
	copy(o.last[:], o.last[1:])
	o.last[len(o.last)-1] = s
	o.lastN = min(o.lastN+1, len(o.last))
}

func (o *tcpOrder) addHole(lo, hi int64) {
	if len(o.holes) == maxHoles {
		o.floor = o.holes[0].hi
		o.holes = append(o.holes[:0], o.holes[1:]...)
	}
	o.holes = append(o.holes, span{lo, hi}) // above every other hole
}

// fill removes [lo, hi) from the missing ranges and returns how many
// bytes were missing.
func (o *tcpOrder) fill(lo, hi int64) int64 {
	var got int64
	out := o.holes[:0]
	for _, h := range o.holes {
		a, b := max(h.lo, lo), min(h.hi, hi)
		if a >= b {
			out = append(out, h)
			continue
		}
		got += b - a
		if h.lo < a {
			out = append(out, span{h.lo, a})
		}
		if b < h.hi {
			out = append(out, span{b, h.hi})
		}
	}
	o.holes = out
	return got
}

// missing is the number of bytes in [lo, hi) not received yet.
func (o *tcpOrder) missing(lo, hi int64) int64 {
	var n int64
	for _, h := range o.holes {
		if a, b := max(h.lo, lo), min(h.hi, hi); a < b {
			n += b - a
		}
	}
	return n
}

// TCPOrder is what the capture shows of one TCP flow direction's order,
// by RFC 4737 on sequence numbers (see the package doc and tcpOrder).
type TCPOrder struct {
	// Stream is the RFC 4737 §1.3 stream definition.
	Stream string `json:"stream"`
	// DataSegments counts segments carrying sequence space; Received
	// those that were not retransmissions (RFC 4737's L).
	DataSegments    uint64 `json:"data_segments"`
	Received        uint64 `json:"received"`
	Retransmissions uint64 `json:"retransmissions"`
	// Reordered counts late first copies (§3); ReorderedRatio is
	// Reordered / Received (§4.1); BeyondWindow the reordered segments
	// older than the remembered history (extent unknown).
	Reordered      uint64  `json:"reordered"`
	ReorderedRatio float64 `json:"reordered_ratio"`
	BeyondWindow   uint64  `json:"beyond_window"`
	// SequenceDiscontinuities counts in-order segments that skipped bytes.
	SequenceDiscontinuities uint64 `json:"sequence_discontinuities"`
	// Extent (§4.2, arrivals), LateTime (§4.3, ns) and ByteOffset (§4.4).
	Extent     reorder.Summary     `json:"extent"`
	LateTime   reorder.TimeSummary `json:"late_time"`
	ByteOffset reorder.Summary     `json:"byte_offset_bytes"`
	// ThreeReordered counts 3-reordered segments (§5): late by at least
	// TCP's duplicate-ACK threshold.
	ThreeReordered uint64 `json:"three_reordered"`
}

func (o *tcpOrder) report(stream string) *TCPOrder {
	r := &TCPOrder{
		Stream:                  stream,
		DataSegments:            o.segments,
		Received:                o.index,
		Retransmissions:         o.retrans,
		Reordered:               o.reordered,
		BeyondWindow:            o.beyond,
		SequenceDiscontinuities: o.discs,
		Extent:                  o.extent.summary(),
		LateTime:                reorder.TimeSummary{Summary: o.lateNS.summary(), Unit: "ns"},
		ByteOffset:              o.byteOffset.summary(),
		ThreeReordered:          o.three,
	}
	if o.index > 0 {
		r.ReorderedRatio = float64(o.reordered) / float64(o.index)
	}
	return r
}
