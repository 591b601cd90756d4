// Package replay owns trace replay: block-I/O trace records become
// request/reply traffic between initiator hosts and disk hosts (paper 004
// §4.1, paper 000 §4.2). It owns the replay configuration and its presets,
// the mapping of trace devices and initiators onto hosts, the pre-scan of
// the trace window, the driver, and RunReplay with its ReplaySummary
// (schema fabemu.replay/v1). The mapping, semantics and metrics are
// documented in docs/replay.md.
//
// Packet captures (pcap, pcapng, read by tracefmt/pcap) are the second
// kind of replay source: each frame becomes a message between the hosts
// of its endpoints, driven by the same look-ahead and summary (capture.go,
// docs/capture.md). Either source can write what left the fabric as
// pcapng (pcapout.go).
package replay

import (
	"errors"
	"fmt"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/topo"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/fabemu/fabemu/internal/rng"
	"github.com/fabemu/fabemu/internal/units"
	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/sample"
)

// ReplaySchema versions the JSON summary of a trace replay.
const ReplaySchema = "fabemu.replay/v1"

// TraceTime is a span of trace time. Trace clocks run for days or months,
// beyond the range of des.Time (about 106 days in picoseconds), so trace
// times keep nanoseconds; they become simulated time only after
// compression. Its text form is Go duration syntax ("90s", "36h").
type TraceTime time.Duration

// MarshalText writes t in Go duration syntax.
func (t TraceTime) MarshalText() ([]byte, error) { return []byte(time.Duration(t).String()), nil }

// UnmarshalText parses Go duration syntax.
func (t *TraceTime) UnmarshalText(b []byte) error {
	d, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration (want e.g. 90s, 2h30m)", b)
	}
	*t = TraceTime(d)
	return nil
}

// ParamType names the type in config explanations.
func (TraceTime) ParamType() string { return "duration" }

// Initiator mappings: which host issues a trace record.
const (
	InitSpread      = "spread"
	InitByInitiator = "by-initiator"
	InitByDevice    = "by-device"
	InitRandom      = "random"
)

// Device mappings: which disk host a trace device goes to.
const (
	DevDense  = "dense"
	DevModulo = "modulo"
)

// ReplayConfig maps a block-I/O trace onto the fabric.
type ReplayConfig struct {
	Trace          string      `yaml:"trace" json:"trace" doc:"trace file, or a directory of SRT files merged in time order; empty = the embedded cello99-like sample"`
	Format         string      `yaml:"format" json:"format" doc:"trace format: auto (sniffed from the content), srt, msr, spc, blkparse, fio, disksim, csv"`
	SortWindow     int         `yaml:"sort_window" json:"sort_window" unit:"records" doc:"sort arrivals within a window of this many records; 0 = file order (a record earlier than its predecessor is issued at the predecessor's time and counted as late)"`
	Compression    float64     `yaml:"compression" json:"compression" doc:"time compression factor C: a record at trace time t is issued at (t - from)/C, and traced service times shrink by C too; C > 1 raises the offered load (paper 004 Table 1: 2 on the 32-switch irregular network, Table 2: 2.5 on the 4x4 torus; paper 000 Fig. 3: 20 and 40)" paper:"004 §4.1, 000 §4.2"`
	From           TraceTime   `yaml:"from" json:"from" doc:"start of the replayed window in trace time, counted from the first record's arrival; it is replay time 0"`
	To             TraceTime   `yaml:"to" json:"to" doc:"end of the replayed window in trace time (exclusive; reading stops at the first record at or after it); 0 = the end of the trace"`
	Limit          int64       `yaml:"limit" json:"limit" unit:"records" doc:"replay at most this many records of the window; 0 = all"`
	Disks          int         `yaml:"disks" json:"disks" doc:"number of hosts that act as disks, drawn at random among the topology's hosts with the run seed (paper 004: the disks are randomly attached to 23 switch ports)" paper:"004 §4.1"`
	DiskHosts      []int       `yaml:"disk_hosts" json:"disk_hosts" doc:"explicit host indexes of the disks, overriding disks; disk k (see device_map) is the k-th entry"`
	DeviceMap      string      `yaml:"device_map" json:"device_map" doc:"trace device to disk: dense (devices numbered in order of first appearance, modulo the number of disks) or modulo (the device id modulo the number of disks)"`
	Initiators     string      `yaml:"initiators" json:"initiators" doc:"which host issues each request: spread (record i from initiator host i mod N), by-initiator (the trace's initiator id, i.e. pid, host name or 0, numbered in order of first appearance, modulo N), by-device (every request to one device from one host) or random (uniform, seeded)"`
	InitiatorHosts int         `yaml:"initiator_hosts" json:"initiator_hosts" doc:"number N of hosts that issue requests, the lowest-numbered hosts that are not disks; 0 = every host that is not a disk (paper 004: 128 workstations)" paper:"004 §4.1"`
	RequestBytes   units.Bytes `yaml:"request_bytes" json:"request_bytes" doc:"payload of the small messages: a read request (host to disk) and a write completion (disk to host); the data messages carry the record's size"`
	ServiceTime    bool        `yaml:"service_time" json:"service_time" doc:"delay each reply at the disk by the record's traced service time divided by the compression factor (records without one reply at once); off = the disk replies when the request is delivered"`
	MapBy          string      `yaml:"map_by" json:"map_by,omitempty" doc:"packet captures: the address that names an endpoint: auto (the MACs where the link type carries both, else the IP addresses), mac or ip"`
	Map            string      `yaml:"map" json:"map,omitempty" doc:"packet captures: file of endpoint (MAC or IP address) to host index, YAML (.yaml, .yml: a mapping) or CSV (endpoint,host per line); several endpoints may share a host; empty = endpoints in order of first appearance onto a permutation of the hosts drawn from run.seed, refused if there are more endpoints than hosts"`
}

