package reorder

import (
	"testing"
	"testing/quick"
)

func TestSpaceArithmetic(t *testing.T) {
	s24 := Space{}
	s4 := Space{Bits: 4}
	s32 := Space{Bits: 32}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"default size", s24.Size(), uint64(1 << 24)},
		{"default half", s24.Half(), uint32(1 << 23)},
		{"add wraps", s24.Add(0xFFFFFE, 3), PSN(1)},
		{"next wraps", s24.Next(0xFFFFFF), PSN(0)},
		{"prev wraps", s24.Prev(0), PSN(0xFFFFFF)},
		{"distance across wrap", s24.Distance(0xFFFFF0, 0x10), uint32(0x20)},
		{"sub across wrap", s24.Sub(0x10, 0xFFFFF0), int64(0x20)},
		{"sub negative", s24.Sub(0xFFFFF0, 0x10), int64(-0x20)},
		{"sub at half is negative", s4.Sub(8, 0), int64(-8)},
		{"less across wrap", s24.Less(0xFFFFFF, 0), true},
		{"not less backwards", s24.Less(0, 0xFFFFFF), false},
		{"not less equal", s24.Less(5, 5), false},
		{"half apart: neither", s4.Less(0, 8) || s4.Less(8, 0), false},
		{"4-bit wrap", s4.Add(15, 1), PSN(0)},
		{"4-bit less", s4.Less(14, 2), true},
		{"32-bit next wraps", s32.Next(0xFFFFFFFF), PSN(0)},
		{"32-bit less", s32.Less(0xFFFFFFFF, 0), true},
		{"wrap masks", s4.Wrap(0x35), PSN(5)},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestSpaceValidate(t *testing.T) {
	for _, tc := range []struct {
		bits uint
		ok   bool
	}{{0, true}, {1, false}, {2, true}, {24, true}, {32, true}, {33, false}} {
		if err := (Space{Bits: tc.bits}).Validate(); (err == nil) != tc.ok {
			t.Errorf("bits %d: err = %v, want ok=%v", tc.bits, err, tc.ok)
		}
	}
}

// Properties of RFC 1982 arithmetic for every width.
func TestSpaceProperties(t *testing.T) {
	f := func(bits uint8, a, b uint32, n uint16) bool {
		s := Space{Bits: uint(bits%31) + 2}
		pa, pb := s.Wrap(PSN(a)), s.Wrap(PSN(b))
		// Add then Sub gives the (small) distance back.
		k := uint32(n) % s.Half()
		if s.Sub(s.Add(pa, k), pa) != int64(k) {
			return false
		}
		// Antisymmetry except at exactly half.
		if s.Distance(pa, pb) != s.Half() && s.Less(pa, pb) == s.Less(pb, pa) && pa != pb {
			return false
		}
		// Sub is consistent with Less.
		if s.Less(pa, pb) != (s.Sub(pb, pa) > 0) {
			return false
		}
		return s.Prev(s.Next(pa)) == pa
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}
