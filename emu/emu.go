// Package emu is the emulation core of the fabemu daemon: it joins frame
// ports (emu/frameport: TAP devices from emu/tap in the daemon, in-memory
// ports from emu/frameport/porttest in tests) to a fabric model
// (model.Session) paced by the wall clock (des.Pacer).
//
// It owns:
//   - the TAP devices' setup: New creates them from the configuration;
//     NewWithPorts attaches ports made elsewhere. Past setup the frame path
//     knows only the frame-port contract;
//   - the host table: which fabric host each port (a TAP) is attached to,
//     and which TAP owns each MAC address (from the ports' own MACs and
//     learnt from the source address of every frame);
//   - the frame path: a frame read from a TAP becomes one fabric message per
//     destination (Ethernet unicast to the TAP owning the MAC; broadcast and
//     multicast replicated to every other TAP; unknown unicast counted and
//     dropped at the boundary), segmented by the NIC at the fabric MTU and
//     reassembled at the destination NIC (a message is one frame; its Tag
//     carries the frame), then written to the destination device by that
//     device's only writer, so the daemon never reorders a flow itself;
//   - backpressure: each TAP host may have a bounded number of bytes in the
//     fabric; past it, the device's reader waits before handing the frame to
//     the pacer and reads nothing more (the kernel's TAP queue applies);
//   - ground-truth order: frames are numbered per (source TAP, destination
//     TAP) stream at ingress (metadata, never written into the frame), and
//     their order at egress is measured with reorder.OrderMeter (RFC 4737,
//     RFC 5236); the NIC's own packet-level meters give the order before
//     and after rearrangement;
//   - background load on the hosts without a TAP: synthetic traffic, a
//     storage trace (background.trace) and a real interface's frames
//     (background.capture, bgcapture.go);
//   - the daemon's configuration (RunConfig), its status (Status), the
//     control API's HTTP handler and the Prometheus collector.
//
// Every model call happens on "the loop": the pacer's goroutine, or, with
// pacing.direct_input, a TAP reader (or writer) that found the loop asleep
// and runs its input itself while holding the pacer's engine (des.Pacer);
// one at a time either way. Otherwise TAP readers push into the pacer's
// bounded input queue (no forwarding goroutine in between: each hand-over
// is a wake-up that costs tens of microseconds).
package emu

import (
	"errors"
	"fmt"
	"github.com/fabemu/fabemu/internal/rtsched"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/tap"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/fabemu/fabemu/internal/netnsutil"
	simmodel "github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/reorder"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"github.com/fabemu/fabemu/workload/replay"
	"github.com/fabemu/fabemu/workload/synth"
	"go.uber.org/zap"
)

// port is one frame port (a TAP device) attached to a fabric host.
type port struct {
	idx  int
	host int
	cfg  TAPConfig
	dev  frameport.Port

	// admission gate: bytes read and not yet delivered everywhere.
	mu          sync.Mutex
	cond        *sync.Cond
	outstanding int
	stalls      atomic.Uint64
	// readerStalls counts the reader's waits for room in the pacer's input
	// queue (the device's own Stats.Stalls counts its other waits).
	readerStalls atomic.Uint64
	// lagStalls counts the reader's waits for the model to catch up
	// (pacing.max_lag, lag.go).
	lagStalls atomic.Uint64

	// loop-owned wall-clock timing of frames read from this device, ns
	tSubmit, tIngress, tModel, tEgress hist.Hist

	// loop-owned counters
	toFabric, toFabricBytes uint64
	unknownUnicast, toSelf  uint64
	delivered, writeRefused uint64

	// Lossless egress (egress.go): room is the device's writer queue when
	// it can wait for room (nil: a full queue refuses); backlog holds the
	// delivered frames waiting for room, in order, while the host's NIC
	// holds its reception. roomWait is set while the loop waits for the
	// writer's call; the rest is loop-owned.
	room       frameport.WriteRoomer
	backlog    []egressFrame
	holding    bool
	heldSince  time.Time
	roomWait   atomic.Bool
	holds      uint64
	heldTotal  time.Duration
	closedHeld uint64 // frames still waiting for room when the daemon stopped

	// picker reads the answers to inline writes on the writing goroutine
	// (nil if the device cannot); picking is set while the port is on the
	// emulator's pick list (under Emulator.pickMu).
	picker  frameport.PickerUpper
	picking bool
}

