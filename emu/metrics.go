package emu

import (
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the emulator's status as Prometheus metrics. Each
// scrape takes one Status snapshot from the loop goroutine.
type Collector struct {
	status StatusFunc

	frames, bytes, refused, stalls, boundary         *prometheus.Desc
	accepted, packets, latency, lag, intervals       *prometheus.Desc
	invalid, connFrames, connReordered, connRatio    *prometheus.Desc
	nicRatio, nicRatioAfter, simSeconds, outstanding *prometheus.Desc
	capFrames, capDropped                            *prometheus.Desc // bgcapture.go
	egressHolds, egressHeld, egressBacklog           *prometheus.Desc // egress.go
	vmAttached, vmAttachments                        *prometheus.Desc // qemu-socket ports
	wakeLag, excessLag, validFraction, behind        *prometheus.Desc
	invalidCause, invalidStage, dilation, raises     *prometheus.Desc
}

// NewCollector returns a collector reading status.
func NewCollector(status StatusFunc) *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("fabemu_"+name, help, labels, nil)
	}
	return &Collector{status: status,
		frames:        d("tap_frames_total", "Frames read from (in) or written to (out) a TAP device.", "tap", "direction"),
		bytes:         d("tap_bytes_total", "Bytes read from (in) or written to (out) a TAP device.", "tap", "direction"),
		refused:       d("tap_refused_frames_total", "Frames refused at the TAP boundary, by direction and cause.", "tap", "direction", "cause"),
		stalls:        d("tap_stalls_total", "Times reading a TAP stopped for backpressure: reader (inbound queue full), admit (too many bytes in the fabric) or lag (the model more than pacing.max_lag behind).", "tap", "kind"),
		boundary:      d("tap_dropped_frames_total", "Frames dropped at the boundary by the emulator: unknown_unicast or to_self.", "tap", "cause"),
		outstanding:   d("tap_outstanding_bytes", "Bytes read from a TAP and not yet delivered everywhere.", "tap"),
		accepted:      d("fabric_delivered_payload_bytes_total", "Payload bytes the fabric delivered to hosts (TAP and background)."),
		packets:       d("fabric_delivered_packets_total", "Packets the fabric delivered to hosts."),
		latency:       d("fabric_latency_seconds", "Packet latency from generation to delivery, simulated time."),
		simSeconds:    d("sim_seconds", "Simulated time reached."),
		lag:           d("lag_seconds", "How late events ran behind the wall clock."),
		intervals:     d("realtime_intervals_total", "Finished real-time validity intervals."),
		invalid:       d("realtime_invalid_intervals_total", "Intervals whose excess lag exceeded the threshold (not real-time valid)."),
		validFraction: d("realtime_valid_fraction", "Fraction of the finished intervals (of the time) that were real-time valid."),
		wakeLag:       d("wake_lag_seconds", "How late the loop woke from its timed sleeps (timer granularity, scheduling)."),
		excessLag:     d("excess_lag_seconds", "Event lag beyond the loop's oversleep: how far the model was behind."),
		invalidCause:  d("realtime_invalid_intervals_by_cause_total", "Intervals not real-time valid, by cause: behind (the model's backlog), preempted (held up while busy), late_start (the idle loop started late), dilation_raised, gc_pause.", "cause"),
		invalidStage:  d("realtime_invalid_intervals_by_slowest_stage_total", "Intervals not real-time valid, by the stage of the frame path that took longest in them: read_to_submit, submit_to_ingress, model_late, egress, writer_queue, write.", "stage"),
		dilation:      d("dilation", "Wall seconds per simulated second in force."),
		raises:        d("dilation_raises_total", "Times pacing.overload dilate raised the dilation."),
		behind:        d("behind_seconds", "How far behind the wall clock the loop's oldest due event was at its last look."),
		connFrames:    d("conn_frames_total", "Frames delivered per TAP-to-TAP stream.", "src", "dst"),
		connReordered: d("conn_reordered_frames_total", "Frames reordered at TAP egress (RFC 4737 §3), ground truth numbered at ingress.", "src", "dst"),
		connRatio:     d("conn_reordered_ratio", "RFC 4737 §4.1 reordered ratio of frames at TAP egress.", "src", "dst"),
		nicRatio:      d("nic_reordered_ratio", "RFC 4737 reordered ratio of packets at NIC arrival (before rearrangement), all streams."),
		nicRatioAfter: d("nic_reordered_ratio_after_rearrangement", "RFC 4737 reordered ratio of packets delivered to hosts after rearrangement (adaptive-inorder)."),
		egressHolds:   d("tap_egress_holds_total", "Times a TAP's writer queue was full, so its NIC held reception and the fabric backed up (lossless egress).", "tap"),
		egressHeld:    d("tap_egress_held_seconds_total", "Wall time a TAP's NIC held reception for its writer.", "tap"),
		egressBacklog: d("tap_egress_backlog_frames", "Frames delivered to a TAP and waiting for room in its writer queue.", "tap"),
		vmAttached:    d("vm_attached", "1 while a VM's QEMU is attached to a qemu-socket port, 0 while frames for it are refused (no_peer).", "tap"),
		vmAttachments: d("vm_attachments_total", "VM peers that attached to a qemu-socket port since the daemon started (a guest's restart attaches again).", "tap"),
		capFrames:     d("background_capture_frames_total", "Frames of background.capture by stage: matched, captured (into the ring buffer), read, submitted (to the model), late (after the model stopped), sent (into the fabric), local, unmapped, unplaced.", "iface", "stage"),
		capDropped:    d("background_capture_ring_dropped_frames_total", "Frames of background.capture the ring buffer had no room for (counted by the kernel).", "iface"),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.frames, c.bytes, c.refused, c.stalls, c.boundary, c.outstanding,
		c.accepted, c.packets, c.latency, c.simSeconds, c.lag, c.intervals, c.invalid,
		c.connFrames, c.connReordered, c.connRatio, c.nicRatio, c.nicRatioAfter, c.capFrames, c.capDropped,
		c.egressHolds, c.egressHeld, c.egressBacklog, c.wakeLag, c.excessLag, c.validFraction, c.behind,
		c.invalidCause, c.invalidStage, c.dilation, c.raises, c.vmAttached, c.vmAttachments} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.status()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.simSeconds, err)
		return
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	for _, h := range st.Hosts {
		counter(c.frames, float64(h.FramesIn), h.TAP, "in")
		counter(c.frames, float64(h.FramesOut), h.TAP, "out")
		counter(c.bytes, float64(h.BytesIn), h.TAP, "in")
		counter(c.bytes, float64(h.BytesOut), h.TAP, "out")
		for cause, v := range h.InRefused {
			counter(c.refused, float64(v), h.TAP, "in", cause)
		}
		for cause, v := range h.OutRefused {
			counter(c.refused, float64(v), h.TAP, "out", cause)
		}
		counter(c.stalls, float64(h.ReaderStalls), h.TAP, "reader")
		counter(c.stalls, float64(h.AdmitStalls), h.TAP, "admit")
		counter(c.stalls, float64(h.LagStalls), h.TAP, "lag")
		counter(c.boundary, float64(h.UnknownUnicast), h.TAP, "unknown_unicast")
		counter(c.boundary, float64(h.ToSelf), h.TAP, "to_self")
		gauge(c.outstanding, float64(h.Outstanding), h.TAP)
		counter(c.egressHolds, float64(h.EgressHolds), h.TAP)
		counter(c.egressHeld, h.EgressHeldSeconds, h.TAP)
		gauge(c.egressBacklog, float64(h.EgressBacklog), h.TAP)
		if h.Peer != nil {
			attached := 0.0
			if h.Peer.Attached {
				attached = 1
			}
			gauge(c.vmAttached, attached, h.TAP)
			counter(c.vmAttachments, float64(h.Peer.Attachments), h.TAP)
		}
	}
	counter(c.accepted, float64(st.Fabric.DeliveredBytes))
	counter(c.packets, float64(st.Fabric.DeliveredPackets))
	gauge(c.simSeconds, st.Fabric.SimSeconds)
	histogram(ch, c.latency, st.Fabric.LatencyBuckets, 1e-12)
	histogram(ch, c.lag, st.Pacer.LagBuckets, 1e-9)
	histogram(ch, c.wakeLag, st.Pacer.WakeLagBuckets, 1e-9)
	histogram(ch, c.excessLag, st.Pacer.ExcessLagBuckets, 1e-9)
	for cause, n := range st.Pacer.InvalidByCause {
		counter(c.invalidCause, float64(n), cause)
	}
	for stage, n := range st.Pacer.InvalidBySlowest {
		counter(c.invalidStage, float64(n), stage)
	}
	gauge(c.dilation, st.Pacer.Dilation)
	counter(c.raises, float64(st.Pacer.DilationRaises))
	gauge(c.validFraction, st.Pacer.ValidFraction)
	gauge(c.behind, st.Pacer.Behind.Seconds())
	counter(c.intervals, float64(st.Pacer.Intervals))
	counter(c.invalid, float64(st.Pacer.Invalid))
	for _, cs := range st.Connections {
		counter(c.connFrames, float64(cs.Frames), cs.Src, cs.Dst)
		counter(c.connReordered, float64(cs.Reordered), cs.Src, cs.Dst)
		gauge(c.connRatio, cs.ReorderedRatio, cs.Src, cs.Dst)
	}
	gauge(c.nicRatio, st.NIC.ReorderedRatio)
	after := 0.0
	if st.NIC.OrderAfter != nil {
		after = st.NIC.OrderAfter.ReorderedRatio
	}
	gauge(c.nicRatioAfter, after)
	c.collectCapture(ch, st)
}

// histogram sends b as a Prometheus histogram in seconds (unit: seconds
// per unit of b's samples). Aggregated over daemons and time, unlike the
// quantile gauges it replaces.
func histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, b hist.Buckets, unit float64) {
	buckets := make(map[float64]uint64, len(b.LE))
	for i, le := range b.LE {
		buckets[le*unit] = b.Counts[i]
	}
	ch <- prometheus.MustNewConstHistogram(d, b.Count, b.Sum*unit, buckets)
}
