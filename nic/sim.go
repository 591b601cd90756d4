package nic

import (
	"time"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/fabemu/fabemu/internal/units"
)

// SummarySchema versions the JSON summary of a synthetic run.
const SummarySchema = "fabemu.summary/v1"

// Summary is the result of a synthetic-traffic run. Everything outside
// Run is a pure function of the configuration and seed.
type Summary struct {
	Schema   string          `json:"schema"`
	Config   SimConfig       `json:"config"`
	Topology TopologySummary `json:"topology"`
	Routing  RoutingSummary  `json:"routing"`

	SimTimeNs    float64 `json:"sim_time_ns"`
	WarmupNs     float64 `json:"warmup_ns"`
	ActiveHosts  int     `json:"active_hosts"`
	OfferedLoad  float64 `json:"offered_load"`
	AcceptedLoad float64 `json:"accepted_load"`

	AcceptedBytesPerNs              float64         `json:"accepted_bytes_per_ns"`
	AcceptedBytesPerNsPerSwitch     float64         `json:"accepted_bytes_per_ns_per_switch"`
	AcceptedWireBytesPerNsPerSwitch float64         `json:"accepted_wire_bytes_per_ns_per_switch"`
	PerHostAcceptedLoad             MinMeanMax      `json:"per_host_accepted_load"`
	Packets                         PacketCounts    `json:"packets"`
	LatencyNs                       hist.Summary    `json:"latency_ns"`
	NetworkLatencyNs                hist.Summary    `json:"network_latency_ns"`
	Hops                            HopSummary      `json:"hops"`
	LinkUtilisation                 MinMeanMax      `json:"link_utilisation"`
	Invariants                      InvariantReport `json:"invariants"`
	// Delivery holds the end-to-end figures of the delivery mode
	// (rearrangement, waste traffic, reordering metrics); its fields are
	// flattened into the summary.
	DeliveryReport
	Timeseries []Bin    `json:"timeseries"`
	Run        *RunInfo `json:"run,omitempty"`
}

// Bin is one time-series bin over the whole run, warm-up included.
type Bin struct {
	TimeUs                      float64 `json:"time_us"` // bin start
	OfferedLoad                 float64 `json:"offered_load"`
	AcceptedLoad                float64 `json:"accepted_load"`
	AcceptedBytesPerNsPerSwitch float64 `json:"accepted_bytes_per_ns_per_switch"`
}

// TopologySummary counts the fabric.
type TopologySummary struct {
	Name     string `json:"name"`
	Describe string `json:"describe"`
	Switches int    `json:"switches"`
	Hosts    int    `json:"hosts"`
	Links    int    `json:"links"`
}

// RoutingSummary says what routing ran.
type RoutingSummary struct {
	Mode        string `json:"mode"`
	Escape      string `json:"escape"`
	VLs         int    `json:"vls"`
	EscapeVLs   int    `json:"escape_vls"`
	EscapeCheck string `json:"escape_check"`
}

// PacketCounts are over the whole run (warm-up included), so that
// generated = delivered + in_flight + queued_at_sources.
type PacketCounts struct {
	Generated         uint64 `json:"generated"`
	Injected          uint64 `json:"injected"`
	Delivered         uint64 `json:"delivered"`
	InFlight          uint64 `json:"in_flight"`
	QueuedAtSources   uint64 `json:"queued_at_sources"`
	DeliveredInWindow uint64 `json:"delivered_in_window"`
	OutOfOrder        uint64 `json:"out_of_order"`
	CreditPackets     uint64 `json:"credit_packets"`
	EscapeGrants      uint64 `json:"escape_grants"`
	AdaptiveGrants    uint64 `json:"adaptive_grants"`
}

// HopSummary is switches traversed per packet.
type HopSummary struct {
	Mean float64 `json:"mean"`
	Max  int64   `json:"max"`
}