// frameRef is a frame read from a TAP and the copies of it in the fabric.
type frameRef struct {
	f    *frameport.Frame // nil once handed to the last destination's writer
	src  *port
	cost int
	refs int
	in   time.Time // wall time the loop brought it into the model
}

// copyTag is the Tag of one message: a copy of a frame for one destination.
type copyTag struct {
	ref *frameRef
	dst *port
	st  *stream
	seq uint64
}

// stream is the ground truth of one (source TAP, destination TAP) stream.
type stream struct {
	src, dst *port
	next     uint64
	high     uint64 // highest sequence number delivered + 1
	frames   uint64
	bytes    uint64
	latency  hist.Hist // ps, ingress to delivery at the destination NIC
	meter    *reorder.OrderMeter
}

// Emulator is the running daemon core.
type Emulator struct {
	cfg   RunConfig
	model simmodel.SimConfig
	log   *zap.Logger
	sess  *simmodel.Session
	pacer *des.Pacer
	ports []*port
	start time.Time

	// pickMu guards picks: the ports written to since a reader last
	// looked for answers queued by inline writes (pickup.go).
	pickMu sync.Mutex
	picks  []*port
	nPicks atomic.Int32 // len(picks), read without pickMu

	macs    map[ether.MAC]*port // loop-owned
	streams map[[2]int]*stream  // loop-owned
	order   []*stream           // streams in creation order
	doneFn  func(*nic.Message, des.Time)

	background []int
	bgTrace    *replay.Live // loop-owned
	bgCap      *bgCapture   // background.capture, nil if none
	pcap       *pcapRecorder
	arrivals   *arrivals // the NICs, with a look at frames' packets for pcap_out
	quitting   atomic.Bool
	loopErr    chan error
	wake       egressWake // schedules a flush of a port's egress backlog
	closeOnce  sync.Once
	closeErr   error
	lagWarn    lagWarner
	stopWatch  chan struct{} // closed by Close: the validity watcher ends
	watching   sync.WaitGroup
	rates      rateState
	// bg is the synthetic background load (nil if none), loop-owned;
	// bgLoad its offered load, bgHosts the hosts it may run on (those
	// without a TAP), bgGen how often it was replaced.
	bg      *synth.Background
	bgLoad  float64
	bgHosts []int
	bgGen   uint64
	// dilationAuto: the dilation was measured by calibrate.
	dilationAuto bool
	// window is the largest time of each loop-side stage in the current
	// validity interval (stages.go; loop-owned).
	window stageWindow
	// Free lists of the frame path (loop-owned).
	freeRefs []*frameRef
	freeTags []*copyTag
}

// checkStaleNetns refuses to reclaim a namespace that is not stale: one a
// running process lives in, or whose TAP device a running process (another
// daemon) has open.
func checkStaleNetns(ns, tapName string) error {
	pids, err := netnsutil.Holders(ns)
	if err != nil {
		return fmt.Errorf("reclaiming namespace %s: %w", ns, err)
	}
	if len(pids) > 0 {
		return fmt.Errorf("namespace %s is in use by process %d (%d in all): another daemon or a user's program is running there; refusing to delete it", ns, pids[0], len(pids))
	}
	busy, err := tap.InUse(tapName, ns)
	if err != nil {
		return fmt.Errorf("reclaiming namespace %s: checking TAP %s: %w", ns, tapName, err)
	}
	if busy {
		return fmt.Errorf("namespace %s holds TAP %s, which a running process has open (another daemon?); refusing to delete it", ns, tapName)
	}
	// Only a namespace fabemu left behind is deleted: one holding its
	// marked TAP and nothing but loopback besides.
	ours, what, err := tap.NetnsIsFabemus(ns)
	if err != nil {
		return fmt.Errorf("reclaiming namespace %s: %w", ns, err)
	}
	if !ours {
		return fmt.Errorf("namespace %s was not left by fabemu (it holds %s); refusing to delete it: delete it yourself (ip netns del %s) or name another netns", ns, what, ns)
	}
	return nil
}

