package traffic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Never is the creation time of a message that will not be created: a
// process at load 0, or past the end of a finite schedule.
const Never int64 = math.MaxInt64

// ProcessKind names an injection process.
type ProcessKind int

const (
	// Bernoulli: time is cut in slots of one mean message time on the host
	// link; a message is created at the start of each slot with
	// probability load (paper 002 §3 item 4). Loads above 1 use
	// m = ceil(load) sub-slots per message time, each with probability
	// load/m, so the mean rate stays load × capacity.
	Bernoulli ProcessKind = iota
	// Exponential: independent exponential inter-arrival times with mean
	// message time / load, i.e. a Poisson process (paper 001 §4.1: "Each
	// node generates messages independently, according to an exponential
	// distribution").
	Exponential
	// Periodic: one message every message time / load, deterministically.
	Periodic
)

var processNames = [...]string{"bernoulli", "exponential", "periodic"}

func (k ProcessKind) String() string {
	if k < 0 || int(k) >= len(processNames) {
		return fmt.Sprintf("ProcessKind(%d)", int(k))
	}
	return processNames[k]
}

// ParseProcess parses a process name: bernoulli, exponential (alias
// poisson, exp) or periodic (alias cbr).
func ParseProcess(s string) (ProcessKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bernoulli":
		return Bernoulli, nil
	case "exponential", "exp", "poisson":
		return Exponential, nil
	case "periodic", "cbr":
		return Periodic, nil
	}
	return 0, fmt.Errorf("unknown injection process %q (want bernoulli, exponential or periodic)", s)
}

// Process generates message creation times for one host, in picoseconds.
// Implementations are immutable and allocation-free; randomness comes from
// rng only.
type Process interface {
	// First returns the first creation time at or after from (from >= 0).
	First(from int64, rng *rand.Rand) int64
	// Next returns the creation time that follows one at prev: strictly
	// after prev for slotted and periodic processes, at or after prev for
	// the exponential one (the gap is rounded to the picosecond). Never
	// means no more messages.
	Next(prev int64, rng *rand.Rand) int64
}

// NewProcess returns the process of kind at a constant load, for messages
// whose mean serialization time on the host link is meanPicos (see
// Sizes.MeanPicos). Load 0 yields a process that never creates anything.
func NewProcess(kind ProcessKind, load, meanPicos float64) (Process, error) {
	if !(load >= 0 && load <= MaxLoad) {
		return nil, fmt.Errorf("offered load %v out of range 0..%v", load, MaxLoad)
	}
	if !(meanPicos > 0 && meanPicos < 1e15) {
		return nil, fmt.Errorf("mean message time %g ps out of range", meanPicos)
	}
	if load == 0 {
		return never{}, nil
	}
	switch kind {
	case Bernoulli:
		m := math.Max(1, math.Ceil(load))
		return newGrid(meanPicos/m, load/m)
	case Periodic:
		return newGrid(meanPicos/load, 1)
	case Exponential:
		return exponential{mean: meanPicos / load}, nil
	}
	return nil, fmt.Errorf("unknown injection process %v", kind)
}

// never creates nothing.
type never struct{}

func (never) First(int64, *rand.Rand) int64 { return Never }
func (never) Next(int64, *rand.Rand) int64  { return Never }

// grid is a slotted process: slot j starts at floor(j·slot) picoseconds
// (slots are aligned to time 0, so they never drift), and each slot holds
// a creation with probability p. Runs of empty slots are skipped with one
// geometric draw, so the cost per message does not grow as the load falls.
type grid struct {
	slot float64 // ps, >= 1
	p    float64
	lq   float64 // log(1-p), for p < 1
}

func newGrid(slot, p float64) (*grid, error) {
	if slot < 1 {
		return nil, fmt.Errorf("injection slot %.3g ps is shorter than 1 ps: load too high for this message time", slot)
	}
	g := &grid{slot: slot, p: p}
	if p < 1 {
		g.lq = math.Log1p(-p)
	}
	return g, nil
}

// SlotPicos returns the slot length in picoseconds (not rounded).
func (g *grid) SlotPicos() float64 { return g.slot }

// at returns the start time of slot j, or Never past int64 range.
func (g *grid) at(j float64) int64 {
	t := j * g.slot
	if t >= 9.2e18 {
		return Never
	}
	return int64(t) // floor for t >= 0
}

// index returns the first slot index whose start is at or after from.
func (g *grid) index(from int64) float64 {
	if from <= 0 {
		return 0
	}
	j := math.Ceil(float64(from) / g.slot)
	for j > 0 && g.at(j-1) >= from {
		j--
	}
	for g.at(j) < from {
		j++
	}
	return j
}

// skip draws the number of empty slots before the next creation.
func (g *grid) skip(rng *rand.Rand) float64 {
	if g.p >= 1 {
		return 0
	}
	u := 1 - rng.Float64() // (0, 1]
	return math.Floor(math.Log(u) / g.lq)
}

func (g *grid) First(from int64, rng *rand.Rand) int64 {
	return g.at(g.index(from) + g.skip(rng))
}

