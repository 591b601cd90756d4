package emu

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/fabemu/fabemu/internal/rtsched"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/fabemu/fabemu/emu/tap"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/model"
	"gopkg.in/yaml.v3"
)

// Duration is a wall-clock duration in Go syntax ("500ms", "2s") in config
// files.
type Duration time.Duration

// UnmarshalText parses Go duration syntax.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// String formats d in Go duration syntax.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes Go duration syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 500ms", n.Line)
	}
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

// TAPConfig is one TAP device attached to a fabric host.
type TAPConfig struct {
	Name string `yaml:"name" json:"name" doc:"interface name (at most 15 bytes)"`
	MAC  string `yaml:"mac" json:"mac" doc:"hardware address, e.g. 02:fa:be:00:00:01; empty = the kernel's random one"`
	MTU  int    `yaml:"mtu" json:"mtu" unit:"bytes" doc:"device MTU; left out, 1500" nonzero:"68 to 65521 bytes (leave the key out for 1500)"`
	// Host is the fabric host the device is attached to; nil spreads the
	// devices evenly over the hosts.
	Host  *int     `yaml:"host" json:"host" doc:"fabric host index the device attaches to; absent = spread the devices evenly over the hosts"`
	Netns string   `yaml:"netns" json:"netns" doc:"network namespace to move the device into (created if absent); empty = the daemon's"`
	Addrs []string `yaml:"addrs" json:"addrs" doc:"addresses with prefix length to configure, e.g. 10.250.0.1/24, fd00:fab::1/64"`
	// OwnNetns makes the daemon own Netns: a namespace of that name left by
	// a crashed run is deleted and recreated, and the namespace is deleted
	// on exit.
	OwnNetns bool `yaml:"own_netns" json:"own_netns" doc:"the daemon owns netns: reclaims a stale one on start and deletes it on exit"`
	Owner    int  `yaml:"owner" json:"owner" doc:"uid allowed to attach to the device without CAP_NET_ADMIN (a QEMU user); 0 = root"`
	Persist  bool `yaml:"persist" json:"persist" doc:"create the device persistent so that another process (QEMU) can attach to it"`
	// Offload opens the device with checksum and TCP segmentation offload
	// (tap.Config.Offload): the kernel hands up 64 KB super-frames, each
	// one fabric message. Absent, it is on for a device in a network
	// namespace of its own, whose peer is that namespace's kernel stack,
	// and off otherwise (OffloadDefault says why).
	Offload *bool `yaml:"offload" json:"offload" doc:"checksum and TCP segmentation offload (IFF_VNET_HDR): TCP super-frames of up to 64 KB cross the fabric as one message each, segmented at the fabric MTU; a destination without offload gets them segmented in software; absent = on for a device in a network namespace (netns) whose peer is the kernel's stack, off for a persistent or user-owned device (a VM attaches to it and may not take super-frames) and for a device in the daemon's own namespace (it may be bridged to a NIC or VM that cannot)"`
	// Kind and Socket make the entry a VM's port instead of a TAP device
	// (vmport.go).
	Kind   string `yaml:"kind" json:"kind,omitempty" doc:"tap (default): a TAP device the daemon creates; qemu-socket: a socket a stock QEMU attaches a VM's virtio-net card to (-netdev stream on QEMU 7.2 and later, -netdev socket on older); the VM reattaches after a restart"`
	Socket string `yaml:"socket" json:"socket,omitempty" doc:"kind qemu-socket: the unix socket path the daemon listens on (mode 0600, owned by owner), or ip:port for TCP (-netdev socket of QEMU before 7.2)"`
}

// ModelConfig selects the fabric: a preset, overridden by --set style
// assignments, and the delivery mode.
type ModelConfig struct {
	Preset string   `yaml:"preset" json:"preset" doc:"named fabric configuration (fabemu sim --list-presets)"`
	Set    []string `yaml:"set" json:"set" doc:"overrides of preset fields, e.g. fabric.link_rate=10Gbps"`
	// Delivery, Reorder and Injection are nic.delivery's mode, reorder
	// memory and injection policy (empty = the preset's).
	Delivery  string `yaml:"delivery" json:"delivery" doc:"deterministic, adaptive-ooo or adaptive-inorder; empty = follow the preset's routing"`
	Reorder   string `yaml:"reorder" json:"reorder" doc:"rearrangement memory per NIC for adaptive-inorder (e.g. dynamic:256KiB,cap=128KiB)"`
	Injection string `yaml:"injection" json:"injection" doc:"injection policy for adaptive-inorder: unlimited, li or lw"`
}