// New builds the model and creates the TAP devices (reclaiming stale ones
// of the same names). Nothing runs until Start. On error, everything it
// created is removed.
func New(cfg RunConfig, log *zap.Logger) (*Emulator, error) {
	e, err := newEmulator(cfg, log)
	if err != nil {
		return nil, err
	}
	log = e.log
	// Devices last: they are the side effects.
	for _, p := range e.ports {
		if p.cfg.kind() == KindQEMUSocket {
			d, err := e.openQEMUSocket(p)
			if err != nil {
				e.closeDevices()
				return nil, err
			}
			p.dev = d
			continue
		}
		tc, _ := p.cfg.tapConfig()
		tc.TxQueueLen = cfg.TxQueue
		tc.InlineWriteMax = cfg.TxInline
		tc.Logger = log
		if p.cfg.OwnNetns && netnsutil.Exists(p.cfg.Netns) {
			if err := checkStaleNetns(p.cfg.Netns, p.cfg.Name); err != nil {
				e.closeDevices()
				return nil, err
			}
			log.Warn("reclaiming stale network namespace left by an earlier run", zap.String("netns", p.cfg.Netns))
			if err := netnsutil.Delete(p.cfg.Netns); err != nil {
				e.closeDevices()
				return nil, fmt.Errorf("reclaiming namespace %s: %w", p.cfg.Netns, err)
			}
		}
		d, err := tap.Create(tc)
		if err != nil {
			e.closeDevices()
			return nil, err
		}
		p.dev = d
		fields := []zap.Field{zap.String("tap", d.Name()), zap.String("netns", d.Netns()),
			zap.Stringer("mac", d.MAC()), zap.Int("host", p.host), zap.Bool("reclaimed", d.Reclaimed()), zap.Bool("offload", tc.Offload)}
		if _, why := p.cfg.OffloadDefault(); why != "" {
			fields = append(fields, zap.String("offload_default", why))
		}
		log.Info("TAP device ready", fields...)
	}
	if err := e.attach(); err != nil {
		return nil, err
	}
	return e, nil
}

