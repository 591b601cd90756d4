package units

import (
	"fmt"
	"strings"
)

// Picoseconds per unit of the duration syntax.
const (
	Picosecond  int64 = 1
	Nanosecond        = 1000 * Picosecond
	Microsecond       = 1000 * Nanosecond
	Millisecond       = 1000 * Microsecond
	Second            = 1000 * Millisecond
	Minute            = 60 * Second
	Hour              = 60 * Minute
)

// durationUnits lists the accepted duration units, longest spelling first
// where one is a prefix of another ("ms" before "m").
var durationUnits = []struct {
	name  string
	picos uint64
}{
	{"ps", 1},
	{"ns", uint64(Nanosecond)},
	{"us", uint64(Microsecond)},
	{"µs", uint64(Microsecond)}, // U+00B5 micro sign
	{"μs", uint64(Microsecond)}, // U+03BC Greek mu
	{"ms", uint64(Millisecond)},
	{"s", uint64(Second)},
	{"m", uint64(Minute)},
	{"h", uint64(Hour)},
}

// ParsePicos parses a non-negative duration in Go duration syntax extended
// with "ps" and returns it in picoseconds: "100ns", "1.5us", "200µs", "1ms",
// "10ps", "1h2m3s", "0". Every number but a lone "0" needs a unit. Fractions
// are exact decimals; a result that is not a whole number of picoseconds or
// does not fit in int64 (about 106 days) is an error.
func ParsePicos(s string) (int64, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration (want e.g. \"100ns\")")
	}
	if err := checkSign(s, "duration"); err != nil {
		return 0, err
	}
	if s == "0" {
		return 0, nil
	}
	var total int64
	for s != "" {
		d, rest, err := scanDecimal(s)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %v", in, err)
		}
		var unit uint64
		for _, u := range durationUnits {
			if strings.HasPrefix(rest, u.name) {
				unit, rest = u.picos, rest[len(u.name):]
				break
			}
		}
		if unit == 0 {
			if rest == "" {
				return 0, fmt.Errorf("duration %q: missing unit (ps, ns, us, ms, s, m, h)", in)
			}
			return 0, fmt.Errorf("duration %q: unknown unit at %q (want ps, ns, us, µs, ms, s, m, h)", in, rest)
		}
		v, err := d.scale(unit)
		if err != nil {
			return 0, fmt.Errorf("duration %q: %v (picoseconds)", in, err)
		}
		if total > maxInt64-v {
			return 0, fmt.Errorf("duration %q: value out of range (picoseconds)", in)
		}
		total += v
		s = rest
	}
	return total, nil
}

const maxInt64 = 1<<63 - 1

var formatUnits = []struct {
	name  string
	picos uint64
}{{"s", uint64(Second)}, {"ms", uint64(Millisecond)}, {"us", uint64(Microsecond)}, {"ns", uint64(Nanosecond)}}

// FormatPicos formats a duration in picoseconds exactly, with the largest
// unit among s, ms, us, ns not above it and a decimal fraction when needed:
// 100000 → "100ns", 1500000 → "1.5us", 150 → "150ps", 0 → "0s". The result
// parses back to the same value with ParsePicos (negative values, which
// ParsePicos refuses, are formatted with a leading "-").
func FormatPicos(ps int64) string {
	sign, m := abs(ps)
	if m == 0 {
		return "0s"
	}
	for _, u := range formatUnits {
		if m >= u.picos {
			return sign + formatScaled(m, u.picos, u.name)
		}
	}
	return fmt.Sprintf("%s%dps", sign, m)
}
