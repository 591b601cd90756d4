package reorder

import (
	"fmt"
	"math/bits"
	"slices"
)

// Defaults and limits of MeterConfig.
const (
	DefaultHistoryWindow = 4096
	MaxHistoryWindow     = 1 << 20
	DefaultRDThreshold   = 16
	DefaultRBDThreshold  = 16
	MaxDensityThreshold  = 4096
	nReorderingMax       = 8
)

// MeterConfig configures an OrderMeter.
type MeterConfig struct {
	// Stream is the caller's definition of the stream being measured
	// ("flow 10.0.0.1:5001>10.0.0.2:80/udp", "conn h3>h7 vl0 before
	// rearrangement"). RFC 4737 §1.3 requires it beside every result;
	// every report and sub-report carries it.
	Stream string
	// SeqBits is the width of the observed sequence numbers; they wrap at
	// 2^SeqBits and are unwrapped with serial arithmetic (a jump of at most
	// half the space back is a late packet, RFC 4737 §6). 0 means 64.
	SeqBits uint
	// TimeUnit names the unit of the at argument of Observe ("ps", "ns"),
	// reported beside late times and gap times.
	TimeUnit string
	// HistoryWindow is how many sequence numbers below the highest one
	// seen the meter remembers (default 4096, rounded up to a power of
	// two). RFC 4737 figures are exact for every packet at most this far
	// behind; older arrivals are counted as reordered with extent beyond
	// the window (RFC 4737 §6) and cannot be checked for duplication.
	HistoryWindow int
	// RDThreshold is the RFC 5236 displacement threshold DT (default 16).
	RDThreshold int
	// RBDThreshold is the RFC 5236 buffer-occupancy threshold BT (default 16).
	RBDThreshold int
}

// OrderMeter measures the order of one stream of packets as they arrive,
// with the RFC 4737 metrics and the RFC 5236 densities. Memory is bounded
// by the history window and the thresholds, not by the stream length; each
// Observe costs O(log W + DT + BT) plus, for a late packet, the number of
// sequence numbers it is late by (byte offset). Not safe for concurrent use.
type OrderMeter struct {
	cfg    MeterConfig
	mask   uint64 // 2^SeqBits - 1
	half   uint64
	wmask  uint64 // history window - 1
	window uint64

	started   bool
	highRaw   uint64
	highExt   uint64
	nextExp   uint64 // RFC 4737 §3 NextExp, on unwrapped numbers
	index     uint64 // arrival index of the last distinct packet (1-based)
	packets   uint64
	dups      uint64
	reordered uint64
	beyond    uint64
	discN     uint64
	discSum   uint64

	// Per sequence number in [nextExp-W, nextExp): seen bit and payload bytes.
	seen  []uint64
	bytes []uint32
	// Records: the in-order arrivals (each raised the highest number seen),
	// by increasing number, those still within the window. The earliest
	// arrival with a number larger than a late packet's is always a record,
	// which makes extents exact (RFC 4737 §4.2).
	recs     []record
	recHead  int
	recCount int

	extent, lateTime, byteOffset summary
	gap, gapTime                 summary
	maxDisc                      uint64 // arrival index of the last discontinuity found, 0 = none
	maxDiscAt                    int64

	run, runs, inOrder, runSq uint64 // RFC 4737 §4.6: r, x, a, q

	last  [nReorderingMax]uint64 // ring of the last arrivals' numbers
	lastN int
	lastI int
	nre   [nReorderingMax]uint64

	rd  rdState
	rbd rbdState
}

type record struct {
	seq  uint64
	idx  uint64
	at   int64
	disc bool // already found as a reordering discontinuity
}

type summary struct {
	count uint64
	sum   float64
	max   int64
}

func (s *summary) add(v int64) {
	if s.count == 0 || v > s.max {
		s.max = v
	}
	s.count++
	s.sum += float64(v)
}

func (s summary) report() Summary {
	r := Summary{Count: s.count, Max: s.max}
	if s.count > 0 {
		r.Mean = s.sum / float64(s.count)
	}
	return r
}

