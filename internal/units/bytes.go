package units

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Bytes is a size in bytes. Its text form is a number with an optional
// binary-prefixed unit: "8192", "8192B", "8KiB", "8KB", "8 KB", "1.5MiB".
// K, M, G and T mean 1024, 1024², 1024³ and 1024⁴ with or without the "i"
// (see the package documentation for why).
type Bytes int64

// Binary multipliers for sizes.
const (
	KiB Bytes = 1 << 10
	MiB Bytes = 1 << 20
	GiB Bytes = 1 << 30
	TiB Bytes = 1 << 40
)

var sizePrefixes = []struct {
	letter byte
	mult   uint64
}{{'K', 1 << 10}, {'M', 1 << 20}, {'G', 1 << 30}, {'T', 1 << 40}}

// ParseBytes parses a byte size. The result is a whole, non-negative number of
// bytes; "0.5B" or "1.0001KiB" are errors rather than roundings.
func ParseBytes(s string) (Bytes, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty size (want e.g. \"8KiB\" or \"4096\")")
	}
	if err := checkSign(s, "size"); err != nil {
		return 0, err
	}
	d, rest, err := scanDecimal(s)
	if err != nil {
		return 0, fmt.Errorf("size %q: %v", in, err)
	}
	unit, err := sizeUnit(strings.TrimSpace(rest))
	if err != nil {
		return 0, fmt.Errorf("size %q: %v", in, err)
	}
	v, err := d.scale(unit)
	if err != nil {
		return 0, fmt.Errorf("size %q: %v (bytes)", in, err)
	}
	return Bytes(v), nil
}

// sizeUnit returns the multiplier of a size unit: "", "B", "K", "KB", "KiB", ...
func sizeUnit(u string) (uint64, error) {
	if u == "" || u == "B" {
		return 1, nil
	}
	for _, p := range sizePrefixes {
		if u[0] != p.letter && u[0] != p.letter+('a'-'A') {
			continue
		}
		switch u[1:] {
		case "", "B", "iB":
			return p.mult, nil
		case "b", "ib":
			return 0, fmt.Errorf("unit %q: a lower-case b means bits; write %cB or %ciB for bytes", u, p.letter, p.letter)
		}
	}
	return 0, fmt.Errorf("unknown size unit %q (want B, KiB, MiB, GiB, TiB; KB etc. are binary too)", u)
}

// String formats b exactly with the largest binary unit that divides it
// evenly: 8192 → "8KiB", 3<<20 → "3MiB", 1536 → "1536B", 0 → "0B".
func (b Bytes) String() string {
	sign, m := abs(int64(b))
	for i := len(sizePrefixes) - 1; i >= 0; i-- {
		p := sizePrefixes[i]
		if m >= p.mult && m%p.mult == 0 {
			return fmt.Sprintf("%s%d%ciB", sign, m/p.mult, p.letter)
		}
	}
	return fmt.Sprintf("%s%dB", sign, m)
}

// ParamType names the type in `fabemu config explain`.
func (Bytes) ParamType() string { return "size" }

// MarshalText implements encoding.TextMarshaler.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseBytes.
func (b *Bytes) UnmarshalText(text []byte) error {
	v, err := ParseBytes(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalYAML implements yaml.Marshaler: the exact text form.
func (b Bytes) MarshalYAML() (any, error) { return b.String(), nil }

// UnmarshalYAML implements yaml.Unmarshaler: a scalar such as 8192 or "8KiB".
func (b *Bytes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("size: want a scalar such as 8KiB, got a %s", kindName(n.Kind))
	}
	return b.UnmarshalText([]byte(n.Value))
}

// kindName names a YAML node kind for error messages.
func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	case yaml.AliasNode:
		return "alias"
	case yaml.DocumentNode:
		return "document"
	}
	return "scalar"
}
