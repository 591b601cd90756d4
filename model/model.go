// Package model owns the simulated machine and the assembly of a run: the
// Model configuration (topology, routing, fabric, NICs) that every kind
// of run shares, how long and with which seed a run goes (RunConfig), the
// named presets that reproduce a paper's setup (with the synthetic
// workload the paper used, TrafficConfig), the Session that builds engine,
// topology, router, fabric and NICs from them and runs it with progress,
// the parts of a result every run reports (topology, routing, packet
// counts, the invariant report), and the one configuration resolver the
// commands share (Resolve: preset, file, flags, delivery shorthands,
// key=value overrides).
//
// It sits between the workloads (workload/synth, workload/replay), which
// drive a Session, and the NIC and fabric it assembles: model imports nic
// and fabric, never a workload.
package model

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/nic"
)

// Model is the simulated machine every kind of run shares: topology,
// routing, fabric and NICs. Sim and replay configurations embed it, so
// its keys sit at the top level of their files.
type Model struct {
	Topology topo.Config   `yaml:"topology" json:"topology"`
	Routing  route.Config  `yaml:"routing" json:"routing"`
	Fabric   fabric.Config `yaml:"fabric" json:"fabric"`
	NIC      nic.Config    `yaml:"nic" json:"nic"`
}

// ModelConfig returns the model itself; configurations that embed a Model
// inherit it, which is how the resolver reaches their model part.
func (m *Model) ModelConfig() *Model { return m }

// Validate checks topology, routing, fabric and NIC.
func (m *Model) Validate() error {
	if err := params.CheckFinite(m); err != nil {
		return err
	}
	if err := m.Topology.Validate(); err != nil {
		return err
	}
	if err := m.Routing.Validate(); err != nil {
		return fmt.Errorf("routing: %w", err)
	}
	if err := m.Fabric.Validate(); err != nil {
		return err
	}
	if err := m.NIC.Validate(); err != nil {
		return err
	}
	// What the fabric derives from the largest packet (serialization
	// times, buffers in whole credit blocks) is checked here too, so that
	// an unrepresentable value is refused before the memory estimate or
	// any building.
	return m.Fabric.CheckPacket(m.NIC.MaxPacket())
}

// RunConfig is how long and with which seed a run goes.
type RunConfig struct {
	Seed     uint64   `yaml:"seed" json:"seed" doc:"seed of every random stream (traffic, irregular topologies are seeded separately by topology.seed)"`
	Duration des.Time `yaml:"duration" json:"duration" unit:"time" doc:"simulated time measured after the warm-up"`
	Warmup   des.Time `yaml:"warmup" json:"warmup" unit:"time" doc:"simulated time before measurement starts (statistics ignore it)"`
	Bin      des.Time `yaml:"bin" json:"bin" unit:"time" doc:"width of a time-series bin; 0 = one fiftieth of the measured duration"`
	Drain    des.Time `yaml:"drain" json:"drain,omitzero" unit:"time" doc:"after warm-up + duration the sources stop and the run goes on until every generated packet is delivered, at most this long; the summary gives the time of the last delivery (0 = no drain: the run ends at warm-up + duration)" paper:"001 §4.3 (bursty load: simulation goes on until all messages arrive)"`
	// LaneStats adds the lanes report to a synthetic run's summary.
	TxRatio   bool `yaml:"tx_ratio,omitempty" json:"tx_ratio,omitempty" doc:"measure, after the warm-up, the mean ratio of every packet's actual to minimum transmission time on the switch channels it leaves by (paper 001 Figure 1; the quantity Trans-t thresholds), reported as tx_ratio in the summary" paper:"001 §3, Figure 1"`
	LaneStats bool `yaml:"lane_stats,omitempty" json:"lane_stats,omitempty" doc:"tori and meshes: measure transit queue occupation (packets, sampled every microsecond) and channel utilisation per direction and lane after the warm-up, reported as lanes in the summary" paper:"002 §3, Figures 5, 8, 10"`
	// StageSeries adds the per-stage link utilisation over time to a
	// synthetic run's summary (multistage networks).
	StageSeries bool `yaml:"stage_series,omitempty" json:"stage_series,omitempty" doc:"multistage networks: measure, per time bin, the mean utilisation of the host injection links, the up links out of each stage, the down links out of each stage and the links to the hosts, reported as stages in the summary: the congestion tree's growth and collapse" paper:"000 §4.2-4.3 (corner case 2)"`
	// MaxSourcePackets bounds the packets waiting at the sources, which
	// grow without bound when the offered load exceeds what the fabric
	// accepts (Session.RunUntil checks it).
	MaxSourcePackets int64 `yaml:"max_source_packets,omitempty" json:"max_source_packets,omitzero" unit:"packets" doc:"most packets the hosts' injection queues may hold, all hosts together, before the run stops with an error (they grow without bound when the offered load exceeds what the fabric accepts); 0 = what half the memory left after the run's estimate holds, -1 = no bound"`
}

// TrafficConfig describes a synthetic workload. It lives with the presets
// because a preset reproduces a paper's workload as well as its machine;
// workload/synth drives it, and the daemon's background load uses it.
type TrafficConfig struct {
	Pattern string  `yaml:"pattern" json:"pattern" doc:"destination pattern: uniform, bitrev, butterfly, complement, shuffle, transpose, hotspot[:frac[@node]], hotregion, corner1, corner2, oddeven, halves (see docs/traffic.md)" paper:"004 §4.1, 001 §4.1, 002 §3, 000 Table 1, 003 §2.9.1"`
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

// SimConfig is everything a synthetic-traffic run needs, and what a
// preset is.
type SimConfig struct {
	Model   `yaml:",inline"`
	Traffic TrafficConfig `yaml:"traffic" json:"traffic"`
	Run     RunConfig     `yaml:"run" json:"run"`
}

// Validate checks every part.
func (c *SimConfig) Validate() error {
	if err := params.CheckFinite(c); err != nil {
		return err
	}
	if err := c.Model.Validate(); err != nil {
		return err
	}
	if c.Run.Duration <= 0 {
		return fmt.Errorf("run.duration %v: must be positive", c.Run.Duration)
	}
	if c.Run.Warmup < 0 || c.Run.Bin < 0 {
		return fmt.Errorf("run.warmup and run.bin must not be negative")
	}
	if err := CheckBins(c.Run.Duration, c.Run.Bin); err != nil {
		return err
	}
	if c.Run.Drain < 0 {
		return fmt.Errorf("run.drain %v: must not be negative", c.Run.Drain)
	}
	if c.Run.MaxSourcePackets < -1 {
		return fmt.Errorf("run.max_source_packets %d: want -1 (no bound), 0 (from the memory left) or a packet count", c.Run.MaxSourcePackets)
	}
	if c.Traffic.Load < 0 {
		return fmt.Errorf("traffic.load %g: must not be negative", c.Traffic.Load)
	}
	return nil
}
