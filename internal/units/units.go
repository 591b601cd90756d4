// Package units owns the textual form of the physical quantities in fabemu's
// configuration: byte sizes, bit rates and durations in picoseconds.
//
// Conventions (DESIGN principle 4, "units in the type"):
//
//   - Sizes are whole bytes (type Bytes). The prefixes K, M, G, T are BINARY
//     whether written KiB or KB: "8KB", "8 KB", "8K" and "8KiB" all mean 8192
//     bytes. The seed papers write "8 KB" for 8192-byte buffers and "128 KB"
//     for 131072-byte memories, so a decimal reading would silently change
//     their setups. The unit letter must be an upper-case B ("8kb" is refused
//     because a lower-case b means bits).
//   - Rates are whole bits per second (type BitRate). Prefixes are DECIMAL, as
//     for every link rate in the papers: "2.5Gbps" = "2.5Gb/s" = "2.5G" =
//     2 500 000 000 b/s. Byte rates are accepted with an upper-case B
//     ("1GB/s", "1GBps" = 8 Gb/s, as the RECN-IQ setup is written).
//   - Durations are whole picoseconds (int64), written in Go duration syntax
//     extended with "ps": "100ns", "1.5us", "200µs", "1ms", "10ps", "1h2m",
//     "0". Decimal fractions are parsed exactly as decimals, never through a
//     float; a value finer than 1 ps is an error, not a rounding.
//
// Negative sizes, rates and durations are refused: no configuration knob
// means anything by them. Formatting is exact and round-trips through the
// parsers.
package units

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// decimal is a non-negative decimal number split at the point: whole is the
// integer part, frac the digits after the point (without trailing zeros).
type decimal struct {
	whole uint64
	frac  string
}

// scanDecimal reads a non-negative decimal number ("12", "1.5", ".5", "3.")
// from the start of s and returns it with the rest of s.
func scanDecimal(s string) (decimal, string, error) {
	i := 0
	var d decimal
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		hi, lo := bits.Mul64(d.whole, 10)
		lo, carry := bits.Add64(lo, uint64(s[i]-'0'), 0)
		if hi != 0 || carry != 0 {
			return d, s, errors.New("number too large")
		}
		d.whole = lo
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
		d.frac = strings.TrimRight(s[start:i], "0")
	}
	if digits == 0 {
		return d, s, errors.New("missing number")
	}
	return d, s[i:], nil
}

// scale returns d × unit exactly, or an error if the product is not a whole
// number or does not fit in int64.
func (d decimal) scale(unit uint64) (int64, error) {
	hi, v := bits.Mul64(d.whole, unit)
	if hi != 0 || v > math.MaxInt64 {
		return 0, errors.New("value out of range")
	}
	if d.frac == "" {
		return int64(v), nil
	}
	// frac/10^n × unit must be a whole number: unit must be divisible by
	// 10^n / gcd. Work digit by digit to stay exact.
	if len(d.frac) > 19 {
		return 0, errors.New("too many decimal places")
	}
	f, _ := strconv.ParseUint(d.frac, 10, 64) // at most 19 digits: fits
	p := uint64(1)
	for range len(d.frac) {
		p *= 10
	}
	fhi, flo := bits.Mul64(f, unit)
	if fhi >= p { // quotient would overflow 64 bits
		return 0, errors.New("value out of range")
	}
	q, r := bits.Div64(fhi, flo, p)
	if r != 0 {
		return 0, errors.New("not a whole number of the base unit")
	}
	sum, carry := bits.Add64(v, q, 0)
	if carry != 0 || sum > math.MaxInt64 {
		return 0, errors.New("value out of range")
	}
	return int64(sum), nil
}

// formatScaled writes v/unit as an exact decimal followed by suffix.
func formatScaled(v uint64, unit uint64, suffix string) string {
	s := strconv.FormatUint(v/unit, 10)
	if r := v % unit; r != 0 {
		w := len(strconv.FormatUint(unit, 10)) - 1 // unit is a power of 10
		fs := strconv.FormatUint(r, 10)
		fs = strings.Repeat("0", w-len(fs)) + fs
		s += "." + strings.TrimRight(fs, "0")
	}
	return s + suffix
}

// abs splits v into sign and magnitude without overflowing on MinInt64.
func abs(v int64) (string, uint64) {
	if v < 0 {
		return "-", uint64(-(v + 1)) + 1
	}
	return "", uint64(v)
}

// checkSign refuses a leading sign with a clear message.
func checkSign(s, what string) error {
	if strings.HasPrefix(s, "-") {
		return fmt.Errorf("negative %s %q is not allowed", what, s)
	}
	if strings.HasPrefix(s, "+") {
		return fmt.Errorf("%s %q: write it without a sign", what, s)
	}
	return nil
}
