package traffic

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fabemu/fabemu/internal/units"
)

// PatternSpec describes a destination pattern independently of the host
// count. Start from DefaultSpec or ParsePattern; NewPattern takes the fields
// literally.
type PatternSpec struct {
	// Name is the canonical pattern name: uniform, bitrev, butterfly,
	// complement, shuffle, transpose, hotspot, hotregion, corner1, corner2,
	// oddeven, halves.
	Name string
	// Fraction of packets sent to the hot node (hotspot, in (0, 1]) or the
	// hot region (hotregion, in (0, 1]).
	Fraction float64
	// Node is the hot node (hotspot, corner1, corner2); negative selects
	// the default: 0 for hotspot, N/2 for the corner cases.
	Node int
	// From and Until bound the time window, in picoseconds, in which a
	// hotspot's hot fraction applies; Until = 0 means no end.
	From, Until int64
	// Fixed says what fixed points of a bit permutation do.
	Fixed FixedPoint
	// Cols is the row length of the host layout for hotregion; 0 picks it
	// (see hotRegionHosts).
	Cols int
	// Scale multiplies the corner cases' 800 µs and 970 µs (default 1;
	// 0 is read as 1).
	Scale float64
	// Stride selects the corner cases' hot sources: false = the last
	// quarter of hosts, true = every host h with h mod 4 = 3.
	Stride bool
}

// Pattern names, canonical spelling.
const (
	NameUniform    = "uniform"
	NameBitrev     = "bitrev"
	NameButterfly  = "butterfly"
	NameComplement = "complement"
	NameShuffle    = "shuffle"
	NameTranspose  = "transpose"
	NameHotspot    = "hotspot"
	NameHotregion  = "hotregion"
	NameCorner1    = "corner1"
	NameCorner2    = "corner2"
	NameOddEven    = "oddeven"
	NameHalves     = "halves"
)

// PatternNames lists the canonical names in documentation order.
var PatternNames = []string{NameUniform, NameBitrev, NameButterfly, NameComplement, NameShuffle,
	NameTranspose, NameHotspot, NameHotregion, NameCorner1, NameCorner2, NameOddEven, NameHalves}

var nameAliases = map[string]string{
	"random":          NameUniform,
	"bit-reversal":    NameBitrev,
	"bitreversal":     NameBitrev,
	"bit_reversal":    NameBitrev,
	"perfect-shuffle": NameShuffle,
	"perfectshuffle":  NameShuffle,
	"perfect_shuffle": NameShuffle,
	"hot-spot":        NameHotspot,
	"hot-region":      NameHotregion,
	"corner-case-1":   NameCorner1,
	"corner-case-2":   NameCorner2,
}

// Defaults.
const (
	// DefaultHotspotFraction is paper 003 §2.9's "10% of traffic is
	// injected to a hot-spot".
	DefaultHotspotFraction = 0.1
	// DefaultHotregionFraction is paper 002 §3's "25% of the packets".
	DefaultHotregionFraction = 0.25
)

var permKinds = map[string]PermKind{
	NameBitrev: BitReversal, NameButterfly: Butterfly, NameComplement: Complement,
	NameShuffle: PerfectShuffle, NameTranspose: Transpose,
}

func canonicalName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if a, ok := nameAliases[s]; ok {
		return a, true
	}
	for _, n := range PatternNames {
		if s == n {
			return n, true
		}
	}
	return s, false
}

// DefaultSpec returns the spec of the named pattern with its documented
// defaults.
func DefaultSpec(name string) (PatternSpec, error) {
	n, ok := canonicalName(name)
	if !ok {
		return PatternSpec{}, fmt.Errorf("unknown traffic pattern %q (want one of %s)", name, strings.Join(PatternNames, ", "))
	}
	s := PatternSpec{Name: n, Node: -1}
	switch n {
	case NameHotspot:
		s.Fraction = DefaultHotspotFraction
	case NameHotregion:
		s.Fraction = DefaultHotregionFraction
	case NameCorner1, NameCorner2:
		s.Scale = 1
	}
	return s, nil
}