func (g *grid) Next(prev int64, rng *rand.Rand) int64 {
	if prev >= Never-1 {
		return Never
	}
	return g.at(g.index(prev+1) + g.skip(rng))
}

// exponential is a Poisson process with the given mean gap in picoseconds.
type exponential struct{ mean float64 }

func (e exponential) gap(from int64, rng *rand.Rand) int64 {
	g := math.Round(float64(rng.ExpFloat64() * e.mean)) // explicit conversion: no fused multiply-add
	if g >= float64(Never-from) {
		return Never
	}
	return from + int64(g)
}

func (e exponential) First(from int64, rng *rand.Rand) int64 { return e.gap(max(from, 0), rng) }
func (e exponential) Next(prev int64, rng *rand.Rand) int64  { return e.gap(prev, rng) }

// maxEmptyPhases bounds how many consecutive phases Next scans without
// finding a creation before it declares the schedule finished. Only a
// degenerate schedule (phases far shorter than a slot) gets near it.
const maxEmptyPhases = 1 << 20

// modulated applies a Phases schedule to a process kind: within each phase
// it behaves as the phase's constant-load process; at a phase boundary it
// restarts with First at the boundary. This is exact for Bernoulli and
// exponential processes (independent slots; memorylessness). Slotted and
// periodic processes keep their grids aligned to time 0, so a phase's
// first message falls on the phase's first grid point.
type modulated struct {
	procs  []Process // per phase
	starts []int64   // phase start within a cycle
	ends   []int64   // phase end within a cycle (Never for Forever)
	cycle  int64     // cycle length (Never if the last phase is Forever)
	repeat int       // cycles, or RepeatForever
	silent bool      // every phase has load 0
}

// NewModulated returns a process that follows the resolved schedule ph
// (no packet-count phases left; see Phases.Resolve) with processes of kind
// for messages of meanPicos mean serialization time.
func NewModulated(kind ProcessKind, ph Phases, meanPicos float64) (Process, error) {
	if err := ph.Validate(); err != nil {
		return nil, err
	}
	if len(ph.List) == 0 {
		return nil, fmt.Errorf("empty load phase list")
	}
	m := &modulated{repeat: ph.Repeat, silent: true}
	if m.repeat == 0 {
		m.repeat = 1
	}
	var t int64
	for i, p := range ph.List {
		if p.Packets > 0 {
			return nil, fmt.Errorf("phase %d: packet count not resolved to a duration", i+1)
		}
		proc, err := NewProcess(kind, p.Load, meanPicos)
		if err != nil {
			return nil, fmt.Errorf("phase %d: %v", i+1, err)
		}
		if p.Load > 0 {
			m.silent = false
		}
		m.procs = append(m.procs, proc)
		m.starts = append(m.starts, t)
		if p.Duration == Forever {
			t = Never
		} else {
			if p.Duration > Never/4-t {
				return nil, fmt.Errorf("load phases last longer than %d ps", Never/4)
			}
			t += p.Duration
		}
		m.ends = append(m.ends, t)
	}
	m.cycle = t
	return m, nil
}

// locate returns the cycle number and phase index containing t >= 0, or
// ok = false past the end of a finite schedule.
func (m *modulated) locate(t int64) (c int64, i int, ok bool) {
	if m.cycle == Never {
		c = 0
	} else {
		c = t / m.cycle
		if m.repeat != RepeatForever && c >= int64(m.repeat) {
			return 0, 0, false
		}
		t -= c * m.cycle
	}
	for i = len(m.starts) - 1; i > 0 && m.starts[i] > t; i-- {
	}
	return c, i, true
}

// scan continues from candidate cand in phase (c, i): while the candidate
// falls past the phase's end, move to the next phase and start there.
func (m *modulated) scan(c int64, i int, cand int64, rng *rand.Rand) int64 {
	for range maxEmptyPhases {
		base := c * m.cycle
		end := Never
		if m.ends[i] != Never {
			end = base + m.ends[i]
		}
		if cand < end {
			return cand
		}
		if end == Never {
			return Never
		}
		i++
		if i == len(m.procs) {
			i = 0
			c++
			if m.repeat != RepeatForever && c >= int64(m.repeat) {
				return Never
			}
			if c > (Never/2)/max(m.cycle, 1) {
				return Never
			}
		}
		cand = m.procs[i].First(c*m.cycle+m.starts[i], rng)
	}
	return Never
}

func (m *modulated) First(from int64, rng *rand.Rand) int64 {
	if m.silent {
		return Never
	}
	from = max(from, 0)
	c, i, ok := m.locate(from)
	if !ok {
		return Never
	}
	return m.scan(c, i, m.procs[i].First(from, rng), rng)
}

func (m *modulated) Next(prev int64, rng *rand.Rand) int64 {
	if m.silent || prev == Never {
		return Never
	}
	if prev < 0 {
		return m.First(0, rng)
	}
	c, i, ok := m.locate(prev)
	if !ok {
		return Never
	}
	return m.scan(c, i, m.procs[i].Next(prev, rng), rng)
}
