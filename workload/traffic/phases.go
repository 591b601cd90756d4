package traffic

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fabemu/fabemu/internal/units"
)

// MaxLoad bounds the offered load: 100 times the host link's capacity is
// far past any saturation experiment (paper 002 §3 applies at most 4× the
// bisection limit) and keeps slot arithmetic well inside int64 picoseconds.
const MaxLoad = 100.0

// Forever as a phase duration means the phase never ends (last phase of a
// one-shot schedule only).
const Forever int64 = -1

// RepeatForever as Phases.Repeat cycles the phase list without end.
const RepeatForever = -1

// Phase is one interval of constant offered load.
type Phase struct {
	// Duration in picoseconds, or Forever. Zero when Packets is set and
	// the phase has not been resolved yet.
	Duration int64
	// Packets, when positive, gives the phase's length as a network-wide
	// message count instead of a duration (paper 001 §4.2: "400,000
	// messages generated at a rate of 0.34 ... and 200,000 messages at
	// 0.23"). Resolve turns it into the expected duration.
	Packets int64
	// Load is the offered load during the phase (fraction of the link
	// capacity, see Link), in [0, MaxLoad].
	Load float64
}

// Phases is a rate schedule: the phase list played Repeat times from time
// 0 (1 = once; RepeatForever = cycle without end; 0 is read as 1). After a
// finite schedule ends the source creates no more messages, as in paper
// 001's bursty experiment, where "simulation goes on until all messages
// arrive". An empty list means no modulation.
type Phases struct {
	List   []Phase
	Repeat int
}

// maxPhases bounds the length of a parsed schedule.
const maxPhases = 4096

// ParsePhases parses a rate schedule:
//
//	phases := phase { "," phase } [ ";repeat" [ "=" count ] ]
//	phase  := load ":" ( duration | "inf" | count "pkt" )
//
// load is a fraction of the host link capacity (0 = silent); duration is
// in picosecond-capable Go syntax ("100us", "1.5ms", "20000ns"); "inf"
// (last phase of a one-shot schedule only) never ends; "N pkt" is a
// network-wide message count, converted by Resolve to the time the sources
// need to create that many messages at that load. ";repeat" cycles the
// list forever, ";repeat=3" plays it three times; without it the list is
// played once and traffic then stops.
//
// Examples: "0.2:100us,0.9:20us;repeat" (on/off bursts),
// "0.34:400000pkt,0.23:200000pkt;repeat=2" (paper 001 §4.2, Fig. 8),
// "0:50us,0.8:inf" (start late).
func ParsePhases(s string) (Phases, error) {
	in := s
	fail := func(format string, a ...any) (Phases, error) {
		return Phases{}, fmt.Errorf("load phases %q: %s", in, fmt.Sprintf(format, a...))
	}
	body, rep, hasRep := strings.Cut(s, ";")
	p := Phases{Repeat: 1}
	if hasRep {
		rep = strings.TrimSpace(rep)
		key, val, hasVal := strings.Cut(rep, "=")
		if strings.TrimSpace(key) != "repeat" {
			return fail("unknown suffix %q (want \";repeat\" or \";repeat=N\")", rep)
		}
		p.Repeat = RepeatForever
		if hasVal {
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n < 1 || n > 1<<20 {
				return fail("repeat=%q: want a count from 1 to %d", val, 1<<20)
			}
			p.Repeat = n
		}
	}
	if strings.TrimSpace(body) == "" {
		return fail("no phases (want e.g. \"0.2:100us,0.9:20us\")")
	}
	items := strings.Split(body, ",")
	if len(items) > maxPhases {
		return fail("more than %d phases", maxPhases)
	}
	for i, item := range items {
		ls, ds, ok := strings.Cut(item, ":")
		if !ok {
			return fail("phase %d %q: want load:duration", i+1, item)
		}
		load, err := parseFloat(ls)
		if err != nil {
			return fail("phase %d: load %q: %v", i+1, ls, err)
		}
		ph := Phase{Load: load}
		ds = strings.TrimSpace(ds)
		switch {
		case ds == "inf":
			ph.Duration = Forever
		case strings.HasSuffix(ds, "pkt"):
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(ds, "pkt")), 10, 64)
			if err != nil || n < 1 {
				return fail("phase %d: packet count %q: want a positive integer before \"pkt\"", i+1, ds)
			}
			ph.Packets = n
		default:
			d, err := units.ParsePicos(ds)
			if err != nil {
				return fail("phase %d: %v", i+1, err)
			}
			ph.Duration = d
		}
		p.List = append(p.List, ph)
	}
	if err := p.Validate(); err != nil {
		return fail("%v", err)
	}
	return p, nil
}