// extBase is where unwrapped numbers start, far from both ends of uint64
// so that late packets before the first one never underflow.
const extBase = uint64(1) << 62

// NewOrderMeter makes a meter; it returns an error naming the bad field
// if the config is out of range.
func NewOrderMeter(cfg MeterConfig) (*OrderMeter, error) {
	if cfg.SeqBits > 64 || cfg.SeqBits == 1 {
		return nil, fmt.Errorf("reorder: meter %q: sequence width %d bits: want 2..64 (0 = 64)", cfg.Stream, cfg.SeqBits)
	}
	if cfg.SeqBits == 0 {
		cfg.SeqBits = 64
	}
	if cfg.HistoryWindow == 0 {
		cfg.HistoryWindow = DefaultHistoryWindow
	}
	if cfg.RDThreshold == 0 {
		cfg.RDThreshold = DefaultRDThreshold
	}
	if cfg.RBDThreshold == 0 {
		cfg.RBDThreshold = DefaultRBDThreshold
	}
	if cfg.HistoryWindow < 0 || cfg.HistoryWindow > MaxHistoryWindow {
		return nil, fmt.Errorf("reorder: meter %q: history window %d: want 1..%d", cfg.Stream, cfg.HistoryWindow, MaxHistoryWindow)
	}
	if cfg.RDThreshold < 0 || cfg.RDThreshold > MaxDensityThreshold {
		return nil, fmt.Errorf("reorder: meter %q: RD displacement threshold %d: want 1..%d", cfg.Stream, cfg.RDThreshold, MaxDensityThreshold)
	}
	if cfg.RBDThreshold < 0 || cfg.RBDThreshold > MaxDensityThreshold {
		return nil, fmt.Errorf("reorder: meter %q: RBD buffer threshold %d: want 1..%d", cfg.Stream, cfg.RBDThreshold, MaxDensityThreshold)
	}
	w := uint64(1) << bits.Len(uint(cfg.HistoryWindow-1)) // next power of two
	cfg.HistoryWindow = int(w)
	m := &OrderMeter{
		cfg:    cfg,
		mask:   ^uint64(0) >> (64 - cfg.SeqBits),
		half:   uint64(1) << (cfg.SeqBits - 1),
		window: w,
		wmask:  w - 1,
		seen:   make([]uint64, (w+63)/64),
		bytes:  make([]uint32, w),
		recs:   make([]record, w),
		rd:     newRD(cfg.RDThreshold),
		rbd:    newRBD(cfg.RBDThreshold),
	}
	return m, nil
}

// Config returns the meter's config with defaults filled in.
func (m *OrderMeter) Config() MeterConfig { return m.cfg }

// unwrap maps a (possibly wrapping) sequence number onto a monotonic
// 64-bit number line, relative to the highest number seen (RFC 4737 §6).
func (m *OrderMeter) unwrap(seq uint64) uint64 {
	seq &= m.mask
	if !m.started {
		m.highRaw, m.highExt = seq, extBase
		return extBase
	}
	d := (seq - m.highRaw) & m.mask
	var ext uint64
	if d >= m.half && m.half != 0 {
		ext = m.highExt - (m.mask - d + 1) // behind the highest by mask-d+1
	} else {
		ext = m.highExt + d
	}
	if ext > m.highExt {
		m.highRaw, m.highExt = seq, ext
	}
	return ext
}

// Singleton is what one arrival was, by RFC 4737: the per-packet values
// behind the report. Fields that do not apply are zero.
type Singleton struct {
	// Duplicate: a copy of a packet already received; nothing else is set.
	Duplicate bool `json:"duplicate,omitempty"`
	// Reordered: a reordered singleton (§3), numbered below NextExp.
	Reordered bool `json:"reordered,omitempty"`
	// BeyondWindow: reordered and older than the history window; extent,
	// late time, byte offset and gap are unknown.
	BeyondWindow bool `json:"beyond_window,omitempty"`
	// Discontinuity is the number of sequence numbers an in-order packet skipped (§3).
	Discontinuity uint64 `json:"discontinuity,omitempty"`
	// Extent (§4.2, arrivals), LateTime (§4.3, caller's unit) and
	// ByteOffset (§4.4, bytes) of a reordered packet.
	Extent     uint64 `json:"extent,omitempty"`
	LateTime   int64  `json:"late_time,omitempty"`
	ByteOffset uint64 `json:"byte_offset,omitempty"`
	// NReordered is the largest n <= 8 for which the packet is n-reordered (§5).
	NReordered int `json:"n_reordered,omitempty"`
	// Gap is set when this packet revealed a new reordering discontinuity:
	// the RFC's Gap of that discontinuity (§4.5), in arrivals, and GapTime.
	Gap     uint64 `json:"gap,omitempty"`
	GapTime int64  `json:"gap_time,omitempty"`
}

