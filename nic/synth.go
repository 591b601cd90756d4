package nic

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/rng"
	"github.com/fabemu/fabemu/workload/traffic"
)

// TrafficConfig is the synthetic workload.
type TrafficConfig struct {
	Pattern string  `yaml:"pattern" json:"pattern" doc:"destination pattern: uniform, bitrev, butterfly, complement, shuffle, transpose, hotspot[:frac[@node]], hotregion, corner1, corner2 (see docs/traffic.md)" paper:"004 §4.1, 001 §4.1, 002 §3, 000 Table 1"`
	Process string  `yaml:"process" json:"process" doc:"injection process: bernoulli (one draw per packet slot), exponential (Poisson arrivals) or periodic"`
	Load    float64 `yaml:"load" json:"load" doc:"offered load per host as a fraction of the host link's data rate, headers included (1.0 saturates the injection link)"`
	Sizes   string  `yaml:"sizes" json:"sizes" unit:"bytes" doc:"message payload size, fixed (256) or a weighted mix (256:0.5,4096:0.5); messages above the MTU become several packets" paper:"004 §4.1"`
	Phases  string  `yaml:"phases" json:"phases" doc:"rate phases for bursty load, e.g. 0.2:100us,0.9:20us (load:duration, cycling with *); empty for constant load" paper:"001 §4.3"`
}

// DefaultTrafficConfig is uniform Bernoulli traffic of 256-byte packets at
// half load (paper 004 §4.1 uses 256-byte packets).
func DefaultTrafficConfig() TrafficConfig {
	return TrafficConfig{Pattern: "uniform", Process: "bernoulli", Load: 0.5, Sizes: "256"}
}

// synth drives every host with the synthetic workload.
type synth struct {
	nw      *Network
	eng     *des.Engine
	pattern traffic.Pattern
	sizes   traffic.Sizes
	procs   []traffic.Process
	rngs    []*rand.Rand
	end     des.Time
	active  int
	maxSer  des.Time // serialization time of the largest packet
}

func newSynth(nw *Network, eng *des.Engine, c TrafficConfig, link traffic.Link, seed uint64, end des.Time) (*synth, error) {
	n := nw.Hosts()
	spec, err := traffic.ParsePattern(c.Pattern)
	if err != nil {
		return nil, fmt.Errorf("traffic.pattern: %w", err)
	}
	pat, err := traffic.NewPattern(spec, n)
	if err != nil {
		return nil, fmt.Errorf("traffic.pattern: %w", err)
	}
	kind, err := traffic.ParseProcess(c.Process)
	if err != nil {
		return nil, fmt.Errorf("traffic.process: %w", err)
	}
	sizes, err := traffic.ParseSizes(c.Sizes)
	if err != nil {
		return nil, fmt.Errorf("traffic.sizes: %w", err)
	}
	s := &synth{nw: nw, eng: eng, pattern: pat, sizes: sizes, end: end,
		procs: make([]traffic.Process, n), rngs: make([]*rand.Rand, n),
		active: traffic.ActiveSources(pat)}
	s.maxSer = des.Time(link.Picos(int64(link.MTU+link.Overhead)) + 1)
	mean := sizes.MeanPicos(link)
	var phases traffic.Phases
	if c.Phases != "" {
		if phases, err = traffic.ParsePhases(c.Phases); err != nil {
			return nil, fmt.Errorf("traffic.phases: %w", err)
		}
		if phases, err = phases.Resolve(s.active, mean); err != nil {
			return nil, fmt.Errorf("traffic.phases: %w", err)
		}
	}
	for h := 0; h < n; h++ {
		s.rngs[h] = rng.Stream(seed, "traffic", h)
		var p traffic.Process
		switch {
		case isScheduled(pat):
			sched, err := pat.(traffic.Scheduled).Schedule(h).Resolve(s.active, mean)
			if err != nil {
				return nil, fmt.Errorf("traffic.pattern %s: %w", c.Pattern, err)
			}
			p, err = traffic.NewModulated(kind, sched, mean)
			if err != nil {
				return nil, fmt.Errorf("traffic.pattern %s: %w", c.Pattern, err)
			}
		case c.Phases != "":
			if p, err = traffic.NewModulated(kind, phases, mean); err != nil {
				return nil, fmt.Errorf("traffic.phases: %w", err)
			}
		default:
			if p, err = traffic.NewProcess(kind, c.Load, mean); err != nil {
				return nil, fmt.Errorf("traffic.load: %w", err)
			}
		}
		s.procs[h] = p
	}
	return s, nil
}

func isScheduled(p traffic.Pattern) bool { _, ok := p.(traffic.Scheduled); return ok }

func (s *synth) start() {
	for h := range s.procs {
		if s.pattern.Silent(h) {
			continue
		}
		if t := s.procs[h].First(0, s.rngs[h]); t < int64(s.end) {
			s.eng.Schedule(des.Time(t), s, 0, int32(h), nil)
		}
	}
}

// aheadHorizon bounds how far ahead of the clock a backlogged host's
// messages are created (see Handle).
const aheadHorizon = 20 * des.Microsecond

// Handle creates the message due at host ev.A and schedules the next.
//
// A host whose injection queue is backlogged creates its following
// messages at once, with their own generation times, instead of one event
// each. A message for time t queued now behind packets whose
// serialization, all but the last, takes longer than t-now finds the
// queue still non-empty at t (so in the one-event-each model its creation
// would not have woken the NIC either) and cannot reach the link before t:
// nothing can observe the difference (the same draws, the same generation
// times, the same queue order). This saves an event per packet at
// saturation, where sources are always backlogged. Creation runs at most
// aheadHorizon ahead.
func (s *synth) Handle(ev *des.Event) {
	h := int(ev.A)
	now := ev.At
	r := s.rngs[h]
	t := now
	for {
		if dst, ok := s.pattern.Dest(h, int64(t), r); ok {
			m := s.nw.NewMessage()
			m.Src, m.Dst, m.Bytes, m.Gen = h, dst, int64(s.sizes.Draw(r)), t
			s.nw.Send(m)
		}
		next := des.Time(s.procs[h].Next(int64(t), r))
		if next >= s.end {
			return
		}
		if next-now <= aheadHorizon && s.nw.QueueDrainTime(h)-s.maxSer > next-now {
			t = next
			continue
		}
		s.eng.Schedule(next, s, 0, int32(h), nil)
		return
	}
}
