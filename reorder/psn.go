package reorder

import "fmt"

// DefaultPSNBits is the width of an InfiniBand packet sequence number
// (the BTH PSN field is 24 bits).
const DefaultPSNBits = 24

// PSN is a packet sequence number of one connection. Only the low Space.Bits
// bits are meaningful; every comparison goes through Space (serial-number
// arithmetic, RFC 1982), never through Go's < on the raw value.
type PSN uint32

// Space is a sequence-number space of 2^Bits values that wraps around.
// The zero value is the default 24-bit PSN space. Valid widths are 2..32.
type Space struct {
	// Bits is the PSN width in bits; 0 means DefaultPSNBits.
	Bits uint
}

// DefaultSpace returns the 24-bit PSN space.
func DefaultSpace() Space { return Space{Bits: DefaultPSNBits} }

func (s Space) bits() uint {
	if s.Bits == 0 {
		return DefaultPSNBits
	}
	return s.Bits
}

// Validate reports whether the width is usable (2..32 bits, or 0 for the default).
func (s Space) Validate() error {
	if b := s.bits(); b < 2 || b > 32 {
		return fmt.Errorf("reorder: PSN space of %d bits: width must be 2..32", s.Bits)
	}
	return nil
}

// Size is the number of distinct PSNs, 2^Bits.
func (s Space) Size() uint64 { return uint64(1) << s.bits() }

// Half is 2^(Bits-1), the largest forward distance that RFC 1982 never
// allows between two comparable numbers.
func (s Space) Half() uint32 { return uint32(uint64(1) << (s.bits() - 1)) }

// Mask is Size()-1: the PSN bits.
func (s Space) Mask() uint32 { return uint32(s.Size() - 1) }

// Wrap reduces p modulo the space (drops bits above Bits).
func (s Space) Wrap(p PSN) PSN { return p & PSN(s.Mask()) }

// Add returns p+n modulo the space (RFC 1982 §3.1 serial addition; unlike
// the RFC, any n is accepted and simply wraps).
func (s Space) Add(p PSN, n uint32) PSN { return PSN((uint32(p) + n) & s.Mask()) }

// Next is Add(p, 1).
func (s Space) Next(p PSN) PSN { return s.Add(p, 1) }

// Prev is p-1 modulo the space.
func (s Space) Prev(p PSN) PSN { return PSN((uint32(p) - 1) & s.Mask()) }

// Distance is the forward distance from one PSN to another: (to - from)
// modulo the space, in [0, Size()).
func (s Space) Distance(from, to PSN) uint32 { return (uint32(to) - uint32(from)) & s.Mask() }

// Sub is the signed serial difference a - b in [-Half, Half). A forward
// distance of exactly Half, which RFC 1982 §3.2 leaves undefined, is read
// as "a is behind b" (negative).
func (s Space) Sub(a, b PSN) int64 {
	d := s.Distance(b, a)
	if d >= s.Half() {
		return int64(d) - int64(s.Size())
	}
	return int64(d)
}

// Less reports a < b in serial-number order (RFC 1982 §3.2): the forward
// distance from a to b is in (0, Half). Two numbers exactly Half apart are
// not comparable: neither is less.
func (s Space) Less(a, b PSN) bool {
	d := s.Distance(a, b)
	return d != 0 && d < s.Half()
}
