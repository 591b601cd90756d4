package traffic

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Pattern chooses destinations over N hosts numbered 0..N-1.
//
// Implementations are immutable after construction and safe to share
// between hosts; all randomness comes from the rng argument. Dest does not
// allocate.
type Pattern interface {
	// Name is the canonical spec string of the pattern (ParsePattern
	// accepts it back).
	Name() string
	// Hosts is N, the number of hosts the pattern was built for.
	Hosts() int
	// Dest returns the destination of a packet that src creates at time
	// now (picoseconds). ok is false when src must not send at that time
	// (a silent source, or a corner-case source outside its window);
	// the caller then drops the creation. dst is never src when ok.
	Dest(src int, now int64, rng *rand.Rand) (dst int, ok bool)
	// Silent reports whether src never sends under this pattern (a fixed
	// point of a bit permutation under the FixedSilent policy). Offered
	// versus accepted traffic accounting should leave such hosts out.
	Silent(src int) bool
}

// Scheduled is implemented by patterns that fix each source's offered load
// over time themselves (the corner cases of paper 000, Table 1). Their
// schedule replaces the configured load and phases.
type Scheduled interface {
	Pattern
	// Schedule returns src's load phases (absolute loads, one-shot or
	// cyclic).
	Schedule(src int) Phases
}

// ActiveSources returns how many hosts of p ever send.
func ActiveSources(p Pattern) int {
	n := 0
	for s := range p.Hosts() {
		if !p.Silent(s) {
			n++
		}
	}
	return n
}

// uniformOther returns a host drawn uniformly from 0..n-1 without src
// (n >= 2): draw from n-1 values and skip over src.
func uniformOther(src, n int, rng *rand.Rand) int {
	d := rng.IntN(n - 1)
	if d >= src {
		d++
	}
	return d
}

// uniform sends every packet to a host drawn uniformly among all hosts but
// the source (papers 001 §4.1, 002 §3, 004 §4.1: "uniform" / "random").
type uniform struct{ n int }

func (u uniform) Name() string    { return "uniform" }
func (u uniform) Hosts() int      { return u.n }
func (u uniform) Silent(int) bool { return false }
func (u uniform) Dest(src int, _ int64, rng *rand.Rand) (int, bool) {
	return uniformOther(src, u.n, rng), true
}

// split is uniform traffic within two classes of hosts: a packet goes to
// a host drawn uniformly among the others of its source's class. oddeven
// (halves false) is paper 003 §2.9.1's worst case for PCIQ with two
// sub-crossbars ("odd input links send packets only to odd output links
// and even input links send packets only to even output links"); halves
// is the worst case for the hierarchical crossbar it quotes ("first half
// of input links sending to the first half of output links and the second
// half of input links sending to the second half"). Host h sits on port h
// of a single switch, so host classes are port classes there.
type split struct {
	n      int
	halves bool
}

func (s split) Name() string {
	if s.halves {
		return "halves"
	}
	return "oddeven"
}
func (s split) Hosts() int      { return s.n }
func (s split) Silent(int) bool { return false }
func (s split) Dest(src int, _ int64, rng *rand.Rand) (int, bool) {
	half := s.n / 2
	if s.halves {
		base := src / half * half
		return base + uniformOther(src-base, half, rng), true
	}
	return 2*uniformOther(src/2, half, rng) + src%2, true
}

// FixedPoint says what a source does when a permutation maps it to itself
// (bit-reversal palindromes, butterfly with equal end bits, the all-zero
// and all-one addresses under shuffle, the diagonal under transpose).
type FixedPoint int

const (
	// FixedSilent: the source does not inject at all. This is the default:
	// it keeps the pattern a partial permutation (no destination receives
	// from more than one source, paper 004 §4.2: "each source always
	// communicates with the same destination") and a NIC has no reason to
	// send to itself through the fabric. The papers do not say; Silent
	// makes the choice visible to the accounting.
	FixedSilent FixedPoint = iota
	// FixedUniform: the source sends uniform traffic instead.
	FixedUniform
)

func (f FixedPoint) String() string {
	if f == FixedUniform {
		return "uniform"
	}
	return "silent"
}

// PermKind names one of the bit permutations.
type PermKind int

// The bit permutations over N = 2^b hosts, source address
// s = a(b-1) ... a1 a0. Paper 001 §4.1 names butterfly, complement,
// bit-reversal and perfect shuffle as "the permutations that are usually
// performed in parallel numerical algorithms" (its ref. 9, Leighton); the
// bit formulas are the usual ones (Duato, Yalamanchili and Ni,
// "Interconnection Networks: An Engineering Approach", paper 001's ref. 6).
// Transpose follows Dally and Towles, "Principles and Practices of
// Interconnection Networks", §3.2.
const (
	// BitReversal: d = a0 a1 ... a(b-1).
	BitReversal PermKind = iota
	// Butterfly: swap the most and least significant bits,
	// d = a0 a(b-2) ... a1 a(b-1).
	Butterfly
	// Complement: d = ~s, every bit inverted.
	Complement
	// PerfectShuffle: rotate left by one, d = a(b-2) ... a0 a(b-1).
	PerfectShuffle
	// Transpose: d_i = s_((i + b/2) mod b): swap the high and low halves of
	// the address, i.e. (x, y) -> (y, x) on a 2^(b/2) square. b must be even.
	Transpose
)

var permNames = [...]string{"bitrev", "butterfly", "complement", "shuffle", "transpose"}