// Validate checks loads, durations and the placement of Forever.
func (p Phases) Validate() error {
	if p.Repeat < RepeatForever {
		return fmt.Errorf("repeat %d is invalid", p.Repeat)
	}
	for i, ph := range p.List {
		if !(ph.Load >= 0 && ph.Load <= MaxLoad) {
			return fmt.Errorf("phase %d: load %v out of range 0..%v", i+1, ph.Load, MaxLoad)
		}
		switch {
		case ph.Packets < 0:
			return fmt.Errorf("phase %d: negative packet count", i+1)
		case ph.Packets > 0:
			if ph.Duration != 0 {
				return fmt.Errorf("phase %d: give a duration or a packet count, not both", i+1)
			}
			if ph.Load == 0 {
				return fmt.Errorf("phase %d: a packet count at load 0 never completes", i+1)
			}
		case ph.Duration == Forever:
			if i != len(p.List)-1 {
				return fmt.Errorf("phase %d: only the last phase may last forever", i+1)
			}
			if p.Repeat != 1 && p.Repeat != 0 {
				return fmt.Errorf("phase %d: a phase that lasts forever cannot be repeated", i+1)
			}
		case ph.Duration <= 0:
			return fmt.Errorf("phase %d: duration must be positive", i+1)
		}
	}
	return nil
}

// Resolve returns a copy with every packet-count phase turned into a
// duration: the expected time for `sources` hosts, each offering load ×
// capacity with messages of meanPicos serialization time, to create the
// phase's messages: Packets / sources × meanPicos / load, rounded to the
// picosecond. (The paper counts messages network-wide; with hundreds of
// thousands of messages the realized count is within a fraction of a
// percent of the expectation.)
func (p Phases) Resolve(sources int, meanPicos float64) (Phases, error) {
	out := Phases{List: make([]Phase, len(p.List)), Repeat: p.Repeat}
	copy(out.List, p.List)
	for i, ph := range out.List {
		if ph.Packets == 0 {
			continue
		}
		if sources < 1 {
			return Phases{}, fmt.Errorf("phase %d: a packet count needs at least one sending host", i+1)
		}
		d := float64(ph.Packets) / float64(sources) * meanPicos / ph.Load
		if !(d >= 1 && d < 1e18) {
			return Phases{}, fmt.Errorf("phase %d: %d packets at load %v take %g ps, out of range", i+1, ph.Packets, ph.Load, d)
		}
		out.List[i] = Phase{Duration: int64(math.Round(d)), Load: ph.Load}
	}
	return out, out.Validate()
}

// String returns the schedule in ParsePhases syntax.
func (p Phases) String() string {
	parts := make([]string, len(p.List))
	for i, ph := range p.List {
		var d string
		switch {
		case ph.Packets > 0:
			d = strconv.FormatInt(ph.Packets, 10) + "pkt"
		case ph.Duration == Forever:
			d = "inf"
		default:
			d = units.FormatPicos(ph.Duration)
		}
		parts[i] = strconv.FormatFloat(ph.Load, 'g', -1, 64) + ":" + d
	}
	s := strings.Join(parts, ",")
	switch {
	case p.Repeat == RepeatForever:
		s += ";repeat"
	case p.Repeat > 1:
		s += ";repeat=" + strconv.Itoa(p.Repeat)
	}
	return s
}