// ReplayRunConfig is the seed, binning and safety bound of a replay.
type ReplayRunConfig struct {
	Seed         uint64   `yaml:"seed" json:"seed" doc:"seed of the disk placement and of random initiator choice (irregular topologies are seeded by topology.seed)"`
	Bin          des.Time `yaml:"bin" json:"bin" unit:"time" doc:"width of a time-series bin; 0 = one fiftieth of the replayed window's compressed span"`
	DrainTimeout des.Time `yaml:"drain_timeout" json:"drain_timeout" unit:"time" doc:"safety bound: once every request is issued, stop with an error if no packet is delivered and no disk service is pending for this long"`
	// MaxOutstanding bounds the requests issued and not yet complete: an
	// open-loop replay whose compressed arrivals outrun the fabric holds
	// every one of them (a waiting request is a compact record of about
	// RequestMemBytes, packetized only at the head of its source queue).
	// It is a safety bound, not part of what a replay computes, so the
	// JSON summary leaves it out (a run that completes never reached it).
	MaxOutstanding int64 `yaml:"max_outstanding_requests" json:"-" unit:"requests" doc:"most requests issued and not yet complete at once (about 400 bytes each) before the replay stops with an error naming this key; the replay itself is never changed to stay under it; left out, 1000000; -1 = no bound" nonzero:"-1 (no bound) or 1 to 1e12 requests (leave the key out for the default, 1000000)"`
}

// DefaultMaxOutstanding is run.max_outstanding_requests left out: about
// 380 MiB of waiting requests.
const DefaultMaxOutstanding = 1_000_000

// RequestMemBytes is what one outstanding request costs a replay, as
// measured: its request record, its message and its entry in the source
// queue (the packets are made only at the head of the queue), with the
// collector's headroom. A 300,000-record cello99-like trace at
// compression 8000 peaks at 275,558 outstanding requests and 123 MB RSS.
const RequestMemBytes = 400

// OutstandingBound returns the bound on outstanding requests in effect:
// the key, its default when left out, or 0 for no bound (-1).
func (c ReplayRunConfig) OutstandingBound() int64 {
	switch c.MaxOutstanding {
	case 0:
		return DefaultMaxOutstanding
	case -1:
		return 0
	}
	return c.MaxOutstanding
}

// Workload is what the memory estimate is told of a replay before its
// trace is read: the requests it may keep outstanding, at most
// run.max_outstanding_requests and at most replay.limit.
func (c *ReplaySimConfig) Workload() model.Workload {
	n := c.Run.OutstandingBound()
	if l := c.Replay.Limit; l > 0 && (n == 0 || l < n) {
		n = l
	}
	return model.Workload{PacketsPerHost: -1, Requests: n, RequestBytes: RequestMemBytes}
}

// OutstandingError is a replay stopped because more requests were issued
// and not complete than run.max_outstanding_requests allows.
type OutstandingError struct {
	At          des.Time
	Outstanding int64
	Limit       int64
}

func (e *OutstandingError) Error() string {
	return fmt.Sprintf("run.max_outstanding_requests=%d: at %v of replay time %d requests are issued and not complete (about %s): the compressed trace offers more than the fabric accepts; lower replay.compression, narrow the window (replay.to, replay.limit) or raise run.max_outstanding_requests (-1: no bound)",
		e.Limit, e.At, e.Outstanding, model.FormatBytes(e.Outstanding*RequestMemBytes))
}

// ReplaySimConfig is everything a trace replay needs: the model parts of a
// model.SimConfig with a trace mapping instead of synthetic traffic.
type ReplaySimConfig struct {
	model.Model `yaml:",inline"`
	Replay      ReplayConfig    `yaml:"replay" json:"replay"`
	Run         ReplayRunConfig `yaml:"run" json:"run"`
}

// DefaultReplayConfig is paper 004's mapping: 23 disks at random host
// positions, requests spread over the other hosts, 64-byte requests and
// completions, no service time, the embedded sample, compression 1.
func DefaultReplayConfig() ReplayConfig {
	return ReplayConfig{Format: "auto", Compression: 1, Disks: 23, DeviceMap: DevDense,
		Initiators: InitSpread, RequestBytes: 64}
}

// paperCompression is the compression factor a paper replays its traces
// with on the preset's network.
var paperCompression = map[string]float64{
	"paper004-irregular32": 2,   // paper 004 Table 1
	"paper004-torus4x4":    2.5, // paper 004 Table 2
	"paper000-min64":       20,  // paper 000 Fig. 3 (20 and 40)
}

// ReplayDeadlockTimeout is the least fabric.deadlock_timeout a replay
// preset uses. A trace spans hours to days of simulated time and the
// watchdog costs one event per interval; a deadlock is still reported,
// this long after the fabric stops moving.
const ReplayDeadlockTimeout = 100 * des.Millisecond

// ReplayPreset returns the replay configuration of a named preset: its
// topology, routing, fabric and NIC, the default mapping, the paper's
// compression factor where the paper gives one (else 1), and a watchdog
// interval of at least ReplayDeadlockTimeout.
func ReplayPreset(name string) (ReplaySimConfig, error) {
	p, err := model.LookupPreset(name)
	if err != nil {
		return ReplaySimConfig{}, err
	}
	c := ReplaySimConfig{Model: p.Model,
		Replay: DefaultReplayConfig(),
		Run:    ReplayRunConfig{Seed: p.Run.Seed, DrainTimeout: 1 * des.Second, MaxOutstanding: DefaultMaxOutstanding}}
	if cf, ok := paperCompression[name]; ok {
		c.Replay.Compression = cf
	}
	c.Fabric.DeadlockTimeout = max(c.Fabric.DeadlockTimeout, ReplayDeadlockTimeout)
	return c, nil
}

// compressionScale is the denominator of the compression factor as a
// rational number: C = num/compressionScale, so that trace time turns into
// simulated time in integer arithmetic.
const compressionScale = 1_000_000

// compressionNum returns C·compressionScale, rounded.
func compressionNum(c float64) (uint64, error) {
	if math.IsNaN(c) || math.IsInf(c, 0) || c <= 0 {
		return 0, fmt.Errorf("replay.compression %g: must be a positive number", c)
	}
	n := math.Round(c * compressionScale)
	if n < 1 || n > 1e15 {
		return 0, fmt.Errorf("replay.compression %g: want between 1e-6 and 1e9", c)
	}
	return uint64(n), nil
}