// BackgroundConfig is synthetic load on the hosts without a TAP device.
type BackgroundConfig struct {
	Enabled bool                `yaml:"enabled" json:"enabled" doc:"drive the hosts without a TAP device with synthetic traffic"`
	Traffic model.TrafficConfig `yaml:"traffic" json:"traffic"`
	Seed    uint64              `yaml:"seed" json:"seed" doc:"seed of the background traffic"`
	// Trace is a block-I/O trace replayed in real time on the hosts
	// without a TAP device (workload/replay's mapping, request/reply).
	Trace       string  `yaml:"trace" json:"trace,omitempty" doc:"block-I/O trace (any format fabemu replay reads, .gz accepted) replayed in real time on the hosts without a TAP device, beside or instead of the synthetic traffic; empty = none"`
	Format      string  `yaml:"format" json:"format,omitempty" doc:"format of background.trace: auto (sniffed), srt, msr, spc, blkparse, fio, disksim, csv"`
	Compression float64 `yaml:"compression" json:"compression,omitempty" doc:"time compression of background.trace: a record at trace time t is issued t/C after the daemon starts"`
	Disks       int     `yaml:"disks" json:"disks,omitempty" doc:"hosts without a TAP that act as the trace's disks (drawn with background.seed); 0 = a quarter of them, at least one"`
	// Capture is a real interface whose frames are mirrored into the
	// fabric as background load (bgcapture.go).
	Capture       string `yaml:"capture" json:"capture,omitempty" doc:"real network interface whose frames (both directions, seen by an eBPF program) are mirrored into the fabric as background load between the hosts without a TAP, each from the host of its source endpoint to the host of its destination, sized by its original length, when it was seen; empty = none"`
	CaptureNetns  string `yaml:"capture_netns" json:"capture_netns,omitempty" doc:"named network namespace of background.capture; empty = the daemon's"`
	CaptureMapBy  string `yaml:"capture_map_by" json:"capture_map_by,omitempty" doc:"endpoints of background.capture: auto (MACs), mac or ip; placed on hosts as fabemu replay places a capture's, seeded by background.seed"`
	CaptureRing   int    `yaml:"capture_ring" json:"capture_ring,omitempty" unit:"bytes" doc:"ring buffer of background.capture (rounded up to a power of two); frames it has no room for are counted as dropped; left out, 4 MiB" nonzero:"4096 to 1073741824 bytes (leave the key out for 4 MiB)"`
	CaptureAttach string `yaml:"capture_attach" json:"capture_attach,omitempty" doc:"how background.capture attaches: auto (tcx, else clsact), tcx (Linux 6.6 or later) or tc"`
}

// PacingConfig is how the model follows the wall clock.
type PacingConfig struct {
	Dilation         float64  `yaml:"dilation" json:"dilation" doc:"wall seconds per simulated second: 1 = real time, 10 = the fabric runs ten times slower than the wall clock"`
	DilationAuto     bool     `yaml:"dilation_auto" json:"dilation_auto" doc:"measure the model's speed (with its background load) for half a second at start and run at the smallest dilation it keeps up with, with a 50% margin, at least 1; replaces dilation"`
	LagThreshold     Duration `yaml:"lag_threshold" json:"lag_threshold" unit:"time" doc:"excess lag (an event's lag beyond the loop's own oversleep of a timed sleep) above which a one-second interval is marked not real-time valid"`
	Spin             Duration `yaml:"spin" json:"spin" unit:"time" doc:"poll instead of sleeping when the next event is this close (lower latency, more CPU)"`
	MaxLag           Duration `yaml:"max_lag" json:"max_lag" unit:"time" doc:"how far behind the wall clock the model may fall (excess lag of its oldest due event) before pacing.overload acts; below lag_threshold it acts before an interval is marked not valid; 0 = no bound (overload none)"`
	Overload         string   `yaml:"overload" json:"overload" doc:"what the daemon does when the model falls max_lag behind: backpressure (stop reading the TAPs, and hand the model at most a few hundred frames ahead, until it catches up: the applications slow down, the fabric keeps real time), dilate (raise the dilation by half, again while it still falls behind: the fabric slows down and stays valid at the dilation reached) or none (fall behind and mark the intervals not valid)"`
	PreciseTimer     bool     `yaml:"precise_timer" doc:"sleep on a timerfd: no millisecond overshoot of sub-millisecond sleeps (lower lag), but a slower wake-up on input (higher ping round trip)"`
	RealtimePriority int      `yaml:"realtime_priority" json:"realtime_priority" doc:"SCHED_FIFO priority (1-99) of every daemon thread, so the model's threads run as soon as they are runnable instead of a time slice behind the applications on the same CPUs (real-time valid under iperf3 on two cores: 100% against 23-77% without; the applications get less CPU); needs CAP_SYS_NICE or RLIMIT_RTPRIO; 0 = off"`
	BusyPoll         string   `yaml:"busy_poll" json:"busy_poll" doc:"auto, on or off: the model's loop runs on a locked OS thread that polls instead of sleeping while traffic flows (no thread wake-up per frame; one CPU busy while it flows) and parks after busy_poll_idle without input or event; auto = on with more than two CPUs, where a core can be spared"`
	BusyPollIdle     Duration `yaml:"busy_poll_idle" json:"busy_poll_idle" unit:"time" doc:"how long the busy-polling loop goes on polling after the last input or event before it parks"`
	DirectInput      bool     `yaml:"direct_input" json:"direct_input" doc:"a TAP reader that finds the model's loop asleep runs its frame into the model itself (admits it, fires the due events, hands delivered frames to the writers) instead of waking the loop's goroutine: one thread wake-up less per frame on an idle or lightly loaded daemon"`
}