// Observe records the arrival of the packet numbered seq, with a payload
// of size bytes (negative sizes count as 0) arriving at time at, in the
// caller's unit (MeterConfig.TimeUnit, e.g. picoseconds of simulated time),
// and returns the RFC 4737 view of this packet. Numbers are reduced
// modulo 2^SeqBits. Any input is accepted.
func (m *OrderMeter) Observe(seq uint64, size int, at int64) Singleton {
	m.packets++
	s := m.unwrap(seq)
	size32 := uint32(min(max(size, 0), 1<<31))
	m.rd.observe(s)
	m.rbd.observe(s)

	if !m.started || s >= m.nextExp {
		// RFC 4737 §3: in order; a jump is a sequence discontinuity.
		var one Singleton
		if m.started && s > m.nextExp {
			one.Discontinuity = s - m.nextExp
			m.discN++
			m.discSum += one.Discontinuity
		}
		m.advance(s)
		m.started = true
		m.setSeen(s, size32)
		m.index++
		m.pushRecord(record{seq: s, idx: m.index, at: at})
		m.nextExp = s + 1
		m.run++
		m.inOrder++
		m.pushLast(s)
		return one
	}
	if s+m.window < m.nextExp || m.recCount == 0 {
		// Older than the history: reordered (or a duplicate we can no
		// longer recognise), extent "> window" (RFC 4737 §6).
		m.beyond++
		return Singleton{Reordered: true, BeyondWindow: true, NReordered: m.lateArrival(s)}
	}
	if m.isSeen(s) {
		m.dups++ // RFC 4737 §3.6: noted, not evaluated further
		return Singleton{Duplicate: true}
	}
	m.setSeen(s, size32)
	one := Singleton{Reordered: true, NReordered: m.lateArrival(s)}

	// The reordering discontinuity: the earliest arrival numbered above s,
	// which is the first record above s (RFC 4737 §4.2, §4.5).
	r := m.firstRecordAbove(s)
	one.Extent = m.index - r.idx
	one.LateTime = at - r.at // §4.3
	m.extent.add(int64(one.Extent))
	m.lateTime.add(one.LateTime)
	// §4.4: bytes of the earlier arrivals numbered above s.
	for q := s + 1; q < m.nextExp; q++ {
		one.ByteOffset += uint64(m.bytes[q&m.wmask])
	}
	m.byteOffset.add(int64(one.ByteOffset))
	// §4.5: a newly found discontinuity later than the last one found
	// gets Gap = distance in arrivals from that one.
	if !r.disc {
		r.disc = true
		if r.idx > m.maxDisc {
			if m.maxDisc != 0 {
				one.Gap, one.GapTime = r.idx-m.maxDisc, r.at-m.maxDiscAt
				m.gap.add(int64(one.Gap))
				m.gapTime.add(one.GapTime)
			}
			m.maxDisc, m.maxDiscAt = r.idx, r.at
		}
	}
	return one
}

// lateArrival does the bookkeeping common to every reordered packet:
// ratio, free runs (§4.6) and n-reordering (§5); it returns the packet's
// largest n.
func (m *OrderMeter) lateArrival(s uint64) int {
	m.index++
	m.reordered++
	m.runSq += m.run * m.run
	m.run = 0
	m.runs++
	// §5: n-reordered iff the n previous arrivals all carry larger numbers.
	n := 0
	for n < m.lastN {
		if m.last[(m.lastI-1-n+nReorderingMax)%nReorderingMax] <= s {
			break
		}
		n++
	}
	for k := range n {
		m.nre[k]++
	}
	m.pushLast(s)
	return n
}