// compress turns a trace-time span into simulated time: d/C, in
// picoseconds, with 128-bit intermediate arithmetic.
func compress(d time.Duration, num uint64) (des.Time, error) {
	if d < 0 {
		d = 0
	}
	hi, lo := bits.Mul64(uint64(d), 1000*compressionScale)
	if hi >= num {
		return 0, errReplayRange
	}
	q, _ := bits.Div64(hi, lo, num)
	if q > math.MaxInt64/2 {
		return 0, errReplayRange
	}
	return des.Time(q), nil
}

var errReplayRange = errors.New("replay time beyond the simulator's range (about 53 days); raise replay.compression or narrow the window")

// Validate checks the configuration on its own; what depends on the
// topology (disk and host counts) is checked when the replay is built.
func (c *ReplaySimConfig) Validate() error {
	if err := c.Model.Validate(); err != nil {
		return err
	}
	r := &c.Replay
	if _, err := tracefmt.ParseFormat(r.Format); err != nil {
		return fmt.Errorf("replay.format: %w", err)
	}
	if r.Trace == "" && r.Format != "" && r.Format != string(tracefmt.Auto) && r.Format != string(sample.Format) {
		return fmt.Errorf("replay.format %q: the embedded sample is %s; give replay.trace to read another format", r.Format, sample.Format)
	}
	if _, err := compressionNum(r.Compression); err != nil {
		return err
	}
	switch {
	case r.SortWindow < 0:
		return fmt.Errorf("replay.sort_window %d: must not be negative", r.SortWindow)
	case r.From < 0 || r.To < 0:
		return fmt.Errorf("replay.from and replay.to must not be negative")
	case r.To != 0 && r.To <= r.From:
		return fmt.Errorf("replay.to %v: must be after replay.from %v (or 0 for the end of the trace)", time.Duration(r.To), time.Duration(r.From))
	case r.Limit < 0:
		return fmt.Errorf("replay.limit %d: must not be negative", r.Limit)
	case len(r.DiskHosts) == 0 && r.Disks < 1:
		return fmt.Errorf("replay.disks %d: need at least one disk", r.Disks)
	case r.InitiatorHosts < 0:
		return fmt.Errorf("replay.initiator_hosts %d: must not be negative", r.InitiatorHosts)
	case r.RequestBytes < 0 || r.RequestBytes > 1<<30:
		return fmt.Errorf("replay.request_bytes %v: want 0 to 1 GiB", r.RequestBytes)
	case c.Run.Bin < 0:
		return fmt.Errorf("run.bin %v: must not be negative", c.Run.Bin)
	case c.Run.DrainTimeout <= 0:
		return fmt.Errorf("run.drain_timeout %v: must be positive", c.Run.DrainTimeout)
	case c.Run.MaxOutstanding < -1 || c.Run.MaxOutstanding > 1e12:
		return fmt.Errorf("run.max_outstanding_requests %d: want -1 (no bound) or 1 to 1e12 requests (leave the key out for the default, %d)", c.Run.MaxOutstanding, DefaultMaxOutstanding)
	}
	switch r.MapBy {
	case "", MapByAuto, MapByMAC, MapByIP:
	default:
		return fmt.Errorf("replay.map_by %q: want auto, mac or ip", r.MapBy)
	}
	switch r.DeviceMap {
	case DevDense, DevModulo:
	default:
		return fmt.Errorf("replay.device_map %q: want dense or modulo", r.DeviceMap)
	}
	switch r.Initiators {
	case InitSpread, InitByInitiator, InitByDevice, InitRandom:
	default:
		return fmt.Errorf("replay.initiators %q: want spread, by-initiator, by-device or random", r.Initiators)
	}
	return nil
}

// OpenTrace opens the configured trace: the file or directory, or the
// embedded sample when Trace is empty. It returns the reader and the name
// used in reports.
func (r ReplayConfig) OpenTrace() (tracefmt.Reader, string, error) {
	opts := tracefmt.Options{SortWindow: r.SortWindow}
	if r.Trace == "" {
		rd, err := sample.Open(opts)
		return rd, r.TraceName(), err
	}
	f, err := tracefmt.ParseFormat(r.Format)
	if err != nil {
		return nil, "", err
	}
	if err := r.checkSeekable(); err != nil {
		return nil, "", err
	}
	rd, err := tracefmt.Open(r.Trace, f, opts)
	if err != nil {
		return nil, "", fmt.Errorf("replay.trace: %w", err)
	}
	return rd, r.TraceName(), nil
}

// window selects the replayed records of a stream as the replay and its
// pre-scan both need: trace time counts from the first record's arrival,
// records before From are skipped, reading stops at the first record at or
// after To or after Limit records.
type window struct {
	cfg     ReplayConfig
	started bool
	epoch   time.Duration
	taken   int64
	skipped int64
	last    time.Duration // the latest stamp seen
	late    uint64        // records stamped before an earlier one
}

// next returns the next record in the window with its trace time since
// From, or io.EOF when the window is over.
func (w *window) next(rd tracefmt.Reader) (tracefmt.Record, time.Duration, error) {
	for {
		if w.full() {
			return tracefmt.Record{}, 0, io.EOF
		}
		rec, err := rd.Next()
		if err != nil {
			return rec, 0, err
		}
		rel, take, over := w.admit(rec.Arrival)
		if over {
			return rec, 0, io.EOF
		}
		if take {
			return rec, rel, nil
		}
	}
}

// full reports whether Limit records have been taken.
func (w *window) full() bool { return w.cfg.Limit > 0 && w.taken >= w.cfg.Limit }

// admit places a record stamped at (on any fixed origin: block traces
// count from their own start, captures from the Unix epoch) in the
// window. It returns the record's trace time since From and take when it
// is replayed, over when it is at or past To (the window ends there), and
// neither when it comes before From (skipped).
//
// A record stamped before an earlier one (out of order in the file) is
// placed at the earlier record's time and counted as late: it is
// replayed if that time is in the window, never skipped as "before the
// window" because its own stamp precedes the trace's first record.
func (w *window) admit(at time.Duration) (rel time.Duration, take, over bool) {
	if !w.started {
		w.started, w.epoch, w.last = true, at, at
	}
	if at < w.last {
		at = w.last
		w.late++
	}
	w.last = at
	rel = at - w.epoch
	if w.cfg.To > 0 && rel >= time.Duration(w.cfg.To) {
		return 0, false, true
	}
	if rel < time.Duration(w.cfg.From) {
		w.skipped++
		return 0, false, false
	}
	w.taken++
	return rel - time.Duration(w.cfg.From), true, false
}