// InvariantReport lists every invariant checked at the end of a run.
type InvariantReport struct {
	OK                 bool     `json:"ok"`
	PacketsConserved   bool     `json:"packets_conserved"`
	CreditsNonNegative bool     `json:"credits_non_negative"`
	CreditsConserved   bool     `json:"credits_conserved"`
	BuffersWithinCap   bool     `json:"buffers_within_capacity"`
	InOrder            *bool    `json:"in_order,omitempty"` // checked where routing is deterministic, and in adaptive-inorder (exactly once, in order)
	NoDeadlock         bool     `json:"no_deadlock"`
	Violations         []string `json:"violations,omitempty"`
}

// RunInfo depends on the machine, not the model.
type RunInfo struct {
	WallSeconds               float64 `json:"wall_seconds"`
	Events                    uint64  `json:"events"`
	EventsPerSecond           float64 `json:"events_per_second"`
	DeliveredPacketsPerSecond float64 `json:"delivered_packets_per_second"`
}

func fabricDataRate(fc fabric.Config) units.BitRate { return units.BitRate(fc.DataRate()) }

// RunSim runs a synthetic-traffic simulation and summarises it.
func RunSim(cfg SimConfig, progress Progress) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	end := cfg.Run.Warmup + cfg.Run.Duration
	cfg.NIC.Delivery.Mode, cfg.Routing.Mode = cfg.NIC.Delivery.Effective(cfg.Routing.Mode)
	s, err := NewSession(cfg.Topology, cfg.Routing, cfg.Fabric, cfg.NIC, cfg.Run.Warmup, end, cfg.Run.Bin)
	if err != nil {
		return nil, err
	}
	syn, err := newSynth(s.Net, s.Eng, cfg.Traffic, HostLink(cfg.Fabric, cfg.NIC), cfg.Run.Seed, end)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	syn.start()
	runErr := s.runUntil(end, progress)
	wall := time.Since(start).Seconds()
	sum := s.summarize(cfg, syn.active)
	sum.Run = &RunInfo{WallSeconds: wall, Events: s.Eng.Fired(),
		EventsPerSecond:           float64(s.Eng.Fired()) / wall,
		DeliveredPacketsPerSecond: float64(s.Fabric.Stats.Delivered) / wall}
	if runErr != nil {
		sum.Invariants.NoDeadlock = false
		sum.Invariants.OK = false
		return sum, runErr
	}
	return sum, nil
}

func (s *Session) summarize(cfg SimConfig, active int) *Summary {
	m := s.Metrics
	f := s.Fabric
	window := m.End - m.Warmup
	ns := window.Nanoseconds()
	capBytesPerNs := float64(cfg.Fabric.DataRate()) / 8e9
	sum := &Summary{Schema: SummarySchema, Config: cfg,
		Topology: TopologySummary{Name: s.Topo.Name, Describe: s.Topo.Describe(), Switches: s.Topo.NumSwitches(), Hosts: s.Topo.NumHosts(), Links: len(s.Topo.Links)},
		Routing: RoutingSummary{Mode: string(s.Router.Mode()), Escape: s.Router.EscapeName(), VLs: s.Router.NumVLs(),
			EscapeVLs: s.Router.EscapeVLs(), EscapeCheck: s.Router.CheckNote},
		SimTimeNs: ns, WarmupNs: m.Warmup.Nanoseconds(), ActiveHosts: active,
	}
	if active > 0 {
		sum.OfferedLoad = float64(m.GenWireBytes) / ns / capBytesPerNs / float64(active)
		sum.AcceptedLoad = float64(m.DelWireBytes) / ns / capBytesPerNs / float64(active)
	}
	sum.AcceptedBytesPerNs = float64(m.DelPayload) / ns
	sum.AcceptedBytesPerNsPerSwitch = sum.AcceptedBytesPerNs / float64(s.Topo.NumSwitches())
	sum.AcceptedWireBytesPerNsPerSwitch = float64(m.DelWireBytes) / ns / float64(s.Topo.NumSwitches())
	first := true
	for _, b := range m.PerHostWire {
		l := float64(b) / ns / capBytesPerNs
		if first || l < sum.PerHostAcceptedLoad.Min {
			sum.PerHostAcceptedLoad.Min = l
		}
		sum.PerHostAcceptedLoad.Max = max(sum.PerHostAcceptedLoad.Max, l)
		sum.PerHostAcceptedLoad.Mean += l / float64(len(m.PerHostWire))
		first = false
	}
	st := f.Stats
	sum.Packets = PacketCounts{Generated: s.Net.Generated, Injected: st.Injected, Delivered: st.Delivered,
		InFlight: f.InFabric(), QueuedAtSources: uint64(s.Net.Queued), DeliveredInWindow: m.DelPackets,
		OutOfOrder: m.AllOutOfOrder, CreditPackets: st.CreditPackets, EscapeGrants: st.EscapeGrants, AdaptiveGrants: st.AdaptiveGrants}
	sum.LatencyNs = m.Latency.Summarize(1000)
	sum.NetworkLatencyNs = m.NetLatency.Summarize(1000)
	sum.Hops = HopSummary{Mean: m.Hops.Mean(), Max: m.Hops.Max()}
	mean, mx := f.LinkUtilisation()
	sum.LinkUtilisation = MinMeanMax{Mean: mean, Max: mx}
	sum.Invariants = s.invariants()
	sum.Timeseries = s.timeseries(active, capBytesPerNs)
	sum.DeliveryReport = s.DeliveryReport()
	s.deliveryPackets(&sum.Packets)
	return sum
}