func (m *OrderMeter) pushLast(s uint64) {
	m.last[m.lastI] = s
	m.lastI = (m.lastI + 1) % nReorderingMax
	if m.lastN < nReorderingMax {
		m.lastN++
	}
}

// advance moves the window top to s+1: the numbers from nextExp to s
// enter it (unseen) and as many leave it at the bottom.
func (m *OrderMeter) advance(s uint64) {
	from := m.nextExp
	if !m.started || s-from >= m.window {
		clear(m.seen)
		clear(m.bytes)
	} else {
		for q := from; q <= s; q++ {
			i := q & m.wmask
			m.seen[i/64] &^= 1 << (i % 64)
			m.bytes[i] = 0
		}
	}
	// Drop records that fell out of the window.
	low := s + 1 - m.window
	for m.recCount > 0 && m.recs[m.recHead].seq < low {
		m.recHead = int((uint64(m.recHead) + 1) & m.wmask)
		m.recCount--
	}
}

func (m *OrderMeter) setSeen(s uint64, size uint32) {
	i := s & m.wmask
	m.seen[i/64] |= 1 << (i % 64)
	m.bytes[i] = size
}

func (m *OrderMeter) isSeen(s uint64) bool {
	i := s & m.wmask
	return m.seen[i/64]&(1<<(i%64)) != 0
}

func (m *OrderMeter) pushRecord(r record) {
	if uint64(m.recCount) == m.window { // cannot happen: records are distinct numbers within the window
		m.recHead = int((uint64(m.recHead) + 1) & m.wmask)
		m.recCount--
	}
	m.recs[(uint64(m.recHead+m.recCount))&m.wmask] = r
	m.recCount++
}