// TraceScan is what a first pass over the trace finds in the window.
type TraceScan struct {
	Records int64         // records in the window (after Limit)
	Span    time.Duration // trace time from From to the last record in the window
	Skipped int64         // records before From
	Late    uint64        // records stamped before an earlier one, placed at its time
}

// ScanTrace reads the configured trace once, without simulating, to count
// the records of the window and measure its span; it reports malformed
// input before a long run starts.
func (r ReplayConfig) ScanTrace() (TraceScan, error) {
	rd, _, err := r.OpenTrace()
	if err != nil {
		return TraceScan{}, err
	}
	defer rd.Close()
	w := window{cfg: r}
	var sc TraceScan
	for {
		_, rel, err := w.next(rd)
		if err == io.EOF {
			break
		}
		if err != nil {
			return sc, err
		}
		sc.Records++
		sc.Span = max(sc.Span, rel)
	}
	sc.Skipped, sc.Late = w.skipped, w.late
	return sc, nil
}

// request is the per-request state of one trace record in flight. It is
// pooled, so replay memory follows the number of outstanding requests, not
// the length of the trace.
type request struct {
	host, disk int
	op         tracefmt.Op
	size       int64
	dev        uint32 // trace device, offset and record number, for the pcapng output
	off        int64
	rec        uint64
	issue      des.Time
	service    des.Time
	atDisk     bool // the request (read) or data (write) reached the disk
}

// Replay event kinds.
const (
	opArrive int32 = iota // the look-ahead record's arrival: issue it
	opReply               // the disk's service is over: send the reply
	opDrain               // safety check once everything is issued
)

// ReplayProgress is called as requests complete, with the number complete,
// the number the window holds, the replay time and the events run so far.
type ReplayProgress func(completed, total uint64, at des.Time, events uint64)

// replayer drives a nic.Network from a trace reader, one record ahead.
type replayer struct {
	s     *model.Session
	eng   *des.Engine
	nw    *nic.Network
	cfg   ReplayConfig
	num   uint64
	rd    tracefmt.Reader
	win   window
	total uint64

	disks, inits []int
	devIdx       map[uint32]int
	initIdx      map[uint32]int
	rnd          *rand.Rand

	// Look-ahead: the one record whose arrival event is scheduled.
	next      tracefmt.Record
	nextAt    des.Time
	lastAt    des.Time
	allIssued bool

	pool   freeList[request]
	doneFn func(*nic.Message, des.Time)

	issued, completed       uint64
	reads, writes, late     uint64
	issuedBytes             int64
	outstanding, peak       int
	maxOutstanding          int // run.max_outstanding_requests; 0: no bound
	pendingService          int
	lastDone                des.Time
	lat, readLat, writeLat  hist.Hist
	binIssued, binCompleted []int64
	binWidth                des.Time
	finished                bool
	err                     error
	drainDelivered          uint64
	drainTimeout            des.Time
	progress                ReplayProgress

	// cap is the capture source (nil for a block trace); out the pcapng
	// output (nil without one).
	cap *captureSource
	out *pcapOut

	// live is set when the replayer drives a daemon's engine (StartLive):
	// finishing or failing never stops that engine, and no drain check runs.
	live     bool
	liveBase des.Time // engine time of trace time zero (live only)
}

// freeList recycles values of one type, so per-record state (requests,
// captured frames) is not allocated record after record.
type freeList[T any] struct{ free []*T }

func (l *freeList[T]) get() *T {
	if n := len(l.free); n > 0 {
		v := l.free[n-1]
		l.free = l.free[:n-1]
		return v
	}
	return new(T)
}

// put returns v, which the caller has reset, to the list.
func (l *freeList[T]) put(v *T) { l.free = append(l.free, v) }

func (r *replayer) freeRequest(q *request) {
	*q = request{}
	r.pool.put(q)
}

func (r *replayer) count(s *[]int64, at des.Time) {
	b := int(at / r.binWidth)
	for len(*s) <= b {
		*s = append(*s, 0)
	}
	(*s)[b]++
}

// advance reads the next record of the window into the look-ahead and
// schedules its arrival, or marks the trace exhausted. Only one arrival is
// ever scheduled, so the engine holds a bounded look-ahead however long
// the trace is.
func (r *replayer) advance() {
	var rec tracefmt.Record
	var rel time.Duration
	var err error
	if r.cap != nil {
		rel, err = r.cap.next()
	} else {
		rec, rel, err = r.win.next(r.rd)
	}
	if err != nil {
		if err != io.EOF {
			r.fail(err)
		}
		r.exhausted()
		return
	}
	at, err := compress(rel, r.num)
	if err != nil {
		r.fail(fmt.Errorf("record at trace time %v: %w", rel+time.Duration(r.cfg.From), err))
		r.exhausted()
		return
	}
	at += r.liveBase
	if at < r.lastAt { // out of order in the file: issue it now, count it
		at = r.lastAt
		r.late++
	}
	r.next, r.nextAt, r.lastAt = rec, at, at
	r.eng.Schedule(at, r, opArrive, 0, nil)
}

// lateRecords counts the records issued at an earlier record's time:
// those the window placed there (out of order in the file) and those
// whose compressed time fell behind.
func (r *replayer) lateRecords() uint64 {
	n := r.late + r.win.late
	if r.cap != nil {
		n += r.cap.win.late
	}
	return n
}

func (r *replayer) exhausted() {
	r.allIssued = true
	r.checkFinished()
	if !r.finished && !r.live {
		r.drainDelivered = r.s.Fabric.Stats.Delivered
		r.eng.After(r.drainTimeout, r, opDrain, 0, nil)
	}
}

func (r *replayer) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	if !r.live {
		r.eng.Stop()
	}
}

