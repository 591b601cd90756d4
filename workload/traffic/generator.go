package traffic

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabemu/fabemu/internal/rng"
)

// Stream names under which a Generator draws its random numbers (see
// internal/rng): one stream each for creation times, destinations and
// sizes, so that changing the size mix does not change the destinations.
const (
	StreamTime = "traffic.time"
	StreamDest = "traffic.dest"
	StreamSize = "traffic.size"
)

// Config is the synthetic workload of every host.
type Config struct {
	Pattern Pattern
	Process ProcessKind
	// Load is the offered load per host as a fraction of the host link's
	// capacity, wire bytes (headers included) per unit time: 1.0
	// saturates the injection link. Ignored when Phases is set or the
	// pattern is Scheduled.
	Load float64
	// Phases, when non-empty, replaces Load with a rate schedule.
	Phases Phases
	Sizes  Sizes
	Link   Link
	// Seed is the run's seed; each host derives its own streams from it.
	Seed uint64
}

// Packet is one synthetic message to hand to the NIC.
type Packet struct {
	Time int64 // creation time, ps
	Src  int
	Dst  int
	Size int // payload bytes
}

// Generator yields one host's messages in creation-time order. It is not
// safe for concurrent use (the simulation core is single-threaded).
type Generator struct {
	src     int
	pattern Pattern
	proc    Process
	sizes   Sizes
	tr      *rand.Rand
	dr      *rand.Rand
	sr      *rand.Rand
	last    int64
	started bool
	mean    float64
}

// NewGenerator builds host src's generator.
func NewGenerator(cfg Config, src int) (*Generator, error) {
	if cfg.Pattern == nil {
		return nil, fmt.Errorf("traffic: no destination pattern")
	}
	n := cfg.Pattern.Hosts()
	if src < 0 || src >= n {
		return nil, fmt.Errorf("traffic: host %d out of range 0..%d", src, n-1)
	}
	if !cfg.Sizes.Valid() {
		return nil, fmt.Errorf("traffic: no message sizes")
	}
	if err := cfg.Link.Validate(); err != nil {
		return nil, fmt.Errorf("traffic: %v", err)
	}
	g := &Generator{
		src:     src,
		pattern: cfg.Pattern,
		sizes:   cfg.Sizes,
		tr:      rng.Stream(cfg.Seed, StreamTime, src),
		dr:      rng.Stream(cfg.Seed, StreamDest, src),
		sr:      rng.Stream(cfg.Seed, StreamSize, src),
		mean:    cfg.Sizes.MeanPicos(cfg.Link),
	}
	var err error
	switch sp, scheduled := cfg.Pattern.(Scheduled); {
	case cfg.Pattern.Silent(src):
		g.proc = never{}
	case scheduled:
		if len(cfg.Phases.List) > 0 {
			return nil, fmt.Errorf("traffic: pattern %s fixes each host's load (paper 000 Table 1); do not give load phases", cfg.Pattern.Name())
		}
		g.proc, err = NewModulated(cfg.Process, sp.Schedule(src), g.mean)
	case len(cfg.Phases.List) > 0:
		var ph Phases
		ph, err = cfg.Phases.Resolve(ActiveSources(cfg.Pattern), g.mean)
		if err == nil {
			g.proc, err = NewModulated(cfg.Process, ph, g.mean)
		}
	default:
		g.proc, err = NewProcess(cfg.Process, cfg.Load, g.mean)
	}
	if err != nil {
		return nil, fmt.Errorf("traffic: host %d: %v", src, err)
	}
	return g, nil
}

// Next returns the host's next message, or ok = false when the host will
// create no more. Creations the pattern refuses (a corner-case source
// outside its window) are skipped.
func (g *Generator) Next() (p Packet, ok bool) {
	for {
		var t int64
		if g.started {
			t = g.proc.Next(g.last, g.tr)
		} else {
			t = g.proc.First(0, g.tr)
			g.started = true
		}
		if t == Never {
			g.last = Never
			return Packet{}, false
		}
		g.last = t
		dst, ok := g.pattern.Dest(g.src, t, g.dr)
		if !ok {
			continue
		}
		return Packet{Time: t, Src: g.src, Dst: dst, Size: g.sizes.Draw(g.sr)}, true
	}
}

// MeanPicos returns the mean serialization time of one message on the
// host link, the time unit of the load definition.
func (g *Generator) MeanPicos() float64 { return g.mean }
