package model

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/nic"
)

// Session is an assembled model: engine, topology, router, fabric and
// NICs. Drivers (synthetic traffic, trace replay, TAP devices) attach to
// its Network.
type Session struct {
	Eng     *des.Engine
	Topo    *topo.Topology
	Router  *route.Router
	Fabric  *fabric.Fabric
	Net     *nic.Network
	Metrics *nic.Metrics
	// MaxQueued, when positive, is the most packets the hosts' injection
	// queues may hold together: RunUntil stops the run with a
	// SourceBacklogError past it (run.max_source_packets).
	MaxQueued int64
}

// SourceBacklogError is a run stopped because its sources queued more
// packets than Session.MaxQueued: the offered load exceeds what the
// fabric accepts, and the queues would grow until memory runs out.
type SourceBacklogError struct {
	At     des.Time
	Queued int64
	Limit  int64
}

func (e *SourceBacklogError) Error() string {
	return fmt.Sprintf("run.max_source_packets=%d: at %v the hosts' injection queues hold %d packets (about %s) the fabric has not accepted: the offered load exceeds what it accepts; lower traffic.load, shorten run.duration or raise run.max_source_packets (-1: no bound)",
		e.Limit, e.At, e.Queued, FormatBytes(e.Queued*memPerPacket))
}

// NewSession builds the model for the given parts. The metrics window is
// [warmup, end).
func NewSession(tc topo.Config, rc route.Config, fc fabric.Config, nc nic.Config, warmup, end, bin des.Time) (*Session, error) {
	return NewSessionVia(tc, rc, fc, nc, warmup, end, bin, nil)
}

// NewSessionVia is NewSession with an endpoint between the fabric and the
// NICs: via, when not nil, is given the NICs and returns what the fabric
// injects from and delivers to (a recorder that looks at each delivery
// and passes it on).
func NewSessionVia(tc topo.Config, rc route.Config, fc fabric.Config, nc nic.Config, warmup, end, bin des.Time, via func(*nic.Network) fabric.Endpoint) (*Session, error) {
	if err := nc.Delivery.Validate(); err != nil {
		return nil, err
	}
	if end != des.Never { // an open-ended run checks its bins itself
		if err := CheckBins(end-warmup, bin); err != nil {
			return nil, err
		}
	}
	nc.Delivery.Mode, rc.Mode = nc.Delivery.Effective(rc.Mode)
	t, err := topo.Build(tc)
	if err != nil {
		return nil, fmt.Errorf("topology: %w", err)
	}
	r, err := route.New(t, rc)
	if err != nil {
		return nil, fmt.Errorf("routing: %w", err)
	}
	eng := des.New()
	m := nic.NewMetrics(t.NumHosts(), warmup, end, bin)
	nw := nic.NewNetwork(eng, nc, t.NumHosts(), m)
	var ep fabric.Endpoint = nw
	if via != nil {
		ep = via(nw)
	}
	if err := nic.CheckQueues(nc, t, r.Mode() == route.Deterministic || nc.Delivery.Mode == nic.DeliveryDeterministic); err != nil {
		return nil, err
	}
	if q := nc.InjectionQueues; q.Count > 1 { // paper 002 §2: a port per queue
		fc.InjectionPorts, fc.InjectionShared = q.Count, q.Mode == injection.Virtual
	}
	fc.InjectionOneLane = nc.InjectionQueues.OneLane
	f, err := fabric.New(eng, fc, t, r, nc.MaxPacket(), ep)
	if err != nil {
		return nil, err
	}
	if err := nic.CheckControl(nc, f); err != nil {
		return nil, err
	}
	nw.Attach(f)
	return &Session{Eng: eng, Topo: t, Router: r, Fabric: f, Net: nw, Metrics: m}, nil
}

// Drain runs on after the sources stopped until every packet generated
// has been delivered or the engine reaches limit, in slices of step. It
// returns the time of the last delivery and whether everything was
// delivered.
func (s *Session) Drain(limit, step des.Time) (des.Time, bool, error) {
	for s.Metrics.AllDelivered < s.Net.Generated && s.Eng.Now() < limit {
		s.Eng.RunUntil(min(s.Eng.Now()+step, limit))
		if s.Fabric.Deadlock != nil {
			return s.Metrics.LastDelivered, false, s.Fabric.Deadlock
		}
	}
	return s.Metrics.LastDelivered, s.Metrics.AllDelivered >= s.Net.Generated, nil
}

// MaxBins bounds the time series of a run: each bin keeps a row of
// counters per run, so run.bin=1ps over a millisecond (10^9 bins) took
// gigabytes the memory estimate did not see.
const MaxBins = 1_000_000

// CheckBins refuses a time-series bin that would cut span into more than
// MaxBins bins (bin 0 means span/50 and is always fine).
func CheckBins(span, bin des.Time) error {
	if bin > 0 && span > 0 && span/bin >= MaxBins {
		return fmt.Errorf("run.bin %v: %v of measured time would make %d time-series bins, more than %d; widen the bin", bin, span, span/bin, MaxBins)
	}
	return nil
}

// Progress is called now and then during a run with the simulated time
// reached, the time the run ends and the events run so far.
type Progress func(done, total des.Time, events uint64)

// RunUntil advances the engine to end in slices, reporting progress, and
// returns the deadlock report if the watchdog stopped the run.
func (s *Session) RunUntil(end des.Time, progress Progress) error {
	step := max(end/200, des.Nanosecond)
	for t := s.Eng.Now(); t < end; {
		t = min(t+step, end)
		s.Eng.RunUntil(t)
		if s.Fabric.Deadlock != nil {
			return s.Fabric.Deadlock
		}
		if q := int64(s.Net.Queued); s.MaxQueued > 0 && q > s.MaxQueued {
			return &SourceBacklogError{At: t, Queued: q, Limit: s.MaxQueued}
		}
		if progress != nil {
			progress(t, end, s.Eng.Fired())
		}
	}
	return nil
}
