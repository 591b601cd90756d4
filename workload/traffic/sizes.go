package traffic

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/fabemu/fabemu/internal/units"
)

// Size bounds for message payloads.
const (
	MaxSize       = 1 << 30 // bytes
	maxSizeValues = 1024
)

// Sizes is a distribution of message payload sizes in bytes: one fixed
// size or a weighted mix. The zero value is invalid; use FixedSize or
// ParseSizes.
type Sizes struct {
	sizes []int
	cum   []float64 // cumulative probabilities, last = 1
	w     []float64 // normalised weights
}

// FixedSize returns the distribution that always yields size bytes.
func FixedSize(size int) (Sizes, error) {
	if size < 1 || size > MaxSize {
		return Sizes{}, fmt.Errorf("message size %d bytes out of range 1..%d", size, MaxSize)
	}
	return Sizes{sizes: []int{size}, cum: []float64{1}, w: []float64{1}}, nil
}

// ParseSizes parses a size distribution:
//
//	sizes := size [":" weight] { "," size [":" weight] }
//
// size is a byte count ("256", "4KiB", "4KB" = 4096); weight a positive
// number, 1 when omitted; weights are normalised. Examples: "256",
// "256:0.5,4096:0.5", "64:9,1500:1".
func ParseSizes(s string) (Sizes, error) {
	in := s
	fail := func(format string, a ...any) (Sizes, error) {
		return Sizes{}, fmt.Errorf("message sizes %q: %s", in, fmt.Sprintf(format, a...))
	}
	if strings.TrimSpace(s) == "" {
		return fail("empty (want e.g. \"256\" or \"256:0.5,4096:0.5\")")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxSizeValues {
		return fail("more than %d entries", maxSizeValues)
	}
	var z Sizes
	total := 0.0
	for i, p := range parts {
		sz, wt, hasW := strings.Cut(p, ":")
		b, err := units.ParseBytes(sz)
		if err != nil {
			return fail("entry %d: %v", i+1, err)
		}
		if b < 1 || b > MaxSize {
			return fail("entry %d: size %d bytes out of range 1..%d", i+1, int64(b), MaxSize)
		}
		w := 1.0
		if hasW {
			w, err = parseFloat(wt)
			if err != nil || w <= 0 || w > 1e12 {
				return fail("entry %d: weight %q must be a positive number", i+1, wt)
			}
		}
		z.sizes = append(z.sizes, int(b))
		z.w = append(z.w, w)
		total += w
	}
	acc := 0.0
	for i := range z.w {
		z.w[i] /= total
		acc += z.w[i]
		z.cum = append(z.cum, acc)
	}
	z.cum[len(z.cum)-1] = 1
	return z, nil
}

// Valid reports whether z holds at least one size.
func (z Sizes) Valid() bool { return len(z.sizes) > 0 }

// Max is the largest message size of the mix, in payload bytes.
func (z Sizes) Max() int {
	m := 0
	for _, s := range z.sizes {
		m = max(m, s)
	}
	return m
}

// Draw returns one payload size. A fixed size consumes no randomness.
func (z Sizes) Draw(rng *rand.Rand) int {
	if len(z.sizes) == 1 {
		return z.sizes[0]
	}
	u := rng.Float64()
	for i, c := range z.cum {
		if u < c {
			return z.sizes[i]
		}
	}
	return z.sizes[len(z.sizes)-1]
}

// Mean returns the mean payload in bytes.
func (z Sizes) Mean() float64 {
	m := 0.0
	for i, s := range z.sizes {
		m += z.w[i] * float64(s)
	}
	return m
}

// MeanWireBytes returns the mean bytes on the wire per message on link l.
func (z Sizes) MeanWireBytes(l Link) float64 {
	m := 0.0
	for i, s := range z.sizes {
		m += z.w[i] * float64(l.WireBytes(s))
	}
	return m
}

// MeanPackets returns the mean number of packets per message on link l
// (a message above the MTU travels as several).
func (z Sizes) MeanPackets(l Link) float64 {
	m := 0.0
	for i, s := range z.sizes {
		n := 1
		if l.MTU > 0 && s > l.MTU {
			n = (s + l.MTU - 1) / l.MTU
		}
		m += z.w[i] * float64(n)
	}
	return m
}

// MeanPicos returns the mean serialization time of one message on link l,
// in picoseconds: the packet time the load definition divides by.
func (z Sizes) MeanPicos(l Link) float64 { return l.Picos(1) * z.MeanWireBytes(l) }

// String returns the distribution in ParseSizes syntax (normalised
// weights).
func (z Sizes) String() string {
	if len(z.sizes) == 1 {
		return strconv.Itoa(z.sizes[0])
	}
	parts := make([]string, len(z.sizes))
	for i, s := range z.sizes {
		parts[i] = strconv.Itoa(s) + ":" + strconv.FormatFloat(z.w[i], 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}