func (r *replayer) checkFinished() {
	if r.allIssued && r.outstanding == 0 && !r.finished {
		r.finished = true
		if !r.live {
			r.eng.Stop()
		}
	}
}

// Handle implements des.Handler.
func (r *replayer) Handle(ev *des.Event) {
	switch ev.Op {
	case opArrive:
		if r.cap != nil {
			r.issueCapture(ev.At)
		} else {
			r.issue(ev.At)
		}
		if r.out != nil && r.out.err != nil {
			r.fail(r.out.err)
			return
		}
		r.advance()
	case opReply:
		r.pendingService--
		r.reply(ev.Ref.(*request), ev.At)
	case opDrain:
		if r.finished || r.err != nil {
			return
		}
		d := r.s.Fabric.Stats.Delivered
		if d == r.drainDelivered && r.pendingService == 0 {
			r.fail(fmt.Errorf("replay stalled: %d requests outstanding, no packet delivered for %v (%d packets in the fabric, %d queued at NICs)",
				r.outstanding, r.drainTimeout, r.s.Fabric.InFabric(), r.nw.Queued))
			return
		}
		r.drainDelivered = d
		r.eng.After(r.drainTimeout, r, opDrain, 0, nil)
	}
}

// disk maps a trace device to a disk host.
func (r *replayer) disk(dev uint32) int {
	k, ok := r.devIdx[dev]
	if !ok {
		k = len(r.devIdx)
		r.devIdx[dev] = k
	}
	if r.cfg.DeviceMap == DevModulo {
		return r.disks[int(dev%uint32(len(r.disks)))]
	}
	return r.disks[k%len(r.disks)]
}

// initiator picks the host that issues the record.
func (r *replayer) initiator(rec *tracefmt.Record) int {
	n := len(r.inits)
	switch r.cfg.Initiators {
	case InitByInitiator:
		k, ok := r.initIdx[rec.Initiator]
		if !ok {
			k = len(r.initIdx)
			r.initIdx[rec.Initiator] = k
		}
		return r.inits[k%n]
	case InitByDevice:
		return r.inits[r.devIdx[rec.Device]%n] // disk() numbered it already
	case InitRandom:
		return r.inits[r.rnd.IntN(n)]
	}
	return r.inits[int(r.issued%uint64(n))]
}

// issue sends the look-ahead record's first message: a read request of
// RequestBytes, or the write's data (trace-formats §4: request/reply
// mapping; paper 004 §4.1: payload as in the trace, split at the MTU by
// nic.Network.Send).
func (r *replayer) issue(now des.Time) {
	rec := &r.next
	q := r.pool.get()
	q.disk = r.disk(rec.Device)
	q.host = r.initiator(rec)
	q.op, q.size, q.issue = rec.Op, int64(rec.Size), now
	q.dev, q.off, q.rec = rec.Device, rec.Offset, r.issued+1
	if r.cfg.ServiceTime && rec.HasService {
		s, err := compress(rec.Service, r.num)
		if err != nil {
			s = 0
		}
		q.service = s
	}
	r.issued++
	r.issuedBytes += q.size
	r.addOutstanding(now)
	r.count(&r.binIssued, now)
	m := r.nw.NewMessage()
	m.Src, m.Dst, m.Gen, m.Tag, m.Done = q.host, q.disk, now, q, r.doneFn
	if q.op == tracefmt.OpRead {
		r.reads++
		m.Bytes = int64(r.cfg.RequestBytes)
	} else {
		r.writes++
		m.Bytes = q.size
	}
	r.nw.Send(m)
}

// addOutstanding counts a request issued at now; past
// run.max_outstanding_requests the replay fails (the request is still
// sent: the replay stops at the end of this event, unchanged up to it).
func (r *replayer) addOutstanding(now des.Time) {
	r.outstanding++
	r.peak = max(r.peak, r.outstanding)
	if r.maxOutstanding > 0 && r.outstanding > r.maxOutstanding {
		r.fail(&OutstandingError{At: now - r.liveBase, Outstanding: int64(r.outstanding), Limit: int64(r.maxOutstanding)})
	}
}

// reply sends the disk's answer: the read's data, or a write completion of
// RequestBytes.
func (r *replayer) reply(q *request, now des.Time) {
	m := r.nw.NewMessage()
	m.Src, m.Dst, m.Gen, m.Tag, m.Done = q.disk, q.host, now, q, r.doneFn
	if q.op == tracefmt.OpRead {
		m.Bytes = q.size
	} else {
		m.Bytes = int64(r.cfg.RequestBytes)
	}
	r.nw.Send(m)
}

// onDone is every replay message's Done callback. It runs inside the
// fabric's delivery, so the reply is scheduled as an event rather than
// sent from here.
func (r *replayer) onDone(m *nic.Message, at des.Time) {
	if cp, ok := m.Tag.(*frameCopy); ok {
		r.captureDone(m, cp, at)
		r.checkOut()
		return
	}
	q := m.Tag.(*request)
	if r.out != nil {
		r.out.io(m, at, q, q.atDisk)
		r.checkOut()
	}
	if !q.atDisk {
		q.atDisk = true
		r.pendingService++
		r.eng.Schedule(max(at, r.eng.Now())+q.service, r, opReply, 0, q)
		return
	}
	lat := int64(at - q.issue)
	r.lat.Add(lat)
	if q.op == tracefmt.OpRead {
		r.readLat.Add(lat)
	} else {
		r.writeLat.Add(lat)
	}
	r.completed++
	r.outstanding--
	r.lastDone = max(r.lastDone, at)
	r.count(&r.binCompleted, at)
	r.freeRequest(q)
	if r.progress != nil {
		r.progress(r.completed, r.total, at-r.liveBase, r.eng.Fired())
	}
	r.checkFinished()
}

