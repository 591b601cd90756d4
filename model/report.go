package model

import (
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/nic"
)

// The parts of a run's JSON summary that every kind of run reports
// (synthetic traffic: workload/synth; trace replay: workload/replay).

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
	// RefusedMessages are messages synthetic sources did not create while
	// their admittance queue was full (nic.model admittance, paper 000
	// §4.1); they are not in Generated.
	RefusedMessages uint64 `json:"refused_messages,omitempty"`
	// Deadlock counts what deadlock detection and recovery did
	// (fabric.deadlock); absent when detection is off.
	Deadlock *DeadlockCounts `json:"deadlock,omitempty"`
}

// DeadlockCounts are the run's deadlock detections (paper 001 §4, ref.
// [10]) and software recoveries (ref. [12]).
type DeadlockCounts struct {
	ThresholdNs float64 `json:"threshold_ns"`
	Detections  uint64  `json:"detections"`
	// Recovered counts messages absorbed at a node, Reinjected those put
	// back into the network from there; 0 without recovery.
	Recovered  uint64 `json:"recovered"`
	Reinjected uint64 `json:"reinjected"`
	// ReinjectionsHeld counts the times the node's injection control
	// (Trans-t, Self-Tuned) held an absorbed message back.
	ReinjectionsHeld uint64 `json:"reinjections_held"`
	// FalseDetections counts the detections of messages that were not
	// deadlocked (fabric/deadlock_truth.go); present under wormhole
	// switching, where the simulator classifies them.
	FalseDetections *uint64 `json:"false_detections,omitempty"`
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
	// PeakRSSBytes is the process's peak resident set at the end of the
	// run (PeakRSS): the run's own when it ran alone, the whole process's
	// when it ran beside others (--jobs, sweeps); absent where unknown.
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
}

// TopologySummary counts the session's fabric.
func (s *Session) TopologySummary() TopologySummary {
	return TopologySummary{Name: s.Topo.Name, Describe: s.Topo.Describe(), Switches: s.Topo.NumSwitches(), Hosts: s.Topo.NumHosts(), Links: len(s.Topo.Links)}
}

// RoutingSummary says what routing the session runs.
func (s *Session) RoutingSummary() RoutingSummary {
	return RoutingSummary{Mode: string(s.Router.Mode()), Escape: s.Router.EscapeName(), VLs: s.Router.NumVLs(),
		EscapeVLs: s.Router.EscapeVLs(), EscapeCheck: s.Router.CheckNote}
}

// PacketCounts counts the packets of the run so far. In adaptive-inorder
// the data packets are restated from the NICs' counts
// (nic.Network.DataPackets).
func (s *Session) PacketCounts() PacketCounts {
	f := s.Fabric
	st := f.Stats
	p := PacketCounts{Generated: s.Net.Generated, Injected: st.Injected, Delivered: st.Delivered,
		InFlight: f.InFabric(), QueuedAtSources: uint64(s.Net.Queued), DeliveredInWindow: s.Metrics.DelPackets,
		OutOfOrder: s.Metrics.AllOutOfOrder, CreditPackets: st.CreditPackets, EscapeGrants: st.EscapeGrants, AdaptiveGrants: st.AdaptiveGrants,
		RefusedMessages: s.Net.AdmittanceRefused()}
	if on, th := f.DeadlockDetection(); on {
		ds := f.DeadlockStats()
		p.Deadlock = &DeadlockCounts{ThresholdNs: float64(th) / float64(des.Nanosecond), Detections: ds.Detections, Recovered: ds.Recoveries, Reinjected: ds.Reinjections, ReinjectionsHeld: ds.ReinjectionsHeld}
		if ds.Classified {
			n := ds.FalseDetections
			p.Deadlock.FalseDetections = &n
		}
	}
	if del, inj, fl, ok := s.Net.DataPackets(); ok {
		p.Delivered, p.Injected, p.InFlight = del, inj, fl
	}
	return p
}

// Hops summarises the switches traversed per packet.
func (s *Session) Hops() HopSummary {
	return HopSummary{Mean: s.Metrics.Hops.Mean(), Max: s.Metrics.Hops.Max()}
}

// LinkUtilisation is the mean and largest utilisation of the links.
func (s *Session) LinkUtilisation() nic.MinMeanMax {
	mean, mx := s.Fabric.LinkUtilisation()
	return nic.MinMeanMax{Mean: mean, Max: mx}
}

// DeliveryReport returns the end-to-end delivery figures of the run so far.
func (s *Session) DeliveryReport() nic.DeliveryReport { return s.Net.DeliveryReport() }

// Invariants checks every invariant at the end of a run: packet and credit
// conservation, buffers within capacity, no deadlock, and in-order delivery
// where it is promised (deterministic routing, adaptive-inorder).
func (s *Session) Invariants() InvariantReport {
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
