package report

import (
	"math"
	"strconv"
	"strings"
)

// DefaultSigDigits is the number of significant digits [FormatFloat] uses
// when asked for zero or fewer.
const DefaultSigDigits = 4

// FormatFloat formats v for people: sig significant digits (DefaultSigDigits
// if sig <= 0), trailing zeros after the decimal point dropped, and
// thousands separators in the integer part. Values whose integer part has
// at least sig digits are rounded to an integer rather than shown in
// exponent notation, so a latency of 1234567.8 ns reads "1,234,568".
// Magnitudes below 1e-4 use exponent notation ("1.5e-07"). NaN and the
// infinities come out as "NaN", "+Inf" and "-Inf".
func FormatFloat(v float64, sig int) string {
	if sig <= 0 {
		sig = DefaultSigDigits
	}
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0"
	}
	a := math.Abs(v)
	if a < 1e-4 {
		s := strconv.FormatFloat(v, 'e', sig-1, 64)
		mant, exp, _ := strings.Cut(s, "e")
		return trimZeros(mant) + "e" + exp
	}
	// Round to sig significant digits first, then decide how many
	// decimals remain: rounding can carry into a new digit (9.9996 -> 10).
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'e', sig-1, 64), 64)
	if err != nil { // cannot happen for a finite value
		r = v
	}
	intDigits := int(math.Floor(math.Log10(math.Abs(r)))) + 1
	decimals := max(sig-intDigits, 0)
	if a >= 1e15 {
		// Beyond integers a float64 holds exactly; keep it readable.
		return strconv.FormatFloat(v, 'e', sig-1, 64)
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if decimals > 0 {
		s = trimZeros(s)
	}
	return groupThousands(s)
}

// FormatInt formats n in decimal with thousands separators: "1,234,567".
func FormatInt(n int64) string {
	return groupThousands(strconv.FormatInt(n, 10))
}

// FormatUint formats n in decimal with thousands separators.
func FormatUint(n uint64) string {
	return groupThousands(strconv.FormatUint(n, 10))
}

// FormatPercent formats a ratio (0.1234) as a percentage with three
// significant digits ("12.3%"). Small ratios keep their digits
// (0.000123 -> "0.0123%") so a small waste-traffic figure does not read as
// zero.
func FormatPercent(ratio float64) string {
	return FormatFloat(ratio*100, 3) + "%"
}

// trimZeros drops trailing zeros after a decimal point, and the point if
// nothing remains after it.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// groupThousands inserts commas into the integer part of a decimal number
// string (optional sign, digits, optional fraction).
func groupThousands(s string) string {
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		sign, s = s[:1], s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if len(intPart) <= 3 {
		return sign + s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/3 + 1)
	b.WriteString(sign)
	head := len(intPart) % 3
	if head > 0 {
		b.WriteString(intPart[:head])
	}
	for i := head; i < len(intPart); i += 3 {
		if b.Len() > len(sign) {
			b.WriteByte(',')
		}
		b.WriteString(intPart[i : i+3])
	}
	if hasFrac {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}