func (s *Session) invariants() InvariantReport {
	iv := s.Fabric.CheckInvariants()
	conserved, why := s.Net.PacketsConserved()
	r := InvariantReport{
		PacketsConserved:   conserved,
		CreditsNonNegative: iv.CreditsNonNegative, CreditsConserved: iv.CreditsConserved, BuffersWithinCap: iv.BuffersWithinCap,
		NoDeadlock: s.Fabric.Deadlock == nil, Violations: append(iv.Violations, why...),
	}
	r.OK = r.PacketsConserved && iv.OK() && r.NoDeadlock
	if s.Router.Mode() == "deterministic" {
		ok := s.Metrics.AllOutOfOrder == 0
		r.InOrder = &ok
		r.OK = r.OK && ok
	}
	if checked, ok, why := s.Net.DeliveredInOrder(); checked {
		if !ok {
			r.Violations = append(r.Violations, why)
		}
		r.InOrder = &ok
		r.OK = r.OK && ok
	}
	return r
}

// timeseries turns the metric bins into loads per bin.
func (s *Session) timeseries(active int, capBytesPerNs float64) []Bin {
	m := s.Metrics
	n := int((m.End + m.BinWidth - 1) / m.BinWidth)
	binNs := m.BinWidth.Nanoseconds()
	at := func(xs []int64, i int) float64 {
		if i < len(xs) {
			return float64(xs[i])
		}
		return 0
	}
	out := make([]Bin, n)
	for i := range out {
		b := &out[i]
		b.TimeUs = float64(i) * binNs / 1000
		if active > 0 {
			b.OfferedLoad = at(m.BinGenWire, i) / binNs / capBytesPerNs / float64(active)
			b.AcceptedLoad = at(m.BinWire, i) / binNs / capBytesPerNs / float64(active)
		}
		b.AcceptedBytesPerNsPerSwitch = at(m.BinPayload, i) / binNs / float64(s.Topo.NumSwitches())
	}
	return out
}

// DeliveryReport returns the end-to-end delivery figures of the run so far.
func (s *Session) DeliveryReport() DeliveryReport { return s.Net.DeliveryReport() }

// deliveryPackets restates the packet counts of a summary in
// adaptive-inorder (Network.DataPackets).
func (s *Session) deliveryPackets(p *PacketCounts) {
	if del, inj, fl, ok := s.Net.DataPackets(); ok {
		p.Delivered, p.Injected, p.InFlight = del, inj, fl
	}
}
