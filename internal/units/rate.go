package units

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// BitRate is a rate in bits per second. Its text form is a number with an
// optional decimal-prefixed unit: "2.5Gbps", "2.5Gb/s", "10G", "800Mbps",
// "1GB/s" (bytes per second, × 8).
type BitRate int64

// Decimal multipliers for rates.
const (
	Kbps BitRate = 1e3
	Mbps BitRate = 1e6
	Gbps BitRate = 1e9
	Tbps BitRate = 1e12
)

var ratePrefixes = []struct {
	letter byte
	mult   uint64
}{{'K', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}}

// ParseRate parses a bit rate. Accepted units: none, "bps", "b/s" or
// "bit/s" (bits per second) and "Bps" or "B/s" (bytes per second), each
// optionally preceded by a decimal prefix K, M, G or T (either case; the
// b/B is case-sensitive), and a bare prefix such as "10G" meaning bits. The result must be a whole, non-negative number
// of bits per second.
func ParseRate(s string) (BitRate, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty rate (want e.g. \"2.5Gbps\")")
	}
	if err := checkSign(s, "rate"); err != nil {
		return 0, err
	}
	d, rest, err := scanDecimal(s)
	if err != nil {
		return 0, fmt.Errorf("rate %q: %v", in, err)
	}
	unit, err := rateUnit(strings.TrimSpace(rest))
	if err != nil {
		return 0, fmt.Errorf("rate %q: %v", in, err)
	}
	v, err := d.scale(unit)
	if err != nil {
		return 0, fmt.Errorf("rate %q: %v (bits per second)", in, err)
	}
	return BitRate(v), nil
}

// rateUnit returns the multiplier, in bits per second, of a rate unit.
func rateUnit(u string) (uint64, error) {
	mult := uint64(1)
	if u != "" {
		for _, p := range ratePrefixes {
			if u[0] == p.letter || u[0] == p.letter+('a'-'A') {
				mult, u = p.mult, u[1:]
				if u == "" { // bare prefix: "10G"
					return mult, nil
				}
				break
			}
		}
	}
	switch u {
	case "", "bps", "b/s", "bit/s":
		return mult, nil
	case "Bps", "B/s":
		return mult * 8, nil
	}
	return 0, fmt.Errorf("unknown rate unit %q (want bps, Kbps, Mbps, Gbps, Tbps, b/s forms, or B/s for bytes per second)", u)
}

// String formats r exactly with the largest decimal unit not above it:
// 2500000000 → "2.5Gbps", 800000000 → "800Mbps", 0 → "0bps".
func (r BitRate) String() string {
	sign, m := abs(int64(r))
	for i := len(ratePrefixes) - 1; i >= 0; i-- {
		p := ratePrefixes[i]
		if m >= p.mult {
			return sign + formatScaled(m, p.mult, string(p.letter)+"bps")
		}
	}
	return fmt.Sprintf("%s%dbps", sign, m)
}

// ParamType names the type in `fabemu config explain`.
func (BitRate) ParamType() string { return "rate" }

// MarshalText implements encoding.TextMarshaler.
func (r BitRate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseRate.
func (r *BitRate) UnmarshalText(text []byte) error {
	v, err := ParseRate(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// MarshalYAML implements yaml.Marshaler: the exact text form.
func (r BitRate) MarshalYAML() (any, error) { return r.String(), nil }

// UnmarshalYAML implements yaml.Unmarshaler: a scalar such as 2.5Gbps.
func (r *BitRate) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("rate: want a scalar such as 2.5Gbps, got a %s", kindName(n.Kind))
	}
	return r.UnmarshalText([]byte(n.Value))
}