// ReplaySummary is the result of a trace replay. Everything outside Run is
// a pure function of the configuration, the trace and the seed.
type ReplaySummary struct {
	Schema   string                `json:"schema"`
	Config   ReplaySimConfig       `json:"config"`
	Topology model.TopologySummary `json:"topology"`
	Routing  model.RoutingSummary  `json:"routing"`
	Trace    TraceInfo             `json:"trace"`
	Mapping  MappingInfo           `json:"mapping"`

	Requests    uint64 `json:"requests"`
	Completed   uint64 `json:"completed"`
	Reads       uint64 `json:"reads"`
	Writes      uint64 `json:"writes"`
	IssuedBytes int64  `json:"issued_bytes"`
	LateRecords uint64 `json:"late_records"`
	// PeakOutstanding is the most requests issued and not yet complete at
	// once; replay memory follows it.
	PeakOutstanding int `json:"peak_outstanding"`

	// TraceExecutionTimeNs is when the last reply of the window was
	// delivered, from replay time 0 (paper 004 §4).
	TraceExecutionTimeNs float64 `json:"trace_execution_time_ns"`
	// LastIssueNs is when the last request was issued: the window's
	// compressed span.
	LastIssueNs float64 `json:"last_issue_ns"`

	LatencyNs                       hist.Summary       `json:"latency_ns"`
	ReadLatencyNs                   hist.Summary       `json:"read_latency_ns"`
	WriteLatencyNs                  hist.Summary       `json:"write_latency_ns"`
	PacketLatencyNs                 hist.Summary       `json:"packet_latency_ns"`
	NetworkLatencyNs                hist.Summary       `json:"network_latency_ns"`
	AcceptedBytesPerNs              float64            `json:"accepted_bytes_per_ns"`
	AcceptedBytesPerNsPerSwitch     float64            `json:"accepted_bytes_per_ns_per_switch"`
	AcceptedWireBytesPerNsPerSwitch float64            `json:"accepted_wire_bytes_per_ns_per_switch"`
	Packets                         model.PacketCounts `json:"packets"`
	Hops                            model.HopSummary   `json:"hops"`
	LinkUtilisation                 nic.MinMeanMax     `json:"link_utilisation"`
	Invariants                      ReplayInvariants   `json:"invariants"`
	nic.DeliveryReport                                 // end-to-end delivery figures, flattened
	Timeseries                      []ReplayBin        `json:"timeseries"`
	// RECN is the recn switch's report (paper 000 §4.4: SAQs per port and
	// network-wide), nil with other switches.
	RECN *fabric.RECNReport `json:"recn,omitempty"`
	// Capture is set for a packet-capture replay.
	Capture *CaptureInfo   `json:"capture,omitempty"`
	Run     *ReplayRunInfo `json:"run,omitempty"`
}

// TraceInfo says what was replayed.
type TraceInfo struct {
	Name        string  `json:"name"`
	Format      string  `json:"format"`
	Compression float64 `json:"compression"`
	FromNs      float64 `json:"from_ns"` // trace time
	ToNs        float64 `json:"to_ns"`   // trace time; 0 = end
	Records     int64   `json:"records"` // in the window
	Skipped     int64   `json:"skipped_before_window"`
	SpanNs      float64 `json:"span_ns"` // trace time from From to the last record
	Devices     int     `json:"devices"` // distinct devices seen
	Initiators  int     `json:"initiators,omitempty"`
}

// MappingInfo is where the trace landed on the fabric.
type MappingInfo struct {
	DiskHosts      []int  `json:"disk_hosts"`
	InitiatorHosts int    `json:"initiator_hosts"`
	Initiators     string `json:"initiators"`
	DeviceMap      string `json:"device_map"`
}

// ReplayInvariants adds to the fabric invariants that every request of the
// window completed.
type ReplayInvariants struct {
	model.InvariantReport
	AllCompleted bool `json:"all_completed"`
}

// ReplayBin is one time-series bin of a replay.
type ReplayBin struct {
	TimeUs                      float64 `json:"time_us"` // bin start
	Issued                      int64   `json:"issued"`
	Completed                   int64   `json:"completed"`
	OfferedWireBytesPerNsPerSw  float64 `json:"offered_wire_bytes_per_ns_per_switch"`
	AcceptedBytesPerNsPerSwitch float64 `json:"accepted_bytes_per_ns_per_switch"`
	AcceptedWireBytesPerNsPerSw float64 `json:"accepted_wire_bytes_per_ns_per_switch"`
}

// ReplayRunInfo is model.RunInfo plus the replay speed.
type ReplayRunInfo struct {
	model.RunInfo
	ScanSeconds      float64 `json:"scan_seconds"`
	RecordsPerSecond float64 `json:"records_per_second"`
}

// RunReplay replays the configured trace through the fabric until every
// request of the window completed (or a deadlock, a stall or a read error
// stops it, which is returned with the partial summary).
func RunReplay(cfg ReplaySimConfig, progress ReplayProgress) (*ReplaySummary, error) {
	sum, _, err := runReplay(cfg, Options{Progress: progress})
	return sum, err
}

// Options are what a replay reports to besides its summary.
type Options struct {
	// Progress is called as requests complete.
	Progress ReplayProgress
	// PcapOut, when W is set, receives what left the fabric as pcapng.
	PcapOut PcapOut
}

// RunReplayWith is RunReplay with options. A block-I/O trace or a packet
// capture (pcap, pcapng; docs/capture.md) is replayed according to the
// trace's format.
func RunReplayWith(cfg ReplaySimConfig, opts Options) (*ReplaySummary, error) {
	sum, _, err := runReplay(cfg, opts)
	return sum, err
}

