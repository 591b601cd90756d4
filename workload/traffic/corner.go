package traffic

import (
	"math"
	"math/rand/v2"

	"github.com/fabemu/fabemu/internal/units"
)

// Corner cases of paper 000 (RECN), §4.2, Table 1, quoted:
//
//	# Srcs.  Dst.    Injection Rate (%)  Traffic Start Time  Traffic End Time
//	Corner case 1
//	48       Random  50%                 0                   Sim. end
//	16       32      100%                800 µs              970 µs
//	Corner case 2
//	48       Random  100%                0                   Sim. end
//	16       32      100%                800 µs              970 µs
//
// "For each corner case, there are 48 sources injecting traffic to random
// destinations during the entire simulation. These nodes inject traffic at
// the full link rate for corner case 2, and 50% of the full rate for corner
// case 1. In both cases, a congestion tree is formed from time 800 µs to
// time 970 µs." The table is for 64 hosts. §4.4 scales the case to larger
// networks by keeping the proportions and the duration: "192 sources
// sending random traffic at the full link rate and suddenly the remaining
// 64 sources start injecting to the same destination (hotspot destination)
// at the full link rate during 170 µs" (256 hosts; 384 + 128 for 512).
//
// Our reading, for N hosts (N divisible by 4, N >= 8):
//   - N/4 hot sources, 3N/4 random sources (16/48 for N = 64, as §4.4).
//   - The table does not say which 16 hosts are hot. By default they are
//     the last quarter, hosts 3N/4 .. N-1 ("sources=last"); "sources=stride"
//     takes every fourth host, h ≡ 3 (mod 4), which spreads them over every
//     leaf switch of a MIN with 4 hosts per switch. Neither contains the hot
//     node.
//   - The hot node defaults to N/2 (32 for 64 hosts, the table's value).
//   - Random sources send to a host drawn uniformly among all others (the
//     hot node included) at 50 % (case 1) or 100 % (case 2) of the link rate
//     from time 0 to the end of the run.
//   - Hot sources send nothing before 800 µs, every packet to the hot node
//     at 100 % of the link rate in [800 µs, 970 µs), and nothing afterwards.
//   - Times are as the table gives them (the paper keeps 170 µs for the
//     larger networks); the optional scale multiplies both times, e.g. 0.1
//     gives 80 µs .. 97 µs for short runs.
//
// Loads are absolute (fractions of the link rate) and replace any
// configured load: the pattern is Scheduled.
const (
	cornerStart int64 = 800 * units.Microsecond
	cornerEnd   int64 = 970 * units.Microsecond
)

type corner struct {
	caseNo     int // 1 or 2
	n          int
	node       int
	stride     bool
	start, end int64
	name       string
	random     Phases
	hot        Phases
}

func newCorner(caseNo, n, node int, stride bool, scale float64, name string) *corner {
	c := &corner{caseNo: caseNo, n: n, node: node, stride: stride, name: name}
	c.start = int64(math.Round(float64(cornerStart) * scale))
	c.end = int64(math.Round(float64(cornerEnd) * scale))
	load := 0.5
	if caseNo == 2 {
		load = 1.0
	}
	c.random = Phases{List: []Phase{{Duration: Forever, Load: load}}}
	c.hot = Phases{List: []Phase{{Duration: c.start, Load: 0}, {Duration: c.end - c.start, Load: 1.0}}}
	return c
}

// isHot reports whether src is one of the N/4 hot sources.
func (c *corner) isHot(src int) bool {
	if c.stride {
		return src%4 == 3
	}
	return src >= c.n-c.n/4
}

func (c *corner) Name() string    { return c.name }
func (c *corner) Hosts() int      { return c.n }
func (c *corner) Silent(int) bool { return false }

func (c *corner) Dest(src int, now int64, rng *rand.Rand) (int, bool) {
	if !c.isHot(src) {
		return uniformOther(src, c.n, rng), true
	}
	if now >= c.start && now < c.end {
		return c.node, true
	}
	return -1, false
}

// Schedule returns src's Table 1 row as load phases.
func (c *corner) Schedule(src int) Phases {
	if c.isHot(src) {
		return c.hot
	}
	return c.random
}

// HotWindow returns the interval [start, end) in which the hot sources
// send, in picoseconds.
func (c *corner) HotWindow() (start, end int64) { return c.start, c.end }
