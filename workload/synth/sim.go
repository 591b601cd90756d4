package synth

import (
	"errors"
	"time"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
)

// SummarySchema versions the JSON summary of a synthetic run.
const SummarySchema = "fabemu.summary/v1"

// Summary is the result of a synthetic-traffic run. Everything outside
// Run is a pure function of the configuration and seed.
type Summary struct {
	Schema   string                `json:"schema"`
	Config   model.SimConfig       `json:"config"`
	Topology model.TopologySummary `json:"topology"`
	Routing  model.RoutingSummary  `json:"routing"`

	SimTimeNs    float64 `json:"sim_time_ns"`
	WarmupNs     float64 `json:"warmup_ns"`
	ActiveHosts  int     `json:"active_hosts"`
	OfferedLoad  float64 `json:"offered_load"`
	AcceptedLoad float64 `json:"accepted_load"`

	AcceptedBytesPerNs              float64               `json:"accepted_bytes_per_ns"`
	AcceptedBytesPerNsPerSwitch     float64               `json:"accepted_bytes_per_ns_per_switch"`
	AcceptedWireBytesPerNsPerSwitch float64               `json:"accepted_wire_bytes_per_ns_per_switch"`
	PerHostAcceptedLoad             nic.MinMeanMax        `json:"per_host_accepted_load"`
	Packets                         model.PacketCounts    `json:"packets"`
	LatencyNs                       hist.Summary          `json:"latency_ns"`
	NetworkLatencyNs                hist.Summary          `json:"network_latency_ns"`
	Hops                            model.HopSummary      `json:"hops"`
	LinkUtilisation                 nic.MinMeanMax        `json:"link_utilisation"`
	Invariants                      model.InvariantReport `json:"invariants"`
	// Delivery holds the end-to-end figures of the delivery mode
	// (rearrangement, waste traffic, reordering metrics); its fields are
	// flattened into the summary.
	nic.DeliveryReport
	// Queues is the queue state of a queue-scheme switch architecture
	// (paper 000: 1q, 4q, voqsw, voqnet): queues per input and per
	// switch, and the bytes that state takes. Absent for cioq and iq.
	Queues     *fabric.QueueState `json:"queues,omitempty"`
	Timeseries []Bin              `json:"timeseries"`
	// RECN holds the recn switch's figures (SAQs per port and network-wide,
	// notifications, markers, exhaustion; saqs_over_time uses the bins of
	// timeseries); absent for other switch architectures.
	RECN *fabric.RECNReport `json:"recn,omitempty"`
	// RECNIQ holds the recn-iq switch's figures beside RECN's (SAQs per
	// input and network-wide, detections, false positives, Xon/Xoff,
	// exhaustion); absent for other switch architectures.
	RECNIQ *fabric.RECNIQReport `json:"recn_iq,omitempty"`
	// Lanes is the transit queue occupation and channel utilisation per
	// torus direction and lane (run.lane_stats; paper 002 Figures 5, 8, 10).
	Lanes *fabric.LaneReport `json:"lanes,omitempty"`
	// Stages is the link utilisation per stage and time bin of a
	// multistage network (run.stage_series; paper 000's congestion tree).
	Stages *StageSeries   `json:"stages,omitempty"`
	Run    *model.RunInfo `json:"run,omitempty"`
	// Drain is what the drain after the sources stopped found
	// (run.drain); absent without one.
	Drain *Drain `json:"drain,omitempty"`
	// TxRatio is the mean transmission-time ratio after the warm-up
	// (run.tx_ratio; paper 001 Figure 1); absent without it.
	TxRatio *TxRatio `json:"tx_ratio,omitempty"`
}

// TxRatio is the mean ratio of actual to minimum transmission time of
// the packets sent on switch channels (paper 001 §3, Figure 1).
type TxRatio struct {
	Mean    float64 `json:"mean"`
	Samples uint64  `json:"samples"`
}

// Drain is the end of a run that goes on until everything generated is
// delivered (paper 001 §4.3's bursty load: "simulation goes on until all
// messages arrive to their destinations").
type Drain struct {
	// LastDeliveryNs is when the last packet was delivered: the time to
	// deliver every message when AllDelivered.
	LastDeliveryNs float64 `json:"last_delivery_ns"`
	AllDelivered   bool    `json:"all_delivered"`
	// Undelivered counts the packets still on their way when the bound
	// (run.drain) was reached.
	Undelivered uint64 `json:"undelivered"`
}

// Bin is one time-series bin over the whole run, warm-up included.
type Bin struct {
	TimeUs                      float64 `json:"time_us"` // bin start
	OfferedLoad                 float64 `json:"offered_load"`
	AcceptedLoad                float64 `json:"accepted_load"`
	AcceptedBytesPerNsPerSwitch float64 `json:"accepted_bytes_per_ns_per_switch"`
}