func (k PermKind) String() string { return permNames[k] }

// permute applies kind to the b-bit address s.
func permute(kind PermKind, s uint, b int) uint {
	mask := uint(1)<<b - 1
	switch kind {
	case BitReversal:
		return bits.Reverse(s) >> (bits.UintSize - b)
	case Butterfly:
		lo, hi := s&1, (s>>(b-1))&1
		s &^= 1 | 1<<(b-1)
		return s | hi | lo<<(b-1)
	case Complement:
		return ^s & mask
	case PerfectShuffle:
		return (s<<1 | s>>(b-1)) & mask
	case Transpose:
		h := b / 2
		return (s<<h | s>>h) & mask
	}
	panic("unreachable")
}

// permutation is a bit permutation with a precomputed table.
type permutation struct {
	kind  PermKind
	fixed FixedPoint
	n     int
	dst   []int32 // dst[s]; -1 marks a fixed point
}

func newPermutation(kind PermKind, n int, fixed FixedPoint) (*permutation, error) {
	if n < 2 || n&(n-1) != 0 {
		return nil, fmt.Errorf("pattern %s needs a power-of-two number of hosts (at least 2), got %d", kind, n)
	}
	b := bits.TrailingZeros(uint(n))
	if kind == Transpose && b%2 != 0 {
		return nil, fmt.Errorf("pattern transpose needs a square power-of-two number of hosts (4, 16, 64, 256, ...), got %d", n)
	}
	if kind == Butterfly && b < 2 {
		return nil, fmt.Errorf("pattern butterfly needs at least 4 hosts (with %d every host maps to itself)", n)
	}
	p := &permutation{kind: kind, fixed: fixed, n: n, dst: make([]int32, n)}
	for s := range n {
		d := int(permute(kind, uint(s), b))
		if d == s {
			d = -1
		}
		p.dst[s] = int32(d)
	}
	return p, nil
}

func (p *permutation) Name() string {
	if p.fixed == FixedUniform {
		return p.kind.String() + ",fixed=uniform"
	}
	return p.kind.String()
}
func (p *permutation) Hosts() int { return p.n }
func (p *permutation) Silent(src int) bool {
	return p.fixed == FixedSilent && p.dst[src] < 0
}
func (p *permutation) Dest(src int, _ int64, rng *rand.Rand) (int, bool) {
	d := p.dst[src]
	if d >= 0 {
		return int(d), true
	}
	if p.fixed == FixedUniform {
		return uniformOther(src, p.n, rng), true
	}
	return -1, false
}

// Map returns the permutation's image of src (src itself for a fixed
// point), for tests and tools that print the pattern.
func (p *permutation) Map(src int) int {
	if d := p.dst[src]; d >= 0 {
		return int(d)
	}
	return src
}

// hotSpot sends a fraction f of packets to node h and the rest uniformly
// (Pfister and Norton's hot-spot model, cited as [23] in paper 000; paper
// 003 §2.9 uses f = 10 %, §4.2.2 f = 50 % during a window). The "rest" is
// uniform over every host but the source, h included, so h receives
// f + (1-f)/(N-1) of a source's packets. h itself sends uniformly. When a
// window is set, the hot fraction applies only to packets created in
// [from, until); outside it every packet is uniform.
type hotSpot struct {
	n           int
	frac        float64
	node        int
	from, until int64 // until <= 0: no end
	name        string
}

func (h *hotSpot) Name() string    { return h.name }
func (h *hotSpot) Hosts() int      { return h.n }
func (h *hotSpot) Silent(int) bool { return false }
func (h *hotSpot) Dest(src int, now int64, rng *rand.Rand) (int, bool) {
	if src != h.node && now >= h.from && (h.until <= 0 || now < h.until) && rng.Float64() < h.frac {
		return h.node, true
	}
	return uniformOther(src, h.n, rng), true
}

// hotRegion is paper 002 §3 item 4, quoting its ref [6]: "the destinations
// of 25% of the packets are chosen randomly within a small 'hot'
// contiguous sub-mesh region consisting of 12.5% of the machine. The
// remaining 75% of the packets chose their destinations uniformly over the
// entire machine." With probability frac the destination is uniform over
// the region (the source excluded if it lies inside), otherwise uniform
// over all hosts but the source. The region therefore receives
// frac + (1-frac)·|R|/(N-1) of an outside source's packets (≈ 34.4 % for
// frac = 25 %, |R| = N/8).
type hotRegion struct {
	n      int
	frac   float64
	region []int32 // sorted host numbers
	in     []bool  // in[h]: h is in the region
	name   string
}

func (h *hotRegion) Name() string    { return h.name }
func (h *hotRegion) Hosts() int      { return h.n }
func (h *hotRegion) Silent(int) bool { return false }
func (h *hotRegion) Dest(src int, _ int64, rng *rand.Rand) (int, bool) {
	if rng.Float64() < h.frac {
		r := len(h.region)
		if !h.in[src] {
			return int(h.region[rng.IntN(r)]), true
		}
		if r > 1 {
			// Uniform over the region without src.
			i := rng.IntN(r - 1)
			if int(h.region[i]) >= src {
				i++
			}
			return int(h.region[i]), true
		}
	}
	return uniformOther(src, h.n, rng), true
}

// Region returns the hosts of the hot region in increasing order.
func (h *hotRegion) Region() []int {
	out := make([]int, len(h.region))
	for i, v := range h.region {
		out[i] = int(v)
	}
	return out
}