// firstRecordAbove returns the first record numbered above s; one exists
// because the newest record is nextExp-1 > s.
func (m *OrderMeter) firstRecordAbove(s uint64) *record {
	lo, hi := 0, m.recCount-1
	for lo < hi {
		mid := (lo + hi) / 2
		if m.recs[(uint64(m.recHead+mid))&m.wmask].seq > s {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return &m.recs[(uint64(m.recHead+lo))&m.wmask]
}

// Summary is the count, mean and maximum of one per-packet quantity.
type Summary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean"`
	Max   int64   `json:"max"`
}

// TimeSummary is a Summary of times in the caller's unit.
type TimeSummary struct {
	Summary
	Unit string `json:"unit"`
}

// FreeRuns are the RFC 4737 §4.6 reordering-free-run counters and figures.
type FreeRuns struct {
	// Runs (x) is the number of runs ended by a reordered packet; InOrder
	// (a) the in-order packets; Packets (p) all distinct packets;
	// SumSquares (q) the sum of squared run lengths, without the trailing
	// run (as the RFC's pseudo-code).
	Runs       uint64 `json:"runs"`
	InOrder    uint64 `json:"in_order"`
	Packets    uint64 `json:"packets"`
	SumSquares uint64 `json:"sum_squares"`
	// InOrderPercent = 100·a/p; MeanRun = a/x; Variability = (q/a)/(a/x).
	// Mean and variability are 0 when undefined (no run ended, or a = 0).
	InOrderPercent float64 `json:"in_order_percent"`
	MeanRun        float64 `json:"mean_run"`
	Variability    float64 `json:"variability"`
}

// NReordering is the RFC 4737 §5 figure for one n.
type NReordering struct {
	N int `json:"n"`
	// Packets is m, the number of n-reordered packets; Degree is m/l with l
	// the distinct packets received (duplicates removed, see the package doc).
	Packets uint64  `json:"packets"`
	Degree  float64 `json:"degree"`
}

// Bin is one bar of a density: how many packets had Value and which
// fraction of the counted packets that is.
type Bin struct {
	Value    int     `json:"value"`
	Count    uint64  `json:"count"`
	Fraction float64 `json:"fraction"`
}

// RDReport is the RFC 5236 Reorder Density: the distribution of
// displacement D = RI - s (negative: early, positive: late).
type RDReport struct {
	Stream string `json:"stream"`
	// Threshold is DT: packets with |D| > DT are discarded (counted in
	// Discarded), and a packet not seen within DT positions is lost.
	Threshold  int    `json:"displacement_threshold"`
	Samples    uint64 `json:"samples"`
	Discarded  uint64 `json:"discarded"`
	Duplicates uint64 `json:"duplicates"`
	Bins       []Bin  `json:"bins"`
}

// RBDReport is the RFC 5236 Reorder Buffer-occupancy Density: the
// distribution of the occupancy of an ideal in-order receiver's buffer, in
// packets, after each arrival.
type RBDReport struct {
	Stream string `json:"stream"`
	// Threshold is BT: the buffer holds at most BT packets; when the
	// expected packet does not show up within BT arrivals it is lost, so in
	// streams with neither loss nor duplicates the highest occupancy
	// recorded is BT-1.
	Threshold  int    `json:"buffer_threshold"`
	Samples    uint64 `json:"samples"`
	Duplicates uint64 `json:"duplicates"`
	// ForcedReleases counts buffered numbers given up to keep the
	// occupancy within BT where the 2004 reference algorithm would exceed it.
	ForcedReleases uint64 `json:"forced_releases"`
	Bins           []Bin  `json:"bins"`
}

// OrderReport is everything an OrderMeter measured of one stream.
type OrderReport struct {
	// Stream is the stream definition the caller gave (RFC 4737 §1.3).
	Stream string `json:"stream"`
	// SeqBits is the width of the sequence numbers; HistoryWindow the
	// number of sequence numbers remembered (figures are exact within it).
	SeqBits       uint `json:"seq_bits"`
	HistoryWindow int  `json:"history_window"`
	// Arrivals counts every Observe; Received (L) the distinct packets;
	// Duplicates the copies removed (RFC 4737 §3.6).
	Arrivals   uint64 `json:"arrivals"`
	Received   uint64 `json:"received"`
	Duplicates uint64 `json:"duplicates"`
	// Reordered counts reordered singletons (§3); ReorderedRatio is
	// Reordered/Received (§4.1). BeyondWindow counts the reordered packets
	// older than the history window, whose extent is "> window".
	Reordered      uint64  `json:"reordered"`
	ReorderedRatio float64 `json:"reordered_ratio"`
	BeyondWindow   uint64  `json:"beyond_window"`
	// SequenceDiscontinuities counts in-order arrivals that skipped
	// numbers; DiscontinuityTotal sums the numbers skipped (§3).
	SequenceDiscontinuities uint64 `json:"sequence_discontinuities"`
	DiscontinuityTotal      uint64 `json:"sequence_discontinuity_total"`
	// Extent (§4.2, arrivals), LateTime (§4.3) and ByteOffset (§4.4,
	// bytes) over the reordered packets within the window.
	Extent     Summary     `json:"extent"`
	LateTime   TimeSummary `json:"late_time"`
	ByteOffset Summary     `json:"byte_offset_bytes"`
	// Gap (§4.5, arrivals) and GapTime between successive reordering
	// discontinuities.
	Gap      Summary     `json:"gap"`
	GapTime  TimeSummary `json:"gap_time"`
	FreeRuns FreeRuns    `json:"free_runs"`
	// NReordering holds n = 1..8 (§5).
	NReordering [nReorderingMax]NReordering `json:"n_reordering"`
	RD          RDReport                    `json:"rd"`
	RBD         RBDReport                   `json:"rbd"`
}

// Report returns the figures so far. RD and RBD are computed as if the
// stream ended now (their look-ahead window is flushed on a copy), so
// calling Report does not change later results.
func (m *OrderMeter) Report() OrderReport {
	received := m.index
	r := OrderReport{
		Stream:                  m.cfg.Stream,
		SeqBits:                 m.cfg.SeqBits,
		HistoryWindow:           m.cfg.HistoryWindow,
		Arrivals:                m.packets,
		Received:                received,
		Duplicates:              m.dups,
		Reordered:               m.reordered,
		BeyondWindow:            m.beyond,
		SequenceDiscontinuities: m.discN,
		DiscontinuityTotal:      m.discSum,
		Extent:                  m.extent.report(),
		LateTime:                TimeSummary{m.lateTime.report(), m.cfg.TimeUnit},
		ByteOffset:              m.byteOffset.report(),
		Gap:                     m.gap.report(),
		GapTime:                 TimeSummary{m.gapTime.report(), m.cfg.TimeUnit},
		FreeRuns: FreeRuns{
			Runs: m.runs, InOrder: m.inOrder, Packets: received, SumSquares: m.runSq,
		},
	}
	if received > 0 {
		r.ReorderedRatio = float64(m.reordered) / float64(received)
		r.FreeRuns.InOrderPercent = 100 * float64(m.inOrder) / float64(received)
	}
	if m.runs > 0 && m.inOrder > 0 {
		a, x := float64(m.inOrder), float64(m.runs)
		r.FreeRuns.MeanRun = a / x
		r.FreeRuns.Variability = (float64(m.runSq) / a) / (a / x)
	}
	for k := range nReorderingMax {
		r.NReordering[k] = NReordering{N: k + 1, Packets: m.nre[k]}
		if received > 0 {
			r.NReordering[k].Degree = float64(m.nre[k]) / float64(received)
		}
	}
	rd := m.rd.clone()
	rd.flush()
	r.RD = rd.report(m.cfg.Stream)
	rbd := m.rbd.clone()
	rbd.flush()
	r.RBD = rbd.report(m.cfg.Stream)
	return r
}

// ---- RFC 5236 Reorder Density ----

// rdState is the streaming form of the reference RD algorithm
// (Colorado State rd_algo.txt, 2004): a look-ahead window of the next DT+1
// distinct arrivals and a buffer of early numbers; RI is the receive index.
type rdState struct {
	dt         int
	window     []uint64
	buffer     []uint64
	ri         uint64
	started    bool
	fle        []uint64 // index D+DT
	discarded  uint64
	duplicates uint64
}

func newRD(dt int) rdState {
	return rdState{dt: dt, window: make([]uint64, 0, dt+2), buffer: make([]uint64, 0, dt+1), fle: make([]uint64, 2*dt+1)}
}

func (s *rdState) clone() rdState {
	c := *s
	c.window = slices.Clone(s.window)
	c.buffer = slices.Clone(s.buffer)
	c.fle = slices.Clone(s.fle)
	return c
}

// observe is get_next_arrival's duplicate test followed by as many steps
// as keep the window at DT+1 numbers.
func (s *rdState) observe(seq uint64) {
	if (s.started && seq < s.ri) || slices.Contains(s.window, seq) || slices.Contains(s.buffer, seq) {
		s.duplicates++
		return
	}
	s.window = append(s.window, seq)
	for len(s.window) > s.dt {
		s.step()
	}
}

func (s *rdState) flush() {
	for len(s.window) > 0 {
		s.step()
	}
}

// step is one pass of "Step 2" that consumes the head of the window.
func (s *rdState) step() {
	if !s.started {
		// RI starts at the smallest number (the text's RI = 1 for streams
		// numbered from 1; a missing first number is a loss either way).
		s.ri = slices.Min(s.window)
		s.started = true
	}
	for !slices.Contains(s.window, s.ri) && !slices.Contains(s.buffer, s.ri) {
		// RI not found: the next RI is the minimum of window and buffer.
		m := slices.Min(s.window)
		if len(s.buffer) > 0 {
			m = min(m, slices.Min(s.buffer))
		}
		if s.ri < m {
			s.ri = m
		} else {
			s.ri++
		}
	}
	head := s.window[0]
	s.window = s.window[:copy(s.window, s.window[1:])]
	d := int64(s.ri - head) // displacement, two's complement
	if d >= -int64(s.dt) && d <= int64(s.dt) {
		s.fle[d+int64(s.dt)]++
		if i := slices.Index(s.buffer, s.ri); i >= 0 {
			s.buffer = slices.Delete(s.buffer, i, i+1)
		}
		if d < 0 {
			s.buffer = append(s.buffer, head) // early arrival
		}
		s.ri++
	} else {
		s.discarded++ // displacement beyond the threshold
	}
}

func (s *rdState) report(stream string) RDReport {
	r := RDReport{Stream: stream, Threshold: s.dt, Discarded: s.discarded, Duplicates: s.duplicates, Bins: []Bin{}}
	for _, c := range s.fle {
		r.Samples += c
	}
	for i, c := range s.fle {
		if c > 0 {
			r.Bins = append(r.Bins, Bin{Value: i - s.dt, Count: c, Fraction: float64(c) / float64(r.Samples)})
		}
	}
	return r
}

// ---- RFC 5236 Reorder Buffer-occupancy Density ----

// rbdState is the streaming form of the reference RBD algorithm
// (Colorado State rbd_algo.txt, 2004): a look-ahead window of BT+1
// distinct arrivals, E the next expected number, and a hypothetical buffer.
type rbdState struct {
	bt         int
	window     []uint64
	buffer     []uint64
	e          uint64
	started    bool
	fb         []uint64 // index occupancy 0..BT
	forced     uint64   // buffered numbers released to keep the occupancy <= BT
	duplicates uint64
}

func newRBD(bt int) rbdState {
	return rbdState{bt: bt, window: make([]uint64, 0, bt+2), buffer: make([]uint64, 0, bt+1), fb: make([]uint64, bt+1)}
}

func (s *rbdState) clone() rbdState {
	c := *s
	c.window = slices.Clone(s.window)
	c.buffer = slices.Clone(s.buffer)
	c.fb = slices.Clone(s.fb)
	return c
}

func (s *rbdState) observe(seq uint64) {
	// "A sequence number <= E or present in window or buffer is duplicate."
	if (s.started && seq <= s.e) || slices.Contains(s.window, seq) || slices.Contains(s.buffer, seq) {
		s.duplicates++
		return
	}
	s.window = append(s.window, seq)
	for len(s.window) > s.bt {
		s.step()
	}
}

func (s *rbdState) flush() {
	for len(s.window) > 0 {
		s.step()
	}
}

func (s *rbdState) step() {
	// The smallest number in the window is taken as E to neglect lost packets.
	s.e = slices.Min(s.window)
	s.started = true
	head := s.window[0]
	s.window = s.window[:copy(s.window, s.window[1:])]
	if head == s.e {
		// The expected packet: free every buffered number that is now the
		// smallest of window and buffer.
		for len(s.buffer) > 0 {
			m := slices.Min(s.buffer)
			if len(s.window) > 0 && slices.Min(s.window) < m {
				break
			}
			i := slices.Index(s.buffer, m)
			s.buffer = slices.Delete(s.buffer, i, i+1)
		}
		if len(s.window) > 0 {
			s.e = slices.Min(s.window)
		}
	} else {
		s.buffer = append(s.buffer, head) // early arrival
		if len(s.buffer) > s.bt {
			// The 2004 text does not bound the buffer: with losses and
			// duplicates its occupancy can exceed BT without limit. RFC 5236
			// bounds it by BT, declaring the missing packets lost; we release
			// the smallest buffered number, as a receiver whose buffer of BT
			// packets is full would give up on the hole below it. Streams
			// that never reach BT (all of reorder-metrics.md §3.5) are
			// unaffected; each release is counted.
			i := slices.Index(s.buffer, slices.Min(s.buffer))
			s.buffer = slices.Delete(s.buffer, i, i+1)
			s.forced++
		}
	}
	s.fb[len(s.buffer)]++
}

func (s *rbdState) report(stream string) RBDReport {
	r := RBDReport{Stream: stream, Threshold: s.bt, Duplicates: s.duplicates, ForcedReleases: s.forced, Bins: []Bin{}}
	for _, c := range s.fb {
		r.Samples += c
	}
	for i, c := range s.fb {
		if c > 0 {
			r.Bins = append(r.Bins, Bin{Value: i, Count: c, Fraction: float64(c) / float64(r.Samples)})
		}
	}
	return r
}