// RunConfig is the configuration of the daemon (fabemu run).
type RunConfig struct {
	Model      ModelConfig      `yaml:"model" json:"model"`
	TAPs       []TAPConfig      `yaml:"taps" json:"taps"`
	Background BackgroundConfig `yaml:"background" json:"background"`
	Pacing     PacingConfig     `yaml:"pacing" json:"pacing"`
	// AdmitBytes bounds the bytes a TAP host may have in the fabric (read
	// but not yet delivered); past it the daemon stops reading that device.
	AdmitBytes int `yaml:"admit_bytes" json:"admit_bytes" unit:"bytes" doc:"bytes a TAP host may have in the fabric before the daemon stops reading its device (backpressure)"`
	// TxQueue is each device's writer queue in frames.
	TxQueue int `yaml:"tx_queue" json:"tx_queue" unit:"frames" doc:"writer queue of each device; a frame delivered to a full queue waits and the destination NIC stops accepting until the writer drains (lossless egress)"`
	// TxInline is the largest frame the model's loop writes to a device
	// itself when its writer is idle.
	TxInline int `yaml:"tx_inline" json:"tx_inline" unit:"bytes" doc:"a delivered frame of at most this many bytes is written to its TAP by the model's loop itself when the device's writer is idle with an empty queue and the device had no such frame in the last millisecond, saving the writer's wake-up (lower ping round trip; the loop spends the write system call); 0 = always through the writer"`
	// GCMemoryLimit is the Go runtime's soft memory limit for the daemon.
	GCMemoryLimit int64 `yaml:"gc_memory_limit" json:"gc_memory_limit" unit:"bytes" doc:"soft memory limit of the daemon's Go runtime: the garbage collector runs when the heap nears it, not every time it has grown by GOGC percent (fewer collections, each a pause and a CPU the model may want); 0 = the runtime's GOGC pacing only; the GOGC and GOMEMLIMIT environment variables override"`
	// PcapOut records every frame written to a TAP as pcapng.
	PcapOut      string   `yaml:"pcap_out" json:"pcap_out,omitempty" doc:"record every frame the daemon writes to a TAP (after the fabric) to this pcapng file: one interface per TAP, the fabric's latency and order in each packet's comment; frames past a full recorder queue are counted, not recorded"`
	DrainTimeout Duration `yaml:"drain_timeout" json:"drain_timeout" unit:"time" doc:"on SIGTERM/SIGINT, how long to let frames in the fabric reach their devices"`
	API          struct {
		Socket string `yaml:"socket" json:"socket" doc:"unix socket of the control API (mode 0600); empty = none"`
	} `yaml:"api" json:"api"`
	Metrics struct {
		Enabled bool `yaml:"enabled" json:"enabled" doc:"serve Prometheus metrics on 127.0.0.1"`
		Port    int  `yaml:"port" json:"port" doc:"TCP port of the metrics endpoint on 127.0.0.1 (0 = any free port)"`
	} `yaml:"metrics" json:"metrics"`
	Log struct {
		Format string `yaml:"format" json:"format" doc:"json or console"`
		Level  string `yaml:"level" json:"level" doc:"debug, info, warn or error"`
	} `yaml:"log" json:"log"`
}

