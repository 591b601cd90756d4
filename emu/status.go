package emu

import (
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/reorder"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"github.com/fabemu/fabemu/workload/replay"
)

// StatusSchema versions the JSON of the control API.
const StatusSchema = "fabemu.status/v1"

// Status is what the control API reports: the daemon, the pacing, every
// TAP host and every connection between TAP hosts. Latencies are in ns.
type Status struct {
	Schema        string  `json:"schema"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	Preset        string  `json:"preset"`
	Topology      string  `json:"topology"`
	Delivery      string  `json:"delivery"`
	Routing       string  `json:"routing"`
	// BackgroundHosts are the hosts running synthetic load (none if off).
	BackgroundHosts int `json:"background_hosts"`
	// BackgroundLoad is the synthetic background's offered load (0 = none;
	// fabemu set background.load=X changes it).
	BackgroundLoad float64 `json:"background_load"`
	// Dilation is the wall seconds per simulated second in effect;
	// DilationAuto says it was measured at start (dilation auto).
	Dilation     float64 `json:"dilation"`
	DilationAuto bool    `json:"dilation_auto"`
	// Overload is pacing.overload: what the daemon does when the model
	// falls behind (backpressure, dilate or none).
	Overload string `json:"overload"`
	// RealtimePriority is the SCHED_FIFO priority of the daemon's threads
	// (pacing.realtime_priority; 0: the normal policy).
	RealtimePriority int `json:"realtime_priority"`
	// BackgroundTrace is the progress of background.trace (absent if none).
	BackgroundTrace *replay.LiveProgress `json:"background_trace,omitempty"`
	// BackgroundCapture is background.capture's accounting (absent if none).
	BackgroundCapture *CaptureStatus `json:"background_capture,omitempty"`
	// PcapOut is the pcapng recording of pcap_out (absent if none).
	PcapOut     *PcapOutStatus `json:"pcap_out,omitempty"`
	Pacer       des.PacerStats `json:"pacer"`
	Fabric      FabricStatus   `json:"fabric"`
	Hosts       []HostStatus   `json:"hosts"`
	Connections []ConnStatus   `json:"connections"`
	// NIC holds the NICs' own packet-level figures: order at NIC arrival
	// (before rearrangement) and after it, rearrangement memory, waste.
	NIC nic.DeliveryReport `json:"nic"`
	// Rates are the current rates: over the last one to two seconds, not
	// since the start (rates.go).
	Rates Rates `json:"rates"`
}

// FabricStatus is the fabric-wide traffic since the start.
type FabricStatus struct {
	SimSeconds       float64      `json:"sim_seconds"`
	DeliveredPackets uint64       `json:"delivered_packets"`
	DeliveredBytes   int64        `json:"delivered_payload_bytes"`
	AcceptedGbps     float64      `json:"accepted_gbps"` // payload bits per simulated ns
	LatencyNs        hist.Summary `json:"latency_ns"`    // every packet, generation to delivery
	// LatencyBuckets is the same distribution, in ps, at LatencyBounds.
	LatencyBuckets hist.Buckets `json:"-"`
}

// LatencyBounds are the bucket bounds, in ps of simulated time, of the
// fabric latency histogram: 100 ns to 100 ms, 1-2.5-5 per decade.
var LatencyBounds = []float64{1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9, 2.5e9, 5e9, 1e10, 2.5e10, 5e10, 1e11}

// HostStatus is one TAP host's boundary counters.
type HostStatus struct {
	TAP   string `json:"tap"`
	Netns string `json:"netns,omitempty"`
	MAC   string `json:"mac"`
	Host  int    `json:"host"`
	// Port counters (emu/frameport): frames read and written, refusals by
	// cause. Cause kernel is the device's own count of frames its kernel
	// side dropped: in, its queue to the daemon was full (a TAP's
	// tx_dropped); out, the kernel dropped a frame the daemon wrote
	// (rx_dropped).
	FramesIn   uint64            `json:"frames_in"`
	BytesIn    uint64            `json:"bytes_in"`
	FramesOut  uint64            `json:"frames_out"`
	BytesOut   uint64            `json:"bytes_out"`
	InRefused  map[string]uint64 `json:"in_refused"`
	OutRefused map[string]uint64 `json:"out_refused"`
	// ReaderStalls counts how often the device's reader found the
	// inbound queue full; AdmitStalls how often the host had too many
	// bytes in the fabric, so reading stopped until some were delivered.
	ReaderStalls uint64 `json:"reader_stalls"`
	AdmitStalls  uint64 `json:"admit_stalls"`
	// LagStalls counts how often reading stopped because the model was
	// more than pacing.max_lag behind the wall clock.
	LagStalls uint64 `json:"lag_stalls"`
	// ToFabric counts message copies sent into the fabric (a broadcast
	// frame makes one per other TAP); UnknownUnicast and ToSelf frames
	// were dropped at the boundary.
	ToFabric       uint64 `json:"to_fabric"`
	ToFabricBytes  uint64 `json:"to_fabric_bytes"`
	UnknownUnicast uint64 `json:"unknown_unicast"`
	ToSelf         uint64 `json:"to_self"`
	// Delivered frames handed to this device's writer; WriteRefused those
	// its writer refused (counted by cause in OutRefused). With lossless
	// egress a full writer queue refuses nothing: the frame waits.
	Delivered    uint64 `json:"delivered"`
	WriteRefused uint64 `json:"write_refused"`
	// InlineWrites counts the delivered frames the model's loop wrote to
	// the device itself (tx_inline: small frames, writer idle).
	InlineWrites uint64 `json:"inline_writes"`
	// PickedUp counts the frames read from this device by the goroutine
	// that had just written to it inline, instead of by its reader
	// (pickup.go: an echo reply, an immediate ACK).
	PickedUp uint64 `json:"picked_up"`
	// PickUpTries counts the looks for such an answer after an inline
	// write to this device (the reader, awake on another CPU, may have
	// read it first, or none came).
	PickUpTries uint64 `json:"pick_up_tries"`
	// Lossless egress (egress.go). EgressHolds counts the times this
	// device's writer queue was full, so its NIC held reception and the
	// fabric backed up; EgressHeldSeconds is the wall time held in all;
	// EgressBacklog the delivered frames waiting for the writer now;
	// HeldPackets the packets waiting in the NIC's reception buffer now;
	// ClosedHeld the frames still waiting when the daemon stopped.
	EgressHolds       uint64  `json:"egress_holds"`
	EgressHeldSeconds float64 `json:"egress_held_seconds"`
	EgressBacklog     int     `json:"egress_backlog"`
	HeldPackets       int     `json:"held_packets"`
	ClosedHeld        uint64  `json:"closed_held,omitempty"`
	// KernelStatsError says why the kernel's drop counts (InRefused and
	// OutRefused by cause kernel) could not be read; empty when they were.
	KernelStatsError string `json:"kernel_stats_error,omitempty"`
	Outstanding      int    `json:"outstanding_bytes"`
	// Peer is the state of a port whose other end attaches later (a
	// qemu-socket port: the VM's QEMU connects to it); nil for a TAP.
	Peer *PeerStatus `json:"peer,omitempty"`
	// Path is where the wall time of this host's frames went.
	Path FramePath `json:"path_ns"`
}

// PeerStatus says whether a VM is attached to a qemu-socket port. A
// frame delivered to the port while no VM is attached is refused and
// counted in OutRefused (no_peer), as a NIC without a link drops it.
type PeerStatus struct {
	Attached bool `json:"attached"`
	// Attachments counts the peers that attached since the daemon
	// started (a guest's restart attaches again); Waited how many of them
	// had to wait for the one before to detach.
	Attachments uint64 `json:"attachments"`
	Waited      uint64 `json:"waited"`
}

// peerPort is a port whose peer attaches and detaches while the daemon
// runs (emu/qemusock).
type peerPort interface {
	Connected() bool
	Peers() (attached, waited uint64)
}

// FramePath splits the wall time of a frame's trip through the daemon
// into stages (ns). The first four are measured on frames read from this
// host's device, the last two on frames written to it.
type FramePath struct {
	// ReadToSubmit: the read returned until the frame was offered to the
	// pacer (hand-off to the admission stage and waiting for admission).
	ReadToSubmit hist.Summary `json:"read_to_submit"`
	// SubmitToIngress: offered to the pacer until the loop brought it into
	// the model (input queue, the loop's wake-up, events ahead of it).
	SubmitToIngress hist.Summary `json:"submit_to_ingress"`
	// Model: brought into the model until the model delivered it to the
	// destination's writer queue (simulated latency times the dilation,
	// plus the loop's lag).
	Model hist.Summary `json:"model"`
	// Egress: the delivered frame's bookkeeping on the loop (order meter,
	// copy into a buffer of the destination device).
	Egress hist.Summary `json:"egress"`
	// WriterQueue: delivered until the destination's writer took it.
	WriterQueue hist.Summary `json:"writer_queue"`
	// Write: the write system call into the destination TAP.
	Write hist.Summary `json:"write"`
}

// ConnStatus is one (source TAP, destination TAP) stream, measured on
// ground truth: frames numbered at ingress, order evaluated at egress.
type ConnStatus struct {
	Src       string       `json:"src"`
	Dst       string       `json:"dst"`
	Frames    uint64       `json:"frames"`
	Bytes     uint64       `json:"bytes"`
	LatencyNs hist.Summary `json:"latency_ns"`
	// Reordered and ReorderedRatio repeat Order's RFC 4737 §4.1 figures.
	Reordered      uint64              `json:"reordered"`
	ReorderedRatio float64             `json:"reordered_ratio"`
	Order          reorder.OrderReport `json:"order"`
}

// Status collects the status on the loop goroutine. It returns
// des.ErrPacerStopped once the loop has ended.
func (e *Emulator) Status() (*Status, error) {
	var st *Status
	err := e.pacer.Do(func() { st = e.status() })
	if err != nil {
		return nil, err
	}
	st.Pacer = e.pacer.Snapshot()
	// The dilation can be raised between the loop's part and the
	// snapshot (overload: dilate): report the snapshot's, which goes with
	// its count of raises.
	st.Dilation = st.Pacer.Dilation
	e.kernelDrops(st)
	st.Rates = e.sampleRates(st, time.Now())
	return st, nil
}

// kernelDrops adds the frames each device's kernel side dropped
// (frameport.KernelDropper: a TAP's link statistics) as refusals by cause
// kernel. It asks the kernel, so it runs off the loop goroutine.
func (e *Emulator) kernelDrops(st *Status) {
	for i, p := range e.ports {
		kd, ok := p.dev.(frameport.KernelDropper)
		if !ok || i >= len(st.Hosts) {
			continue
		}
		h := &st.Hosts[i]
		in, out, err := kd.KernelDrops()
		if err != nil {
			h.KernelStatsError = err.Error()
			continue
		}
		h.InRefused[frameport.CauseKernel.String()] += in
		h.OutRefused[frameport.CauseKernel.String()] += out
	}
}

// status runs on the loop goroutine.
func (e *Emulator) status() *Status {
	s := e.sess
	st := &Status{Schema: StatusSchema, UptimeSeconds: time.Since(e.start).Seconds(),
		Preset: e.cfg.Model.Preset, Topology: s.Topo.Describe(), Delivery: string(s.Net.Mode()),
		Routing: string(s.Router.Mode()), BackgroundHosts: len(e.background), BackgroundLoad: e.bgLoad,
		Dilation: e.pacer.Stats().Dilation, DilationAuto: e.dilationAuto, RealtimePriority: e.cfg.Pacing.RealtimePriority,
		Overload: e.cfg.Pacing.Overload}
	if e.pcap != nil {
		st.PcapOut = e.pcap.status()
	}
	if e.bgTrace != nil {
		p := e.bgTrace.Progress()
		st.BackgroundTrace = &p
	}
	if e.bgCap != nil {
		st.BackgroundCapture = e.bgCap.status()
	}
	now := s.Eng.Now()
	m := s.Metrics
	st.Fabric = FabricStatus{SimSeconds: now.Seconds(), DeliveredPackets: m.AllDelivered,
		DeliveredBytes: m.DelPayload, LatencyNs: m.Latency.Summarize(1000), LatencyBuckets: m.Latency.Buckets(LatencyBounds)}
	if now > 0 {
		st.Fabric.AcceptedGbps = float64(m.DelPayload) * 8 / now.Nanoseconds()
	}
	st.NIC = s.DeliveryReport()
	for _, p := range e.ports {
		ds := p.dev.Stats()
		h := HostStatus{TAP: p.cfg.Name, Netns: p.cfg.Netns, MAC: p.dev.MAC().String(), Host: p.host,
			FramesIn: ds.FramesIn, BytesIn: ds.BytesIn, FramesOut: ds.FramesOut, BytesOut: ds.BytesOut,
			InRefused: causes(ds.InRefused), OutRefused: causes(ds.OutRefused),
			ReaderStalls: ds.Stalls + p.readerStalls.Load(), AdmitStalls: p.stalls.Load(), LagStalls: p.lagStalls.Load(),
			ToFabric: p.toFabric, ToFabricBytes: p.toFabricBytes, UnknownUnicast: p.unknownUnicast, ToSelf: p.toSelf,
			Delivered: p.delivered, WriteRefused: p.writeRefused,
			EgressHolds: p.holds, EgressHeldSeconds: p.heldFor().Seconds(), EgressBacklog: len(p.backlog),
			HeldPackets: s.Fabric.HeldPackets(p.host), ClosedHeld: p.closedHeld}
		if iw, ok := p.dev.(interface{ InlineWrites() uint64 }); ok {
			h.InlineWrites = iw.InlineWrites()
		}
		if h.MAC == (ether.MAC{}).String() {
			h.MAC = e.learntMAC(p) // a VM port without mac: the guest's, once seen
		}
		if pp, ok := p.dev.(peerPort); ok {
			ps := &PeerStatus{Attached: pp.Connected()}
			ps.Attachments, ps.Waited = pp.Peers()
			h.Peer = ps
		}
		if pu, ok := p.dev.(interface{ PickUps() (uint64, uint64) }); ok {
			h.PickedUp, h.PickUpTries = pu.PickUps()
		}
		wt := p.dev.WriteTiming()
		h.Path = FramePath{ReadToSubmit: p.tSubmit.Summarize(1), SubmitToIngress: p.tIngress.Summarize(1),
			Model: p.tModel.Summarize(1), Egress: p.tEgress.Summarize(1), WriterQueue: wt.Queue.Summarize(1), Write: wt.Write.Summarize(1)}
		p.mu.Lock()
		h.Outstanding = p.outstanding
		p.mu.Unlock()
		st.Hosts = append(st.Hosts, h)
	}
	for _, sm := range e.sortedStreams() {
		r := sm.meter.Report()
		st.Connections = append(st.Connections, ConnStatus{Src: sm.src.cfg.Name, Dst: sm.dst.cfg.Name,
			Frames: sm.frames, Bytes: sm.bytes, LatencyNs: sm.latency.Summarize(1000),
			Reordered: r.Reordered, ReorderedRatio: r.ReorderedRatio, Order: r})
	}
	return st
}

func causes(c [frameport.NumCauses]uint64) map[string]uint64 {
	m := map[string]uint64{}
	for i, v := range c {
		m[frameport.Cause(i).String()] = v
	}
	return m
}
