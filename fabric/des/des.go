// Package des is fabemu's discrete-event engine: simulated time, a pending
// event set with deterministic tie-breaking, and run-until. It knows nothing
// about networks: an event is a time, a handler and two small integer
// arguments plus one reference.
//
// Order is total and reproducible: events fire by time, and events at the
// same time fire in the order they were scheduled. The engine is meant for
// one goroutine; it never reads a clock.
//
// The hot path does not allocate: events live in a slab recycled through a
// free list, and the pending set (a calendar wheel backed by a 4-ary heap,
// see queue.go) holds 24-byte keys that index the slab.
package des

import (
	"fmt"
	"github.com/fabemu/fabemu/internal/units"
	"gopkg.in/yaml.v3"
	"math"
)

// Time is simulated time in picoseconds.
type Time int64

// Units of Time.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
	// Never is later than any event.
	Never Time = math.MaxInt64
)

// Nanoseconds returns t in (possibly fractional) nanoseconds, for reports.
func (t Time) Nanoseconds() float64 { return float64(t) / float64(Nanosecond) }

// Seconds returns t in seconds, for reports.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// String formats t with the largest unit that keeps it readable, e.g.
// "100ns", "1.5us", "2ms", "37ps".
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	neg := t < 0
	u := t
	if neg {
		u = -t
	}
	var s string
	switch {
	case u == 0:
		return "0s"
	case u%Second == 0:
		s = fmt.Sprintf("%ds", u/Second)
	case u >= Millisecond:
		s = trimFloat(float64(u)/float64(Millisecond)) + "ms"
	case u >= Microsecond:
		s = trimFloat(float64(u)/float64(Microsecond)) + "us"
	case u >= Nanosecond:
		s = trimFloat(float64(u)/float64(Nanosecond)) + "ns"
	default:
		s = fmt.Sprintf("%dps", int64(u))
	}
	if neg {
		return "-" + s
	}
	return s
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.6f", f)
	for len(s) > 0 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// Handler receives the events scheduled for it.
type Handler interface {
	Handle(ev *Event)
}

// Event is one scheduled occurrence. Op and A are the handler's own
// arguments (an event kind and, say, a port or virtual lane); Ref carries a
// pointer (a packet). Storing a pointer in Ref does not allocate.
type Event struct {
	At  Time
	H   Handler
	Op  int32
	A   int32
	Ref any
}

type key struct {
	at   Time
	seq  uint64
	slot int32
}

func (a key) less(b key) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

// Engine is the pending event set and the simulated clock.
type Engine struct {
	now     Time
	seq     uint64
	q       queue
	slab    []Event
	free    []int32
	fired   uint64
	stopped bool
}

// New returns an engine at time zero.
func New() *Engine {
	e := &Engine{slab: make([]Event, 0, 1024)}
	e.q.init()
	return e
}

// Now returns the current simulated time: the time of the event being
// handled, or of the last one handled.
func (e *Engine) Now() Time { return e.now }

// Pending returns the number of scheduled events not yet fired.
func (e *Engine) Pending() int { return e.q.len() }

// Fired returns the number of events handled so far.
func (e *Engine) Fired() uint64 { return e.fired }

// Schedule arranges for h.Handle to be called at time at with the given
// arguments. Scheduling in the past is a bug in the caller and panics, as
// it would break causality silently otherwise.
func (e *Engine) Schedule(at Time, h Handler, op, a int32, ref any) {
	if at < e.now {
		panic(fmt.Sprintf("des: event scheduled at %v, before now (%v)", at, e.now))
	}
	var slot int32
	if n := len(e.free); n > 0 {
		slot = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		slot = int32(len(e.slab))
		e.slab = append(e.slab, Event{})
	}
	// Field by field rather than a composite literal: the literal is built
	// on the stack and copied with 16-byte loads that straddle the 8-byte
	// stores just made, a store-forwarding stall on every event.
	ev := &e.slab[slot]
	ev.At, ev.H, ev.Op, ev.A, ev.Ref = at, h, op, a, ref
	e.seq++
	e.q.push(key{at: at, seq: e.seq, slot: slot})
}

// After schedules an event d after now.
func (e *Engine) After(d Time, h Handler, op, a int32, ref any) {
	e.Schedule(e.now+d, h, op, a, ref)
}

// NextAt returns the time of the earliest pending event, or Never.
func (e *Engine) NextAt() Time {
	k, ok := e.q.min()
	if !ok {
		return Never
	}
	return k.at
}

// Peek returns the handler and kind (Op) of the earliest pending event
// without firing it, and false when none is pending: for tools that count
// events by kind while stepping (Step), at no cost to RunUntil.
func (e *Engine) Peek() (h Handler, op int32, ok bool) {
	k, ok := e.q.min()
	if !ok {
		return nil, 0, false
	}
	ev := &e.slab[k.slot]
	return ev.H, ev.Op, true
}

// Step fires the earliest event. It returns false when none is pending.
func (e *Engine) Step() bool {
	k, ok := e.q.popUntil(Never)
	if !ok {
		return false
	}
	e.fire(k)
	return true
}

// fire handles one popped event.
func (e *Engine) fire(k key) {
	e.now = k.at
	e.fired++
	// The handler gets a pointer into the slab. If it schedules events and
	// the slab grows, the pointer still refers to the old array, which stays
	// alive while referenced; the slot is recycled only after the handler
	// returns, so it cannot be overwritten underneath it.
	ev := &e.slab[k.slot]
	ev.H.Handle(ev)
	e.slab[k.slot].Ref = nil // drop the packet reference for the garbage collector
	e.free = append(e.free, k.slot)
}

// Stop makes the running RunUntil return after the current event.
func (e *Engine) Stop() { e.stopped = true }

// RunUntil fires every event with time <= until, in order, unless Stop is
// called. The clock is left at until if the queue ran past it, so that
// rates measured over [0, until] are exact. It returns the number of
// events fired.
func (e *Engine) RunUntil(until Time) uint64 {
	start := e.fired
	e.stopped = false
	for !e.stopped {
		k, ok := e.q.popUntil(until)
		if !ok {
			break
		}
		e.fire(k)
	}
	if !e.stopped && until != Never && e.now < until {
		e.now = until
	}
	return e.fired - start
}

// MarshalText writes t as a duration ("100ns", "1.5us"), so configs and
// JSON summaries carry the unit.
func (t Time) MarshalText() ([]byte, error) { return []byte(units.FormatPicos(int64(t))), nil }

// UnmarshalText parses Go duration syntax extended with "ps" ("100ns",
// "1.5us", "200µs", "10ps").
func (t *Time) UnmarshalText(b []byte) error {
	v, err := units.ParsePicos(string(b))
	if err != nil {
		return err
	}
	*t = Time(v)
	return nil
}

// MarshalYAML writes t as a duration string.
func (t Time) MarshalYAML() (any, error) { return units.FormatPicos(int64(t)), nil }

// UnmarshalYAML parses a duration string.
func (t *Time) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 100ns", n.Line)
	}
	if err := t.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}