// RunSim runs a synthetic-traffic simulation and summarises it.
func RunSim(cfg model.SimConfig, progress model.Progress) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	end := cfg.Run.Warmup + cfg.Run.Duration
	cfg.NIC.Delivery.Mode, cfg.Routing.Mode = cfg.NIC.Delivery.Effective(cfg.Routing.Mode)
	fc := cfg.Fabric
	fc.Seed = cfg.Run.Seed // randomised allocators draw from it
	s, err := model.NewSession(cfg.Topology, cfg.Routing, fc, cfg.NIC, cfg.Run.Warmup, end, cfg.Run.Bin)
	if err != nil {
		return nil, err
	}
	syn, err := newSynth(s.Net, s.Eng, cfg.Traffic, HostLink(cfg.Fabric, cfg.NIC), cfg.Run.Seed, end)
	if err != nil {
		return nil, err
	}
	var stages *StageSeries
	if cfg.Run.StageSeries {
		if stages, err = measureStages(s.Eng, s.Fabric, s.Topo, s.Metrics.BinWidth, end); err != nil {
			return nil, err
		}
	}
	if cfg.Run.LaneStats {
		s.Fabric.MeasureLanes(cfg.Run.Warmup, des.Microsecond)
	}
	if cfg.Run.TxRatio {
		s.Fabric.MeasureTransmissionRatio(cfg.Run.Warmup)
	}
	switch s.MaxQueued = cfg.Run.MaxSourcePackets; s.MaxQueued {
	case -1:
		s.MaxQueued = 0
	case 0:
		n, size, err := PacketsBound(&cfg)
		if err != nil {
			return nil, err
		}
		s.MaxQueued = model.SourcePacketBudget(&cfg.Model, model.Workload{PacketsPerHost: n, PacketBytes: size})
	}
	if err := checkMessagePackets(cfg, s.MaxQueued); err != nil {
		return nil, err
	}
	start := time.Now()
	syn.start()
	runErr := s.RunUntil(end, progress)
	var drain *Drain
	if runErr == nil && cfg.Run.Drain > 0 {
		last, all, err := s.Drain(end+cfg.Run.Drain, max(cfg.Run.Bin, des.Microsecond))
		runErr = err
		drain = &Drain{LastDeliveryNs: last.Nanoseconds(), AllDelivered: all,
			Undelivered: s.Net.Generated - s.Metrics.AllDelivered}
	}
	wall := time.Since(start).Seconds()
	sum := summarize(s, cfg, syn.active)
	sum.Drain = drain
	if mean, n, ok := s.Fabric.TransmissionRatio(); ok && cfg.Run.TxRatio {
		sum.TxRatio = &TxRatio{Mean: mean, Samples: n}
	}
	sum.Stages = stages
	sum.Run = &model.RunInfo{WallSeconds: wall, Events: s.Eng.Fired(),
		EventsPerSecond:           float64(s.Eng.Fired()) / wall,
		DeliveredPacketsPerSecond: float64(s.Fabric.Stats.Delivered) / wall,
		PeakRSSBytes:              model.PeakRSS()}
	if runErr != nil {
		var backlog *model.SourceBacklogError
		if !errors.As(runErr, &backlog) {
			sum.Invariants.NoDeadlock = false
		}
		sum.Invariants.OK = false
		return sum, runErr
	}
	return sum, nil
}

func summarize(s *model.Session, cfg model.SimConfig, active int) *Summary {
	m := s.Metrics
	window := m.End - m.Warmup
	ns := window.Nanoseconds()
	capBytesPerNs := float64(cfg.Fabric.DataRate()) / 8e9
	sum := &Summary{Schema: SummarySchema, Config: cfg,
		Topology: s.TopologySummary(), Routing: s.RoutingSummary(),
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
	sum.Packets = s.PacketCounts()
	sum.LatencyNs = m.Latency.Summarize(1000)
	sum.NetworkLatencyNs = m.NetLatency.Summarize(1000)
	sum.Hops = s.Hops()
	sum.LinkUtilisation = s.LinkUtilisation()
	sum.Invariants = s.Invariants()
	sum.Timeseries = timeseries(s, active, capBytesPerNs, cfg.Run.Drain > 0)
	sum.DeliveryReport = s.DeliveryReport()
	sum.RECN = s.Fabric.RECN(m.BinWidth, len(sum.Timeseries))
	sum.RECNIQ = s.Fabric.RECNIQ(m.BinWidth, len(sum.Timeseries))
	sum.Lanes = s.Fabric.LaneReport()
	if qs, ok := s.Fabric.QueueState(); ok {
		sum.Queues = &qs
	}
	return sum
}

// timeseries turns the metric bins into loads per bin.
func timeseries(s *model.Session, active int, capBytesPerNs float64, drained bool) []Bin {
	m := s.Metrics
	n := int((m.End + m.BinWidth - 1) / m.BinWidth)
	if drained { // the bins of the drain too
		n = max(n, int((s.Eng.Now()+m.BinWidth-1)/m.BinWidth))
	}
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