// BusyPollFor returns the pacer's busy-poll period for pacing.busy_poll
// (0 = off) on a machine with ncpu CPUs: auto polls only where a CPU can
// be spared (more than two), since the poller holds one while traffic
// flows and on two CPUs the applications behind the TAPs want both.
func (p PacingConfig) BusyPollFor(ncpu int) time.Duration {
	if p.BusyPoll == "on" || (p.BusyPoll == "auto" && ncpu > 2) {
		return time.Duration(p.BusyPollIdle)
	}
	return 0
}

// Overload modes (pacing.overload).
const (
	OverloadBackpressure = "backpressure"
	OverloadDilate       = "dilate"
	OverloadNone         = "none"
)

// Defaults of RunConfig.
const (
	DefaultSocket      = "/run/fabemu/fabemu.sock"
	DefaultMetricsPort = 9464
	DefaultPreset      = "torus8x8-dor"
)

// MinDilation and MaxDilation bound pacing.dilation: below a thousandth
// the pacer's wall-to-simulated conversions leave the range of a
// time.Duration within seconds; above a million a simulated microsecond
// takes a wall second.
const (
	MinDilation = 1e-3
	MaxDilation = 1e6
)

// DefaultRunConfig is the daemon's configuration before the file.
func DefaultRunConfig() RunConfig {
	var c RunConfig
	c.Model.Preset = DefaultPreset
	c.Background.Traffic = model.DefaultTrafficConfig()
	c.Background.Traffic.Load = 0.01
	c.Background.Traffic.Sizes = "4096" // few large messages: cheap to simulate in real time
	c.Background.Seed = 1
	c.Background.Format = "auto"
	c.Background.Compression = 1
	c.Pacing = PacingConfig{Dilation: 1, LagThreshold: Duration(time.Millisecond), Spin: Duration(20 * time.Microsecond),
		MaxLag: Duration(100 * time.Millisecond), Overload: OverloadBackpressure, DirectInput: true,
		BusyPoll: "auto", BusyPollIdle: Duration(2 * time.Millisecond)}
	c.AdmitBytes = 256 * 1024
	c.TxQueue = 1024
	c.TxInline = 2048
	c.GCMemoryLimit = 512 << 20
	c.DrainTimeout = Duration(2 * time.Second)
	c.API.Socket = DefaultSocket
	c.Metrics.Enabled = true
	c.Metrics.Port = DefaultMetricsPort
	c.Log.Format = "console"
	c.Log.Level = "info"
	return c
}

