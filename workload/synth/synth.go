// Package synth owns the synthetic-traffic workload: the driver that makes
// every host (or, for the daemon's background load, a chosen set of hosts)
// create messages by a destination pattern, an injection process and a
// size mix (workload/traffic), and RunSim, which runs a preset's model
// under that workload and reports it as a Summary (schema
// fabemu.summary/v1).
package synth

import (
	"fmt"
	"math/rand/v2"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/rng"
	"github.com/fabemu/fabemu/internal/units"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/workload/traffic"
)

// synth drives every host with the synthetic workload.
type synth struct {
	nw      *nic.Network
	eng     *des.Engine
	pattern traffic.Pattern
	sizes   traffic.Sizes
	procs   []traffic.Process
	rngs    []*rand.Rand
	end     des.Time
	active  int
	maxSer  des.Time // serialization time of the largest packet
}

func newSynth(nw *nic.Network, eng *des.Engine, c model.TrafficConfig, link traffic.Link, seed uint64, end des.Time) (*synth, error) {
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

// HostLink describes a host's injection link for load computations.
func HostLink(fc fabric.Config, nc nic.Config) traffic.Link {
	return traffic.Link{Rate: units.BitRate(fc.DataRate()), Overhead: int(nc.HeaderBytes), MTU: int(nc.MTU)}
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
	if now >= s.end {
		return // stopped (Background.Stop) after this arrival was scheduled
	}
	r := s.rngs[h]
	t := now
	for {
		dst, ok := s.pattern.Dest(h, int64(t), r)
		if ok && !s.nw.Admits(h, dst) {
			// paper 000 §4.1's source is stalled while the admittance
			// queue of the message's destination is full (nic.model
			// admittance): the message is not created, and counted
			s.nw.Refuse()
			ok = false
		}
		if ok {
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

// PacketsBound is the most packets one host generates in a run of c, and
// their mean wire size, for the memory estimate (model.EstimateRun): every host at its
// offered load for the warm-up and the duration, at the full link rate
// when a scheduled pattern (the corner cases) or rate phases set the rate
// over time, since their hot periods may run at it.
func PacketsBound(c *model.SimConfig) (perHost float64, meanBytes int, err error) {
	sizes, err := traffic.ParseSizes(c.Traffic.Sizes)
	if err != nil {
		return 0, 0, fmt.Errorf("traffic.sizes: %w", err)
	}
	load := c.Traffic.Load
	spec, err := traffic.ParsePattern(c.Traffic.Pattern)
	if err != nil {
		return 0, 0, fmt.Errorf("traffic.pattern: %w", err)
	}
	// The process and the phases are read when the run starts; a bad one
	// is refused here too, so that the estimate and --dry-run refuse it.
	if _, err := traffic.ParseProcess(c.Traffic.Process); err != nil {
		return 0, 0, fmt.Errorf("traffic.process: %w", err)
	}
	if c.Traffic.Phases != "" {
		if _, err := traffic.ParsePhases(c.Traffic.Phases); err != nil {
			return 0, 0, fmt.Errorf("traffic.phases: %w", err)
		}
	}
	if spec.Name == traffic.NameCorner1 || spec.Name == traffic.NameCorner2 || c.Traffic.Phases != "" {
		load = max(load, 1)
	}
	link := HostLink(c.Fabric, c.NIC)
	perMsg := sizes.MeanPicos(link)
	meanBytes = int(sizes.MeanWireBytes(link) / sizes.MeanPackets(link))
	if !(perMsg > 0) || !(load > 0) {
		return 0, meanBytes, nil
	}
	msgs := float64(c.Run.Warmup+c.Run.Duration) * load / perMsg
	return (msgs + 1) * sizes.MeanPackets(link), meanBytes, nil
}

// checkMessagePackets refuses a size mix whose largest message alone is
// more packets than the sources may hold (bound > 0): a message is split
// into its packets when it is generated, so one such message passes the
// bound at once (sim --sizes 1GiB with run.max_source_packets=1000 made
// four million packets and ran out of memory).
func checkMessagePackets(cfg model.SimConfig, bound int64) error {
	if bound <= 0 || cfg.NIC.MTU <= 0 {
		return nil
	}
	sizes, err := traffic.ParseSizes(cfg.Traffic.Sizes)
	if err != nil {
		return fmt.Errorf("traffic.sizes: %w", err)
	}
	mtu := int64(cfg.NIC.MTU)
	if pk := (int64(sizes.Max()) + mtu - 1) / mtu; pk > bound {
		return fmt.Errorf("traffic.sizes %s: a %d-byte message is %d packets, more than the %d the sources may hold (run.max_source_packets, 0 = from the memory left); use smaller messages or raise the bound",
			cfg.Traffic.Sizes, sizes.Max(), pk, bound)
	}
	return nil
}