// ParsePattern parses a pattern spec as written on the command line:
//
//	spec := name [":" arg] ["@" node] { "," key "=" value }
//
// name is one of PatternNames (case-insensitive; aliases random,
// bit-reversal, perfect-shuffle, hot-spot, hot-region are accepted). arg is
// the hot fraction for hotspot and hotregion, the time scale for corner1
// and corner2. node is the hot node of hotspot and the corner cases. Keys:
//
//	fixed=silent|uniform  bit permutations: what fixed points do
//	from=DUR, until=DUR   hotspot: window of the hot fraction ("25us")
//	cols=N                hotregion: hosts per row of the layout
//	sources=last|stride   corner cases: which quarter of hosts is hot
//
// Examples: "uniform", "bitrev,fixed=uniform", "hotspot:0.2@5",
// "hotspot:0.5@2,from=25us,until=26us", "hotregion:0.25,cols=16",
// "corner1", "corner2:0.1@32,sources=stride".
func ParsePattern(s string) (PatternSpec, error) {
	in := s
	fail := func(format string, a ...any) (PatternSpec, error) {
		return PatternSpec{}, fmt.Errorf("traffic pattern %q: %s", in, fmt.Sprintf(format, a...))
	}
	head, opts, _ := strings.Cut(s, ",")
	head, nodeStr, hasNode := strings.Cut(head, "@")
	name, arg, hasArg := strings.Cut(head, ":")
	spec, err := DefaultSpec(name)
	if err != nil {
		return fail("%v", err)
	}
	_, isPerm := permKinds[spec.Name]
	isCorner := spec.Name == NameCorner1 || spec.Name == NameCorner2
	if hasArg {
		v, err := parseFloat(arg)
		if err != nil {
			return fail("bad argument %q after ':': %v", arg, err)
		}
		switch {
		case spec.Name == NameHotspot || spec.Name == NameHotregion:
			spec.Fraction = v
		case isCorner:
			if v <= 0 {
				return fail("time scale %v must be positive", v)
			}
			spec.Scale = v
		default:
			return fail("pattern %s takes no ':' argument", spec.Name)
		}
	}
	if hasNode {
		if spec.Name != NameHotspot && !isCorner {
			return fail("pattern %s takes no '@node'", spec.Name)
		}
		v, err := strconv.Atoi(strings.TrimSpace(nodeStr))
		if err != nil || v < 0 {
			return fail("bad hot node %q: want a host number >= 0", nodeStr)
		}
		spec.Node = v
	}
	if opts != "" {
		seen := map[string]bool{}
		for _, kv := range strings.Split(opts, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.ToLower(strings.TrimSpace(k))
			v = strings.TrimSpace(v)
			if !ok {
				return fail("option %q is not key=value", kv)
			}
			if seen[k] {
				return fail("option %s given twice", k)
			}
			seen[k] = true
			switch {
			case k == "fixed" && isPerm:
				switch strings.ToLower(v) {
				case "silent":
					spec.Fixed = FixedSilent
				case "uniform":
					spec.Fixed = FixedUniform
				default:
					return fail("fixed=%q: want silent or uniform", v)
				}
			case (k == "from" || k == "until") && spec.Name == NameHotspot:
				d, err := units.ParsePicos(v)
				if err != nil {
					return fail("%s: %v", k, err)
				}
				if k == "from" {
					spec.From = d
				} else {
					spec.Until = d
				}
			case k == "cols" && spec.Name == NameHotregion:
				c, err := strconv.Atoi(v)
				if err != nil || c < 1 {
					return fail("cols=%q: want a positive integer", v)
				}
				spec.Cols = c
			case k == "sources" && isCorner:
				switch strings.ToLower(v) {
				case "last":
					spec.Stride = false
				case "stride":
					spec.Stride = true
				default:
					return fail("sources=%q: want last or stride", v)
				}
			default:
				return fail("unknown option %q for pattern %s", k, spec.Name)
			}
		}
	}
	if err := spec.Validate(); err != nil {
		return fail("%v", err)
	}
	return spec, nil
}

// parseFloat parses a finite decimal number.
func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number")
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a finite number")
	}
	return v, nil
}

// Validate checks the fields that do not depend on the host count.
func (s PatternSpec) Validate() error {
	name, ok := canonicalName(s.Name)
	if !ok || name != s.Name {
		return fmt.Errorf("unknown traffic pattern %q (want one of %s)", s.Name, strings.Join(PatternNames, ", "))
	}
	switch name {
	case NameHotspot, NameHotregion:
		if !(s.Fraction > 0 && s.Fraction <= 1) {
			return fmt.Errorf("%s fraction %v out of range (0, 1]", name, s.Fraction)
		}
	}
	if name == NameHotspot {
		if s.From < 0 || s.Until < 0 {
			return fmt.Errorf("hotspot window times must not be negative")
		}
		if s.Until != 0 && s.Until <= s.From {
			return fmt.Errorf("hotspot window until=%s is not after from=%s", units.FormatPicos(s.Until), units.FormatPicos(s.From))
		}
	}
	if name == NameCorner1 || name == NameCorner2 {
		if s.Scale < 0 || math.IsNaN(s.Scale) || s.Scale > 1e6 {
			return fmt.Errorf("%s time scale %v out of range (0, 1e6]", name, s.Scale)
		}
	}
	if s.Cols < 0 {
		return fmt.Errorf("hotregion cols %d is negative", s.Cols)
	}
	return nil
}