// LoadRunConfig reads a daemon config file on top of the defaults. Errors
// name the file and line.
func LoadRunConfig(path string) (RunConfig, error) {
	c := DefaultRunConfig()
	if err := params.LoadYAML(path, &c); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Layers are the model's layers for the configuration resolver: the
// preset, the delivery shorthands, then the overrides of model.set.
func (m ModelConfig) Layers() model.Layers {
	return model.Layers{Preset: m.Preset, PresetSource: "model.preset",
		Shorthands: model.Shorthands("model.", m.Delivery, m.Reorder, m.Injection),
		Sets:       model.Sets("model.set", m.Set)}
}

// ResolveModel resolves the fabric configuration with the model's
// resolver (ModelConfig.Layers), then puts in the background traffic.
func (c *RunConfig) ResolveModel() (model.SimConfig, error) {
	sc, _, err := model.Resolve(c.Model.Layers(), model.LookupPreset)
	if err != nil {
		return sc, err
	}
	if c.Background.Enabled {
		sc.Traffic = c.Background.Traffic
	}
	sc.Run.Duration = 1 // not used by the daemon; keeps Validate happy
	return sc, sc.Validate()
}

// Validate checks the configuration on its own (the fabric parts are
// checked by ResolveModel).
func (c *RunConfig) Validate() error {
	var errs []error
	if len(c.TAPs) == 0 {
		errs = append(errs, errors.New("taps: at least one TAP device is needed"))
	}
	if err := params.CheckFinite(c); err != nil {
		return err // a NaN makes every other check of its key meaningless
	}
	names := map[string]bool{}
	macs := map[string]string{}
	for i, t := range c.TAPs {
		where := fmt.Sprintf("taps[%d]", i)
		if t.Name == "" {
			errs = append(errs, fmt.Errorf("%s: name is empty", where))
		} else if names[t.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q used twice", where, t.Name))
		}
		names[t.Name] = true
		if mac, err := t.checkPort(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		} else if mac != "" {
			// Two ports with one address: the fabric delivers every
			// frame for it to the first, and the other never hears.
			if first, ok := macs[mac]; ok {
				errs = append(errs, fmt.Errorf("%s: mac %s is also the mac of %s", where, mac, first))
			} else {
				macs[mac] = where
			}
		}
		if t.Owner < 0 {
			errs = append(errs, fmt.Errorf("%s: owner %d: want a uid (0 = root)", where, t.Owner))
		}
		if t.Host != nil && *t.Host < 0 {
			errs = append(errs, fmt.Errorf("%s: host %d: want a host index (0 or more)", where, *t.Host))
		}
		if t.OwnNetns && t.Netns == "" {
			errs = append(errs, fmt.Errorf("%s: own_netns needs netns", where))
		}
	}
	if c.Background.Trace != "" && !(c.Background.Compression > 0) {
		errs = append(errs, fmt.Errorf("background.compression %g: want a positive factor", c.Background.Compression))
	}
	if err := c.Background.validateCapture(); err != nil {
		errs = append(errs, err)
	}
	if c.Background.Disks < 0 {
		errs = append(errs, fmt.Errorf("background.disks %d: want 0 or more", c.Background.Disks))
	}
	// Written so that NaN fails too (every comparison with NaN is false).
	if !(c.Pacing.Dilation >= MinDilation && c.Pacing.Dilation <= MaxDilation) {
		errs = append(errs, fmt.Errorf("pacing.dilation %g: want %g..%g wall seconds per simulated second", c.Pacing.Dilation, MinDilation, MaxDilation))
	}
	if c.Pacing.LagThreshold <= 0 || c.Pacing.Spin < 0 || c.Pacing.MaxLag < 0 {
		errs = append(errs, errors.New("pacing: lag_threshold must be positive, spin and max_lag not negative"))
	}
	switch c.Pacing.BusyPoll {
	case "auto", "on", "off":
	default:
		errs = append(errs, fmt.Errorf("pacing.busy_poll %q: want auto, on or off", c.Pacing.BusyPoll))
	}
	if c.Pacing.BusyPollIdle <= 0 || c.Pacing.BusyPollIdle > Duration(time.Second) {
		errs = append(errs, fmt.Errorf("pacing.busy_poll_idle %v: want more than 0, at most 1s", c.Pacing.BusyPollIdle))
	}
	switch c.Pacing.Overload {
	case OverloadBackpressure, OverloadDilate, OverloadNone:
	default:
		errs = append(errs, fmt.Errorf("pacing.overload %q: want backpressure, dilate or none", c.Pacing.Overload))
	}
	if c.Pacing.RealtimePriority < 0 || c.Pacing.RealtimePriority > rtsched.MaxPriority {
		errs = append(errs, fmt.Errorf("pacing.realtime_priority %d: want 0 (off) to %d", c.Pacing.RealtimePriority, rtsched.MaxPriority))
	}
	if c.AdmitBytes < 65536 {
		errs = append(errs, fmt.Errorf("admit_bytes %d: want at least 65536 (one largest frame)", c.AdmitBytes))
	}
	if c.TxInline < 0 || c.TxInline > 1<<16 {
		errs = append(errs, fmt.Errorf("tx_inline %d: want 0..65536 bytes", c.TxInline))
	}
	if c.TxQueue < 1 || c.TxQueue > 1<<20 {
		errs = append(errs, fmt.Errorf("tx_queue %d: want 1..1048576", c.TxQueue))
	}
	if c.GCMemoryLimit != 0 && c.GCMemoryLimit < 64<<20 {
		errs = append(errs, fmt.Errorf("gc_memory_limit %d: want 0 (off) or at least 64 MiB", c.GCMemoryLimit))
	}
	if c.DrainTimeout < 0 {
		errs = append(errs, errors.New("drain_timeout must not be negative"))
	}
	if c.Metrics.Port < 0 || c.Metrics.Port > 65535 {
		errs = append(errs, fmt.Errorf("metrics.port %d: want 0..65535", c.Metrics.Port))
	}
	switch c.Log.Format {
	case "json", "console":
	default:
		errs = append(errs, fmt.Errorf("log.format %q: want json or console", c.Log.Format))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log.level %q: want debug, info, warn or error", c.Log.Level))
	}
	return errors.Join(errs...)
}

// OffloadDefault returns whether the device gets offloads and, when the
// configuration did not say (no offload key), why: on for a device in a
// network namespace, whose peer is that namespace's kernel stack, which
// takes super-frames; off where the peer may be a VM or a NIC that cannot
// (a persistent or user-owned device, one a VM attaches to; a device in
// the daemon's own namespace, which may be bridged).
func (t TAPConfig) OffloadDefault() (on bool, why string) {
	switch {
	case t.Offload != nil:
		return *t.Offload, ""
	case t.Persist || t.Owner != 0:
		return false, "persistent or user-owned device: the process that attaches to it (a VM) may not take TCP super-frames; set offload: true if it does"
	case t.Netns == "":
		return false, "device in the daemon's own namespace: it may be bridged to a NIC or VM that cannot take TCP super-frames; set offload: true if its peer is the local stack"
	}
	return true, "device in namespace " + t.Netns + ": its peer is that namespace's kernel stack, which takes TCP super-frames"
}

// tapConfig turns the file's description into the tap package's config.
func (t TAPConfig) tapConfig() (tap.Config, error) {
	off, _ := t.OffloadDefault()
	tc := tap.Config{Name: t.Name, MTU: t.MTU, Netns: t.Netns, Persist: t.Persist, Owner: uint32(max(t.Owner, 0)), Offload: off}
	if t.MAC != "" {
		mac, err := net.ParseMAC(t.MAC)
		if err != nil || len(mac) != 6 {
			return tc, fmt.Errorf("mac %q: want six hex bytes such as 02:fa:be:00:00:01", t.MAC)
		}
		if mac[0]&1 != 0 {
			return tc, fmt.Errorf("mac %q is a multicast address", t.MAC)
		}
		if bytes.Equal(mac, make(net.HardwareAddr, 6)) {
			return tc, fmt.Errorf("mac %q is the all-zero address, which no station may have", t.MAC)
		}
		tc.MAC = mac
	}
	for _, a := range t.Addrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(a))
		if err != nil {
			return tc, fmt.Errorf("addrs: %q: want an address with prefix length such as 10.250.0.1/24", a)
		}
		tc.Addrs = append(tc.Addrs, p)
	}
	if t.MTU != 0 && (t.MTU < tap.MinMTU || t.MTU > tap.MaxMTU) {
		return tc, fmt.Errorf("mtu %d: want %d..%d", t.MTU, tap.MinMTU, tap.MaxMTU)
	}
	if len(t.Name) > tap.MaxNameLen || strings.ContainsAny(t.Name, "%/: \t\n\x00") {
		return tc, fmt.Errorf("name %q: at most %d bytes, no '%%', '/', ':' or spaces", t.Name, tap.MaxNameLen)
	}
	return tc, nil
}