// runReplay is RunReplayWith that also returns the session, for tests.
func runReplay(cfg ReplaySimConfig, opts Options) (*ReplaySummary, *model.Session, error) {
	progress := opts.Progress
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	cfg.NIC.Delivery.Mode, cfg.Routing.Mode = cfg.NIC.Delivery.Effective(cfg.Routing.Mode)
	num, _ := compressionNum(cfg.Replay.Compression)
	wallStart := time.Now()
	isCap, err := cfg.Replay.IsCapture()
	if err != nil {
		return nil, nil, err
	}
	var scan TraceScan
	var cscan captureScan
	if isCap {
		// The endpoints are placed during the scan, which needs the host
		// count: build the topology once for it.
		t, terr := topo.Build(cfg.Topology)
		if terr != nil {
			return nil, nil, fmt.Errorf("topology: %w", terr)
		}
		cscan, err = cfg.scanCapture(t.NumHosts())
		scan = cscan.TraceScan
		if err == nil && cscan.sent == 0 && scan.Records > 0 {
			err = fmt.Errorf("replay: none of the %d frames in the window enters the fabric (all local to one host or without a usable address; see replay.map_by)", scan.Records)
		}
	} else {
		if cfg.Replay.Map != "" || cfg.Replay.MapBy != "" {
			return nil, nil, fmt.Errorf("replay.map and replay.map_by apply to packet captures; %s is a block-I/O trace", cfg.Replay.TraceName())
		}
		scan, err = cfg.Replay.ScanTrace()
	}
	if err != nil {
		return nil, nil, err
	}
	if scan.Records == 0 {
		return nil, nil, fmt.Errorf("replay: no records in the window [%v, %v) of the trace", time.Duration(cfg.Replay.From), time.Duration(cfg.Replay.To))
	}
	span, err := compress(scan.Span, num)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: window of %v at compression %g: %w", scan.Span, cfg.Replay.Compression, err)
	}
	scanWall := time.Since(wallStart).Seconds()
	bin := cfg.Run.Bin
	if bin == 0 {
		bin = max(span/50, des.Microsecond)
	}
	if err := model.CheckBins(span, bin); err != nil {
		return nil, nil, err
	}
	var out *pcapOut
	if opts.PcapOut.W != nil {
		link := layers.LinkTypeEthernet
		if isCap {
			link = layers.LinkType(cscan.link)
		}
		out = newPcapOut(opts.PcapOut, link)
	}
	var ep *tapEndpoint
	if out != nil || isCap {
		ep = &tapEndpoint{out: out}
	}
	s, err := newSession(cfg, bin, ep)
	if err != nil {
		return nil, nil, err
	}
	if out != nil {
		if err := out.start(s.Topo.NumHosts()); err != nil {
			return nil, nil, err
		}
	}
	var r *replayer
	if isCap {
		r, err = newCaptureReplayer(s, cfg, num, cscan, out != nil)
	} else {
		r, err = newReplayer(s, cfg, num)
	}
	if err != nil {
		return nil, nil, err
	}
	r.out = out
	if isCap {
		ep.cap = r.cap
	}
	defer r.close()
	r.maxOutstanding = int(cfg.Run.OutstandingBound())
	r.total, r.progress = uint64(scan.Records), progress
	if isCap {
		r.total = uint64(cscan.sent)
	}
	simStart := time.Now()
	r.advance()
	for !r.finished && r.err == nil && s.Fabric.Deadlock == nil && s.Eng.Pending() > 0 {
		s.Eng.RunUntil(des.Never)
	}
	if out != nil {
		if err := out.close(); err != nil && r.err == nil {
			r.err = err
		}
	}
	wall := time.Since(simStart).Seconds()
	sum := r.summarize(cfg, scan)
	total := scanWall + wall
	sum.Run = &ReplayRunInfo{RunInfo: model.RunInfo{WallSeconds: total, Events: s.Eng.Fired(),
		EventsPerSecond:           float64(s.Eng.Fired()) / wall,
		DeliveredPacketsPerSecond: float64(s.Fabric.Stats.Delivered) / wall,
		PeakRSSBytes:              model.PeakRSS()},
		ScanSeconds: scanWall, RecordsPerSecond: float64(r.issued) / total}
	switch {
	case s.Fabric.Deadlock != nil:
		return sum, s, s.Fabric.Deadlock
	case r.err != nil:
		return sum, s, r.err
	case !r.finished:
		return sum, s, fmt.Errorf("replay stopped with %d of %d requests complete", r.completed, r.issued)
	}
	return sum, s, nil
}

// close releases the trace or capture reader.
func (r *replayer) close() {
	if r.cap != nil {
		r.cap.rd.Close()
		return
	}
	r.rd.Close()
}

// checkOut stops the run on the pcapng output's first error.
func (r *replayer) checkOut() {
	if r.out != nil && r.out.err != nil {
		r.fail(r.out.err)
	}
}

// newCaptureReplayer drives the network from a packet capture; the
// engine-driving code (look-ahead, drain check, bins, summary) is the
// block-trace replayer's.
func newCaptureReplayer(s *model.Session, cfg ReplaySimConfig, num uint64, sc captureScan, keep bool) (*replayer, error) {
	c, err := newCaptureSource(cfg, sc, keep)
	if err != nil {
		return nil, err
	}
	r := &replayer{s: s, eng: s.Eng, nw: s.Net, cfg: cfg.Replay, num: num, cap: c,
		binWidth: s.Metrics.BinWidth, drainTimeout: cfg.Run.DrainTimeout}
	r.doneFn = r.onDone
	return r, nil
}

func newReplayer(s *model.Session, cfg ReplaySimConfig, num uint64) (*replayer, error) {
	c := cfg.Replay
	n := s.Topo.NumHosts()
	hosts := make([]int, n)
	for h := range hosts {
		hosts[h] = h
	}
	disks, inits, err := placeHosts(c, cfg.Run.Seed, hosts)
	if err != nil {
		return nil, err
	}
	rd, _, err := c.OpenTrace()
	if err != nil {
		return nil, err
	}
	r := &replayer{s: s, eng: s.Eng, nw: s.Net, cfg: c, num: num, rd: rd, win: window{cfg: c},
		disks: disks, inits: inits, devIdx: map[uint32]int{}, initIdx: map[uint32]int{},
		rnd: rng.Stream(cfg.Run.Seed, "replay.initiators", 0), binWidth: s.Metrics.BinWidth,
		drainTimeout: cfg.Run.DrainTimeout}
	r.doneFn = r.onDone
	return r, nil
}