// String returns the spec in ParsePattern syntax, canonical form (only
// non-default parts are written).
func (s PatternSpec) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	isCorner := s.Name == NameCorner1 || s.Name == NameCorner2
	switch {
	case s.Name == NameHotspot && s.Fraction != DefaultHotspotFraction,
		s.Name == NameHotregion && s.Fraction != DefaultHotregionFraction:
		b.WriteString(":" + strconv.FormatFloat(s.Fraction, 'g', -1, 64))
	case isCorner && s.Scale != 0 && s.Scale != 1:
		b.WriteString(":" + strconv.FormatFloat(s.Scale, 'g', -1, 64))
	}
	if (s.Name == NameHotspot || isCorner) && s.Node >= 0 {
		b.WriteString("@" + strconv.Itoa(s.Node))
	}
	if _, ok := permKinds[s.Name]; ok && s.Fixed == FixedUniform {
		b.WriteString(",fixed=uniform")
	}
	if s.Name == NameHotspot {
		if s.From != 0 {
			b.WriteString(",from=" + units.FormatPicos(s.From))
		}
		if s.Until != 0 {
			b.WriteString(",until=" + units.FormatPicos(s.Until))
		}
	}
	if s.Name == NameHotregion && s.Cols != 0 {
		b.WriteString(",cols=" + strconv.Itoa(s.Cols))
	}
	if isCorner && s.Stride {
		b.WriteString(",sources=stride")
	}
	return b.String()
}

// NewPattern builds the pattern for n hosts. Errors name the pattern and
// what does not fit (for example a bit permutation on a host count that is
// not a power of two).
func NewPattern(spec PatternSpec, n int) (Pattern, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, fmt.Errorf("pattern %s needs at least 2 hosts, got %d", spec.Name, n)
	}
	name := spec.String()
	if k, ok := permKinds[spec.Name]; ok {
		return newPermutation(k, n, spec.Fixed)
	}
	switch spec.Name {
	case NameUniform:
		return uniform{n: n}, nil
	case NameOddEven, NameHalves:
		if n < 4 || n%2 != 0 {
			return nil, fmt.Errorf("pattern %s needs an even host count of at least 4, got %d", spec.Name, n)
		}
		return split{n: n, halves: spec.Name == NameHalves}, nil
	case NameHotspot:
		node := spec.Node
		if node < 0 {
			node = 0
		}
		if node >= n {
			return nil, fmt.Errorf("hotspot node %d out of range 0..%d", node, n-1)
		}
		return &hotSpot{n: n, frac: spec.Fraction, node: node, from: spec.From, until: spec.Until, name: name}, nil
	case NameHotregion:
		region, err := hotRegionHosts(n, spec.Cols)
		if err != nil {
			return nil, err
		}
		in := make([]bool, n)
		for _, h := range region {
			in[h] = true
		}
		return &hotRegion{n: n, frac: spec.Fraction, region: region, in: in, name: name}, nil
	case NameCorner1, NameCorner2:
		if n < 8 || n%4 != 0 {
			return nil, fmt.Errorf("%s needs a host count divisible by 4 and at least 8 (paper 000 uses 64, 256, 512), got %d", spec.Name, n)
		}
		caseNo := 1
		if spec.Name == NameCorner2 {
			caseNo = 2
		}
		node := spec.Node
		if node < 0 {
			node = n / 2
		}
		scale := spec.Scale
		if scale == 0 {
			scale = 1
		}
		c := newCorner(caseNo, n, node, spec.Stride, scale, name)
		if node >= n {
			return nil, fmt.Errorf("%s hot node %d out of range 0..%d", spec.Name, node, n-1)
		}
		if c.isHot(node) {
			return nil, fmt.Errorf("%s hot node %d is one of the hot sources; pick a node outside them", spec.Name, node)
		}
		if c.start >= c.end {
			return nil, fmt.Errorf("%s time scale %v leaves an empty hot window", spec.Name, scale)
		}
		return c, nil
	}
	return nil, fmt.Errorf("unknown traffic pattern %q", spec.Name)
}
