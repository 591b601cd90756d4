package nic

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/workload/traffic"
)

// RunConfig is how long and with which seed a run goes.
type RunConfig struct {
	Seed     uint64   `yaml:"seed" json:"seed" doc:"seed of every random stream (traffic, irregular topologies are seeded separately by topology.seed)"`
	Duration des.Time `yaml:"duration" json:"duration" unit:"time" doc:"simulated time measured after the warm-up"`
	Warmup   des.Time `yaml:"warmup" json:"warmup" unit:"time" doc:"simulated time before measurement starts (statistics ignore it)"`
	Bin      des.Time `yaml:"bin" json:"bin" unit:"time" doc:"width of a time-series bin; 0 = one fiftieth of the measured duration"`
}

// SimConfig is everything a synthetic-traffic run needs.
type SimConfig struct {
	Model   `yaml:",inline"`
	Traffic TrafficConfig `yaml:"traffic" json:"traffic"`
	Run     RunConfig     `yaml:"run" json:"run"`
}

// Model is the simulated machine every kind of run shares: topology,
// routing, fabric and NICs. Sim and replay configurations embed it, so
// its keys sit at the top level of their files.
type Model struct {
	Topology topo.Config   `yaml:"topology" json:"topology"`
	Routing  route.Config  `yaml:"routing" json:"routing"`
	Fabric   fabric.Config `yaml:"fabric" json:"fabric"`
	NIC      Config        `yaml:"nic" json:"nic"`
}

// Validate checks every part.
func (c *SimConfig) Validate() error {
	if err := c.Model.validate(); err != nil {
		return err
	}
	if err := c.NIC.Validate(); err != nil {
		return err
	}
	if c.Run.Duration <= 0 {
		return fmt.Errorf("run.duration %v: must be positive", c.Run.Duration)
	}
	if c.Run.Warmup < 0 || c.Run.Bin < 0 {
		return fmt.Errorf("run.warmup and run.bin must not be negative")
	}
	if c.Traffic.Load < 0 {
		return fmt.Errorf("traffic.load %g: must not be negative", c.Traffic.Load)
	}
	return nil
}

// validate checks topology, routing and fabric (the NIC is checked by the
// caller, with its delivery options).
func (m *Model) validate() error {
	if err := m.Topology.Validate(); err != nil {
		return err
	}
	if err := m.Routing.Validate(); err != nil {
		return fmt.Errorf("routing: %w", err)
	}
	return m.Fabric.Validate()
}

// Session is an assembled model: engine, topology, router, fabric and
// NICs. Drivers (synthetic traffic, trace replay, TAP devices) attach to
// its Network.
type Session struct {
	Eng     *des.Engine
	Topo    *topo.Topology
	Router  *route.Router
	Fabric  *fabric.Fabric
	Net     *Network
	Metrics *Metrics
}

// NewSession builds the model for the given parts. The metrics window is
// [warmup, end).
func NewSession(tc topo.Config, rc route.Config, fc fabric.Config, nc Config, warmup, end, bin des.Time) (*Session, error) {
	if err := nc.Delivery.Validate(); err != nil {
		return nil, err
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
	m := NewMetrics(t.NumHosts(), warmup, end, bin)
	nw := NewNetwork(eng, nc, t.NumHosts(), m)
	f, err := fabric.New(eng, fc, t, r, nc.MaxPacket(), nw)
	if err != nil {
		return nil, err
	}
	nw.Attach(f)
	return &Session{Eng: eng, Topo: t, Router: r, Fabric: f, Net: nw, Metrics: m}, nil
}

// HostLink describes a host's injection link for load computations.
func HostLink(fc fabric.Config, nc Config) traffic.Link {
	return traffic.Link{Rate: fabricDataRate(fc), Overhead: int(nc.HeaderBytes), MTU: int(nc.MTU)}
}

// Progress is called now and then during a run with the simulated time
// reached and the time the run ends.
type Progress func(done, total des.Time)

// runUntil advances the engine to end in slices, reporting progress, and
// returns the deadlock report if the watchdog stopped the run.
func (s *Session) runUntil(end des.Time, progress Progress) error {
	step := max(end/200, des.Nanosecond)
	for t := s.Eng.Now(); t < end; {
		t = min(t+step, end)
		s.Eng.RunUntil(t)
		if s.Fabric.Deadlock != nil {
			return s.Fabric.Deadlock
		}
		if progress != nil {
			progress(t, end)
		}
	}
	return nil
}