func (r *replayer) summarize(cfg ReplaySimConfig, scan TraceScan) *ReplaySummary {
	s := r.s
	m := s.Metrics
	sw := float64(s.Topo.NumSwitches())
	sum := &ReplaySummary{Schema: ReplaySchema, Config: cfg,
		Topology: s.TopologySummary(), Routing: s.RoutingSummary(),
		Trace: TraceInfo{Format: string(r.format()), Compression: cfg.Replay.Compression,
			FromNs: float64(cfg.Replay.From), ToNs: float64(cfg.Replay.To), Records: scan.Records, Skipped: scan.Skipped,
			SpanNs: float64(scan.Span), Devices: len(r.devIdx), Initiators: len(r.initIdx)},
		Mapping:  r.mapping(cfg),
		Requests: r.issued, Completed: r.completed, Reads: r.reads, Writes: r.writes, IssuedBytes: r.issuedBytes,
		LateRecords: r.lateRecords(), PeakOutstanding: r.peak,
		TraceExecutionTimeNs: r.lastDone.Nanoseconds(), LastIssueNs: r.lastAt.Nanoseconds(),
		LatencyNs: r.lat.Summarize(1000), ReadLatencyNs: r.readLat.Summarize(1000), WriteLatencyNs: r.writeLat.Summarize(1000),
		PacketLatencyNs: m.Latency.Summarize(1000), NetworkLatencyNs: m.NetLatency.Summarize(1000),
	}
	sum.Trace.Name = cfg.Replay.TraceName()
	if ns := sum.TraceExecutionTimeNs; ns > 0 {
		sum.AcceptedBytesPerNs = float64(m.DelPayload) / ns
		sum.AcceptedBytesPerNsPerSwitch = sum.AcceptedBytesPerNs / sw
		sum.AcceptedWireBytesPerNsPerSwitch = float64(m.DelWireBytes) / ns / sw
	}
	sum.Packets = s.PacketCounts()
	sum.DeliveryReport = s.DeliveryReport()
	sum.Hops = s.Hops()
	sum.LinkUtilisation = s.LinkUtilisation()
	iv := ReplayInvariants{InvariantReport: s.Invariants(), AllCompleted: r.finished && r.completed == r.total}
	if !iv.AllCompleted {
		iv.Violations = append(iv.Violations, fmt.Sprintf("requests: %d of %d in the window completed", r.completed, r.total))
	}
	iv.OK = iv.OK && iv.AllCompleted
	sum.Invariants = iv
	sum.Timeseries = r.timeseries(sw)
	sum.RECN = s.Fabric.RECN(r.binWidth, len(sum.Timeseries))
	if r.cap != nil {
		sum.Capture = r.cap.summary()
	}
	return sum
}

func (r *replayer) format() tracefmt.Format {
	if r.cap != nil {
		return r.cap.rd.Format()
	}
	return r.rd.Format()
}

func (r *replayer) mapping(cfg ReplaySimConfig) MappingInfo {
	if r.cap != nil {
		return MappingInfo{DiskHosts: []int{}, Initiators: "capture endpoints", DeviceMap: "none"}
	}
	return MappingInfo{DiskHosts: r.disks, InitiatorHosts: len(r.inits), Initiators: cfg.Replay.Initiators, DeviceMap: cfg.Replay.DeviceMap}
}

// TraceName returns the name reports use for the configured trace.
func (r ReplayConfig) TraceName() string {
	if r.Trace == "" {
		return sample.Name + " (embedded)"
	}
	return r.Trace
}

func (r *replayer) timeseries(sw float64) []ReplayBin {
	m := r.s.Metrics
	end := max(r.lastDone, r.lastAt)
	n := int(end/r.binWidth) + 1
	binNs := r.binWidth.Nanoseconds()
	at := func(xs []int64, i int) int64 {
		if i < len(xs) {
			return xs[i]
		}
		return 0
	}
	out := make([]ReplayBin, n)
	for i := range out {
		b := &out[i]
		b.TimeUs = float64(i) * binNs / 1000
		b.Issued = at(r.binIssued, i)
		b.Completed = at(r.binCompleted, i)
		b.OfferedWireBytesPerNsPerSw = float64(at(m.BinGenWire, i)) / binNs / sw
		b.AcceptedBytesPerNsPerSwitch = float64(at(m.BinPayload, i)) / binNs / sw
		b.AcceptedWireBytesPerNsPerSw = float64(at(m.BinWire, i)) / binNs / sw
	}
	return out
}

// placeHosts draws the disk hosts and lists the initiator hosts among
// hosts (ascending), as replay.disks, disk_hosts and initiator_hosts say.
func placeHosts(c ReplayConfig, seed uint64, hosts []int) (disks, inits []int, err error) {
	n := len(hosts)
	inSet := map[int]bool{}
	for _, h := range hosts {
		inSet[h] = true
	}
	if len(c.DiskHosts) > 0 {
		seen := map[int]bool{}
		for _, h := range c.DiskHosts {
			if !inSet[h] {
				if hosts[n-1] == n-1 { // every host of the topology
					return nil, nil, fmt.Errorf("replay.disk_hosts: host %d out of range (the topology has hosts 0..%d)", h, n-1)
				}
				return nil, nil, fmt.Errorf("replay.disk_hosts: host %d out of range (the replay may use hosts %v)", h, hosts)
			}
			if seen[h] {
				return nil, nil, fmt.Errorf("replay.disk_hosts: host %d listed twice", h)
			}
			seen[h] = true
		}
		disks = slices.Clone(c.DiskHosts)
	} else {
		if c.Disks >= n {
			return nil, nil, fmt.Errorf("replay.disks %d: the topology has %d hosts, and at least one must be an initiator", c.Disks, n)
		}
		// Paper 004 §4.1: "the disks will be randomly attached to 23
		// switch ports"; here a disk takes a host position.
		for _, i := range rng.Stream(seed, "replay.disks", 0).Perm(n)[:c.Disks] {
			disks = append(disks, hosts[i])
		}
	}
	if len(disks) >= n {
		return nil, nil, fmt.Errorf("replay.disk_hosts: all %d hosts are disks; at least one must be an initiator", n)
	}
	isDisk := map[int]bool{}
	for _, h := range disks {
		isDisk[h] = true
	}
	for _, h := range hosts {
		if !isDisk[h] && (c.InitiatorHosts == 0 || len(inits) < c.InitiatorHosts) {
			inits = append(inits, h)
		}
	}
	if c.InitiatorHosts > len(inits) {
		return nil, nil, fmt.Errorf("replay.initiator_hosts %d: only %d hosts are not disks", c.InitiatorHosts, len(inits))
	}
	return disks, inits, nil
}