// NewWithPorts builds the model and attaches ports[i] where cfg.TAPs[i]
// says (its host; the port's name must be the entry's name), instead of
// creating TAP devices: the configuration's device fields (MAC, MTU,
// namespace, addresses) are the ports' business. It takes ownership of
// the ports: they are closed on error and by Close. Nothing runs until
// Start.
func NewWithPorts(cfg RunConfig, ports []frameport.Port, log *zap.Logger) (*Emulator, error) {
	closeAll := func() {
		for _, fp := range ports {
			_ = fp.Close()
		}
	}
	if len(ports) != len(cfg.TAPs) {
		closeAll()
		return nil, fmt.Errorf("%d frame ports for %d taps in the configuration", len(ports), len(cfg.TAPs))
	}
	for i, fp := range ports {
		if fp == nil || fp.Name() != cfg.TAPs[i].Name {
			closeAll()
			name := "<nil>"
			if fp != nil {
				name = fp.Name()
			}
			return nil, fmt.Errorf("frame port %d is %q, taps[%d] is %q", i, name, i, cfg.TAPs[i].Name)
		}
	}
	e, err := newEmulator(cfg, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	for i, p := range e.ports {
		p.dev = ports[i]
	}
	if err := e.attach(); err != nil {
		return nil, err
	}
	return e, nil
}

// newEmulator builds the model, the host table and the background load,
// with no port attached yet.
func newEmulator(cfg RunConfig, log *zap.Logger) (*Emulator, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	model, err := cfg.ResolveModel()
	if err != nil {
		return nil, err
	}
	ep := &arrivals{}
	sess, err := newSession(model, ep)
	if err != nil {
		return nil, err
	}
	n := sess.Topo.NumHosts()
	e := &Emulator{cfg: cfg, model: model, log: log, sess: sess,
		macs: map[ether.MAC]*port{}, streams: map[[2]int]*stream{},
		loopErr: make(chan error, 1), arrivals: ep, stopWatch: make(chan struct{})}
	e.doneFn = e.delivered
	e.wake = egressWake{e}
	if len(cfg.TAPs) > n {
		return nil, fmt.Errorf("%d TAP devices but the fabric (%s) has %d hosts: one TAP per host at most; use fewer TAPs or a larger preset", len(cfg.TAPs), sess.Topo.Name, n)
	}
	used := map[int]string{}
	for i, tc := range cfg.TAPs {
		h := i * n / len(cfg.TAPs)
		if tc.Host != nil {
			h = *tc.Host
		}
		if h >= n {
			return nil, fmt.Errorf("taps[%d] %s: host %d: the fabric has hosts 0..%d", i, tc.Name, h, n-1)
		}
		if other, ok := used[h]; ok {
			return nil, fmt.Errorf("taps[%d] %s: host %d already has TAP %s", i, tc.Name, h, other)
		}
		used[h] = tc.Name
		p := &port{idx: i, host: h, cfg: tc}
		p.cond = sync.NewCond(&p.mu)
		e.ports = append(e.ports, p)
	}
	for h := 0; h < n; h++ {
		if _, ok := used[h]; !ok {
			e.bgHosts = append(e.bgHosts, h)
		}
	}
	if cfg.Background.Enabled || cfg.Background.Trace != "" || cfg.Background.Capture != "" {
		e.background = e.bgHosts
	}
	if cfg.Background.Trace != "" {
		if err := e.startTrace(); err != nil {
			return nil, fmt.Errorf("background.trace: %w", err)
		}
	}
	if cfg.Background.Enabled {
		if err := e.startBackground(model.Traffic.Load); err != nil {
			_ = e.closeDevices()
			return nil, fmt.Errorf("background: %w", err)
		}
	}
	if cfg.Background.Capture != "" {
		if err := e.openCapture(); err != nil {
			_ = e.closeDevices()
			return nil, fmt.Errorf("background.capture: %w", err)
		}
	}
	return e, nil
}

// startBackground replaces the synthetic background load with one of the
// given offered load (0 = none) on the hosts without a TAP (loop
// goroutine, or before Start).
func (e *Emulator) startBackground(load float64) error {
	tc := e.model.Traffic
	if load > 0 && tc.Phases != "" {
		return fmt.Errorf("background.traffic.phases %q sets the load over time; a single load cannot replace it", tc.Phases)
	}
	tc.Load = load
	var next *synth.Background
	if load > 0 {
		var err error
		next, err = synth.StartBackgroundLoad(e.sess.Net, e.sess.Eng, tc, synth.HostLink(e.model.Fabric, e.model.NIC),
			e.cfg.Background.Seed+e.bgGen, e.bgHosts, des.Never)
		if err != nil {
			return err
		}
	}
	if e.bg != nil {
		e.bg.Stop()
	}
	e.bg, e.bgLoad = next, load
	e.bgGen++
	if load > 0 {
		e.background = e.bgHosts
	} else if e.bgTrace == nil && e.bgCap == nil {
		e.background = nil
	}
	return nil
}

// BackgroundState is the synthetic background load in effect.
type BackgroundState struct {
	Load  float64 `json:"load"`
	Hosts int     `json:"hosts"`
}

// SetBackgroundLoad replaces the synthetic background load at runtime
// with one of offered load load (a fraction of each host's link, 0 =
// none) on the hosts without a TAP. Messages already in the fabric stay.
func (e *Emulator) SetBackgroundLoad(load float64) (BackgroundState, error) {
	if !(load >= 0 && load <= 1) {
		return BackgroundState{}, fmt.Errorf("background load %g: want a fraction of the link rate, 0 <= load <= 1", load)
	}
	if load > 0 && len(e.bgHosts) == 0 {
		return BackgroundState{}, errors.New("every host of the fabric has a TAP: there is no host to run background load on")
	}
	var st BackgroundState
	var err error
	if derr := e.pacer.Do(func() {
		if err = e.startBackground(load); err == nil {
			st = BackgroundState{Load: e.bgLoad, Hosts: len(e.bgHosts)}
		}
	}); derr != nil {
		return st, derr
	}
	if err == nil {
		e.log.Info("background load changed", zap.Float64("load", load), zap.Int("hosts", st.Hosts))
	}
	return st, err
}

// startTrace starts the background trace on the hosts without a TAP.
// Its records are read ahead on a goroutine of their own into a bounded
// queue (replay.StartLive), so the pacer's goroutine never waits on the
// file while the disk keeps up; the model sees the records in file order
// whatever the timing, so it stays deterministic.
func (e *Emulator) startTrace() error {
	b := e.cfg.Background
	rc := replay.DefaultReplayConfig()
	rc.Trace, rc.Format, rc.Compression = b.Trace, b.Format, b.Compression
	rc.Disks = b.Disks
	if rc.Disks == 0 {
		rc.Disks = max(1, len(e.background)/4)
	}
	l, err := replay.StartLive(e.sess, rc, b.Seed, e.background)
	if err != nil {
		return err
	}
	e.bgTrace = l
	return nil
}

// attach enters the ports' own MACs in the host table and makes the pacer;
// on error it closes the ports.
func (e *Emulator) attach() error {
	for _, p := range e.ports {
		if mac := p.dev.MAC(); mac != (ether.MAC{}) {
			e.macs[mac] = p
		}
		if r, ok := p.dev.(frameport.WriteRoomer); ok {
			p.room = r
			r.OnWriteRoom(func() { e.writerRoom(p) })
		}
		if pu, ok := p.dev.(frameport.PickerUpper); ok {
			p.picker = pu
		}
	}
	if e.cfg.Pacing.DilationAuto {
		e.cfg.Pacing.Dilation = e.calibrate(calibrateFor)
		e.dilationAuto = true
		e.log.Info("dilation auto: the model keeps up at this dilation (wall seconds per simulated second)",
			zap.Float64("dilation", e.cfg.Pacing.Dilation), zap.Int("background_hosts", len(e.background)))
	}
	// The pacer maps simulated time zero to now, after the devices are
	// ready, so that setting them up does not count as lag.
	var err error
	pc := des.PacerConfig{Dilation: e.cfg.Pacing.Dilation,
		LagThreshold: time.Duration(e.cfg.Pacing.LagThreshold), Spin: time.Duration(e.cfg.Pacing.Spin),
		PreciseTimer: e.cfg.Pacing.PreciseTimer, DirectInput: e.cfg.Pacing.DirectInput, Classify: e.classify, Stages: e.intervalStages,
		BusyPoll: e.cfg.Pacing.BusyPollFor(runtime.NumCPU())}
	e.log.Info("pacing", zap.String("busy_poll", e.cfg.Pacing.BusyPoll), zap.Duration("busy_poll_period", pc.BusyPoll),
		zap.Int("cpus", runtime.NumCPU()), zap.String("overload", e.cfg.Pacing.Overload), zap.Duration("max_lag", time.Duration(e.cfg.Pacing.MaxLag)))
	if e.cfg.Pacing.Overload == OverloadDilate {
		pc.DilateAfter = time.Duration(e.cfg.Pacing.MaxLag)
	}
	e.pacer, err = des.NewPacer(e.sess.Eng, pc)
	if err != nil {
		e.closeDevices()
		return err
	}
	return nil
}

// calibrateFor is how long dilation auto runs the model unpaced.
const calibrateFor = 500 * time.Millisecond

// calibrate runs the model unpaced (background load only: no frame is
// read yet) for about budget of wall time and returns the smallest
// dilation it keeps up with: wall time per simulated time, times 1.5 for
// the frames, the loop's wake-ups and the machine's other work, at least
// 1 (real time) and at most 1e6. The simulated time it runs is simply the
// start of the run (the pacer maps the engine's time to the wall clock
// when it starts).
func (e *Emulator) calibrate(budget time.Duration) float64 {
	const margin = 1.5
	eng := e.sess.Eng
	t0 := time.Now()
	// The first half warms the fabric up (queues fill towards their
	// steady state); the speed is measured over the second half.
	var tm time.Time
	var sm des.Time
	step := des.Microsecond
	for time.Since(t0) < budget {
		if eng.NextAt() == des.Never || e.sess.Fabric.Deadlock != nil {
			return 1 // nothing runs by itself: real time holds
		}
		if tm.IsZero() && time.Since(t0) >= budget/2 {
			tm, sm = time.Now(), eng.Now()
		}
		c := time.Now()
		eng.RunUntil(eng.Now() + step)
		// Grow the slice while it runs in under a millisecond.
		if time.Since(c) < time.Millisecond && step < des.Millisecond {
			step *= 2
		}
	}
	if tm.IsZero() {
		return 1e6
	}
	sim := (eng.Now() - sm).Seconds()
	if sim <= 0 {
		return 1e6
	}
	d := time.Since(tm).Seconds() / sim * margin
	return min(max(d, 1), 1e6)
}

// Start runs the pacer loop and starts every device's reader and writer.
func (e *Emulator) Start() error {
	if prio := e.cfg.Pacing.RealtimePriority; prio > 0 {
		if err := rtsched.SetFIFO(prio); err != nil {
			return fmt.Errorf("pacing.realtime_priority: %w", err)
		}
		e.log.Info("every daemon thread runs under SCHED_FIFO", zap.Int("priority", prio))
	}
	e.start = time.Now()
	go func() { e.loopErr <- e.pacer.Run() }()
	e.watching.Add(1)
	go func() { defer e.watching.Done(); e.watchValidity() }()
	if e.bgCap != nil {
		e.bgCap.start(e.pacer)
	}
	for _, p := range e.ports {
		if err := p.dev.StartFunc(func(f *frameport.Frame) bool { return e.submit(p, f) }); err != nil {
			return err
		}
	}
	return nil
}

// submit runs on p's reader goroutine: it submits the frame, then picks
// up what inline writes made the kernel answer at once (pickup.go). It
// returns false (the reader refuses the frame and stops) once the
// emulator is stopping.
func (e *Emulator) submit(p *port, f *frameport.Frame) bool {
	if !e.submitFrame(p, f) {
		return false
	}
	e.pickUp()
	return true
}

// submitFrame waits until p's host has room in the fabric, then hands the
// frame to the pacer (run at once on this goroutine if the loop is asleep:
// pacing.direct_input); false once the emulator is stopping.
func (e *Emulator) submitFrame(p *port, f *frameport.Frame) bool {
	cost := len(f.Data)
	if !e.awaitLag(p) || !e.acquire(p, cost) {
		return false
	}
	in := ingressPool.Get().(*ingressInput)
	in.e, in.p, in.f, in.cost, in.sub = e, p, f, cost, time.Now()
	if in.fn == nil {
		in.fn = in.run // bound once per pooled holder: no closure per frame
	}
	waited, err := e.pacer.SubmitWait(des.Input{At: f.At, Fn: in.fn})
	if waited {
		p.readerStalls.Add(1)
	}
	if err != nil {
		*in = ingressInput{fn: in.fn}
		ingressPool.Put(in)
		e.release(p, cost)
		return false
	}
	return true
}

// ingressInput is a frame on its way from its reader into the model: the
// pacer input's Fn is its run, bound once, and the holder is pooled, so a
// frame's hand-over allocates nothing.
type ingressInput struct {
	e    *Emulator
	p    *port
	f    *frameport.Frame
	cost int
	sub  time.Time
	fn   func(des.Time)
}

var ingressPool = sync.Pool{New: func() any { return new(ingressInput) }}

// run brings the frame into the model (loop) and returns the holder.
func (in *ingressInput) run(at des.Time) {
	e, p, f, cost, sub := in.e, in.p, in.f, in.cost, in.sub
	*in = ingressInput{fn: in.fn}
	ingressPool.Put(in)
	e.ingress(p, f, cost, at, sub)
}

// acquire waits until p's host may put cost more bytes into the fabric;
// false if the emulator is stopping.
func (e *Emulator) acquire(p *port, cost int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	stalled := false
	for p.outstanding > 0 && p.outstanding+cost > e.cfg.AdmitBytes && !e.quitting.Load() {
		if !stalled {
			p.stalls.Add(1)
			stalled = true
		}
		p.cond.Wait()
	}
	if e.quitting.Load() {
		return false
	}
	p.outstanding += cost
	return true
}

func (e *Emulator) release(p *port, cost int) {
	p.mu.Lock()
	p.outstanding -= cost
	p.mu.Unlock()
	p.cond.Signal()
}

// ingress turns a frame into one message per destination (loop goroutine).
func (e *Emulator) ingress(p *port, f *frameport.Frame, cost int, at des.Time, sub time.Time) {
	now := time.Now()
	p.tSubmit.Add(int64(sub.Sub(f.At)))
	p.tIngress.Add(int64(now.Sub(sub)))
	e.window.readToSubmit = max(e.window.readToSubmit, sub.Sub(f.At))
	e.window.submitToIngress = max(e.window.submitToIngress, now.Sub(sub))
	h := &f.Header
	if !h.Src.IsMulticast() {
		e.macs[h.Src] = p
	}
	ref := e.newFrameRef()
	*ref = frameRef{f: f, src: p, cost: cost, in: now}
	if h.Class() == ether.Unicast {
		q, ok := e.macs[h.Dst]
		switch {
		case !ok:
			p.unknownUnicast++
		case q == p:
			p.toSelf++
		default:
			e.sendCopy(ref, q, at)
		}
	} else {
		for _, q := range e.ports {
			if q != p {
				e.sendCopy(ref, q, at)
			}
		}
	}
	if ref.refs == 0 {
		e.finish(ref)
	}
}

func (e *Emulator) stream(p, q *port) *stream {
	k := [2]int{p.idx, q.idx}
	st := e.streams[k]
	if st == nil {
		m, _ := reorder.NewOrderMeter(reorder.MeterConfig{
			Stream:   fmt.Sprintf("frames %s>%s at TAP egress (numbered at ingress)", p.cfg.Name, q.cfg.Name),
			TimeUnit: "ps", HistoryWindow: 1024})
		st = &stream{src: p, dst: q, meter: m}
		e.streams[k] = st
		e.order = append(e.order, st)
	}
	return st
}

func (e *Emulator) sendCopy(ref *frameRef, q *port, at des.Time) {
	p := ref.src
	st := e.stream(p, q)
	tag := e.newCopyTag()
	*tag = copyTag{ref: ref, dst: q, st: st, seq: st.next}
	st.next++
	ref.refs++
	m := e.sess.Net.NewMessage()
	m.Src, m.Dst, m.Bytes, m.Gen = p.host, q.host, int64(len(ref.f.Data)), at
	m.Tag, m.Done = tag, e.doneFn
	p.toFabric++
	p.toFabricBytes += uint64(len(ref.f.Data))
	e.sess.Net.Send(m)
}

// delivered is a message's Done: the whole frame reached the destination
// host; write it to the destination device (loop goroutine).
func (e *Emulator) delivered(m *nic.Message, at des.Time) {
	tag, ok := m.Tag.(*copyTag)
	if !ok {
		return
	}
	t0 := time.Now()
	st := tag.st
	st.frames++
	st.bytes += uint64(m.Bytes)
	st.latency.Add(int64(at - m.Gen))
	st.meter.Observe(tag.seq, int(m.Bytes), int64(at))
	q := tag.dst
	var nf *frameport.Frame
	if tag.ref.refs == 1 && e.pcap == nil {
		// The frame's last copy (unicast: its only one): the frame read
		// goes to the destination's writer as it is, without a copy (64 KB
		// for a super-frame); its buffer returns to the source's pool once
		// written. pcap_out records the frame's bytes after the hand-over,
		// so it keeps the copy.
		nf, tag.ref.f = tag.ref.f, nil
	} else {
		nf = q.dev.NewFrame()
		nf.Data = append(nf.Data, tag.ref.f.Data...)
		nf.Offload = tag.ref.f.Offload // a super-frame stays one; the destination segments it if it must
	}
	nf.At = time.Now() // the writer measures its queue and write from here
	tag.ref.src.tModel.Add(int64(t0.Sub(tag.ref.in)))
	tag.ref.src.tEgress.Add(int64(nf.At.Sub(t0)))
	// The model's stage is late by how long after the wall time of its
	// simulated delivery the delivery ran.
	e.window.modelLate = max(e.window.modelLate, t0.Sub(e.pacer.WallTime(at)))
	e.window.egress = max(e.window.egress, nf.At.Sub(t0))
	reordered := tag.seq+1 < st.high
	st.high = max(st.high, tag.seq+1)
	mm := e.arrivals.take(m)
	ef := egressFrame{f: nf, tag: tag, at: at}
	if e.pcap != nil {
		ef.comment = pcapComment(tag, int64(at-m.Gen), mm, reordered)
	}
	e.egress(q, ef)
}

// write hands a delivered frame to q's writer and lets go of the copy
// (loop goroutine).
func (e *Emulator) write(q *port, ef egressFrame) {
	tag := ef.tag
	var rec []byte
	if e.pcap != nil {
		rec = tag.ref.f.Data // the frame's bytes, still held by its ref
	}
	small := len(ef.f.Data) <= e.cfg.TxInline // Send may write it inline
	if err := q.dev.Send(ef.f); err != nil {
		q.writeRefused++
	} else {
		q.delivered++
		if small && q.picker != nil {
			e.notePick(q)
		}
		if e.pcap != nil {
			e.pcap.record(q, e.pacer.WallTime(ef.at), rec, ef.comment)
		}
	}
	ref := tag.ref
	e.freeCopyTag(tag)
	ref.refs--
	if ref.refs == 0 {
		e.finish(ref)
	}
}

func (e *Emulator) finish(ref *frameRef) {
	if ref.f != nil { // nil: handed to the destination's writer (delivered)
		ref.f.Release()
	}
	src, cost := ref.src, ref.cost
	*ref = frameRef{}
	e.freeRefs = append(e.freeRefs, ref)
	e.release(src, cost)
}

// newFrameRef, newCopyTag and freeCopyTag keep loop-owned free lists of
// the frame path's bookkeeping, so that a frame allocates nothing once
// they have grown to the frames in flight (loop only).
func (e *Emulator) newFrameRef() *frameRef {
	if n := len(e.freeRefs); n > 0 {
		r := e.freeRefs[n-1]
		e.freeRefs = e.freeRefs[:n-1]
		return r
	}
	return new(frameRef)
}

func (e *Emulator) newCopyTag() *copyTag {
	if n := len(e.freeTags); n > 0 {
		t := e.freeTags[n-1]
		e.freeTags = e.freeTags[:n-1]
		return t
	}
	return new(copyTag)
}

func (e *Emulator) freeCopyTag(t *copyTag) {
	*t = copyTag{}
	e.freeTags = append(e.freeTags, t)
}

// Outstanding returns the bytes read from all devices and not yet
// delivered everywhere.
func (e *Emulator) Outstanding() int {
	n := 0
	for _, p := range e.ports {
		p.mu.Lock()
		n += p.outstanding
		p.mu.Unlock()
	}
	return n
}

// Drain stops reading the devices and waits until every frame in the
// fabric has been delivered or timeout passed. It reports whether the
// fabric drained.
func (e *Emulator) Drain(timeout time.Duration) bool {
	e.stopReading()
	deadline := time.Now().Add(timeout)
	for e.Outstanding() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

func (e *Emulator) stopReading() {
	if e.quitting.Swap(true) {
		return
	}
	if e.bgCap != nil {
		e.bgCap.stop()
	}
	for _, p := range e.ports {
		p.mu.Lock()
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// Close stops the loop and closes every port, which removes every device
// (and namespace) the emulator created. It is idempotent.
func (e *Emulator) Close() error {
	e.closeOnce.Do(func() {
		close(e.stopWatch)
		e.watching.Wait()
		e.stopReading()
		e.pacer.Stop()
		if e.start != (time.Time{}) {
			<-e.pacer.Done()
		}
		e.dropBacklogs() // the loop has ended: its state is ours
		e.closeErr = e.closeDevices()
		if e.pcap != nil {
			e.closeErr = errors.Join(e.closeErr, e.pcap.close())
		}
	})
	return e.closeErr
}

// closeDevices closes every port, the background trace's reader and the
// background capture.
func (e *Emulator) closeDevices() error {
	var errs []error
	if e.bgCap != nil {
		errs = append(errs, e.bgCap.close())
		e.bgCap = nil
	}
	if e.bgTrace != nil {
		errs = append(errs, e.bgTrace.Close())
		e.bgTrace = nil
	}
	for _, p := range e.ports {
		if p.dev == nil {
			continue
		}
		if err := p.dev.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Devices returns the names of the ports (TAP devices), in config order.
func (e *Emulator) Devices() []string {
	var out []string
	for _, p := range e.ports {
		out = append(out, p.cfg.Name)
	}
	return out
}

// Model returns the resolved fabric configuration.
func (e *Emulator) Model() simmodel.SimConfig { return e.model }

// Pacer returns the pacer (for its statistics).
func (e *Emulator) Pacer() *des.Pacer { return e.pacer }

// sortedStreams returns the streams by (source, destination).
func (e *Emulator) sortedStreams() []*stream {
	out := slices.Clone(e.order)
	slices.SortFunc(out, func(a, b *stream) int {
		if a.src.idx != b.src.idx {
			return a.src.idx - b.src.idx
		}
		return a.dst.idx - b.dst.idx
	})
	return out
}