// DemoPreset returns the preset of fabemu run --demo n: for two hosts the
// live-traffic preset whose links (InfiniBand 4x SDR, 8 Gb/s of data) a
// 2-core machine runs in real time with TAP offloads, so the links and not
// the CPU bound its throughput; for more, the smallest of the EDR family
// (model/preset.go) with n hosts, past 64 hosts the largest, so that
// --preset must name one that fits. The demo prints which bound applies.
func DemoPreset(n int) string {
	switch {
	case n <= 2:
		return "ib-sdr-pair"
	case n <= 8:
		return "ib-edr-square"
	}
	return "ib-edr-torus8x8"
}

// DemoConfig is the configuration of fabemu run --demo n: n namespaces
// fabemu-h0.. with a TAP each (with offloads), 10.250.0.<i+1>/24 and
// fd00:fab::<i+1>/64, on DemoPreset(n).
func DemoConfig(n int) (RunConfig, error) {
	if n < 2 || n > 250 {
		return RunConfig{}, fmt.Errorf("--demo %d: want 2..250 hosts", n)
	}
	c := DefaultRunConfig()
	c.Model.Preset = DemoPreset(n)
	for i := 0; i < n; i++ {
		c.TAPs = append(c.TAPs, TAPConfig{
			Name:     fmt.Sprintf("fabemu%d", i),
			MAC:      fmt.Sprintf("02:fa:be:00:%02x:%02x", i>>8, i&0xff+1),
			Netns:    fmt.Sprintf("fabemu-h%d", i),
			OwnNetns: true,
			Offload:  ptr(true),
			Addrs:    []string{fmt.Sprintf("10.250.0.%d/24", i+1), fmt.Sprintf("fd00:fab::%x/64", i+1)},
		})
	}
	return c, c.Validate()
}

func ptr[T any](v T) *T { return &v }
