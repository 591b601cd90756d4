package emu

// Live traffic as background load (background.capture): an eBPF program on
// a real interface copies the head of every frame into a ring buffer
// (package bpf, the ring buffer of fabemu capture); a goroutine of its own
// decodes each frame and hands it to the pacer at the wall time the
// program saw it; on the loop, workload/replay's LiveCapture sends it as a
// message between the hosts without a TAP, with a capture replay's
// endpoint mapping. Frames the ring had no room for are counted by the
// kernel and reported, never hidden.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/gopacket/gopacket/layers"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fabemu/fabemu/bpf"
	"github.com/fabemu/fabemu/emu/tap"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/tracefmt/pcap"
	"github.com/fabemu/fabemu/workload/replay"
)

// CaptureStatus is background.capture's accounting: every frame the
// program matched was captured or dropped (Matched = Captured + Dropped);
// every captured frame read was handed to the model (Submitted) or
// arrived after the model stopped (Late); Fabric says what the model made
// of the submitted ones.
type CaptureStatus struct {
	Iface  string `json:"iface"`
	Netns  string `json:"netns,omitempty"`
	Attach string `json:"attach"`
	// The kernel's counters: frames seen, put in the ring, and dropped
	// for want of room in it.
	Matched  uint64 `json:"matched"`
	Captured uint64 `json:"captured"`
	Dropped  uint64 `json:"ring_dropped"`
	// Read counts frames taken from the ring; Submitted those handed to
	// the model; Late those read once the model had stopped.
	Read      uint64 `json:"read"`
	Submitted uint64 `json:"submitted"`
	Late      uint64 `json:"late"`
	// Stopped is set once the program is detached and the ring drained.
	Stopped bool                       `json:"stopped"`
	Error   string                     `json:"error,omitempty"`
	Fabric  replay.LiveCaptureProgress `json:"fabric"`
}

// bgCapture is the running background.capture.
type bgCapture struct {
	cap  *bpf.Capture
	live *replay.LiveCapture // loop-owned
	log  *zap.Logger

	read, submitted, late atomic.Uint64
	cancel                context.CancelFunc
	done                  chan struct{} // closed when the reader has finished
	final                 atomic.Pointer[bpf.CaptureStats]
	err                   atomic.Pointer[error]
}

// validateCapture checks the background.capture keys.
func (b BackgroundConfig) validateCapture() error {
	if b.Capture == "" {
		return nil
	}
	if len(b.Capture) > tap.MaxNameLen || strings.ContainsAny(b.Capture, "/: \t\n\x00") {
		return fmt.Errorf("background.capture %q: want an interface name (at most %d bytes, no '/', ':' or spaces)", b.Capture, tap.MaxNameLen)
	}
	switch b.CaptureMapBy {
	case "", replay.MapByAuto, replay.MapByMAC, replay.MapByIP:
	default:
		return fmt.Errorf("background.capture_map_by %q: want auto, mac or ip", b.CaptureMapBy)
	}
	if b.CaptureRing != 0 && (b.CaptureRing < 4096 || b.CaptureRing > 1<<30) {
		return fmt.Errorf("background.capture_ring %d: want 4096 to 1073741824 bytes (left out, 4 MiB)", b.CaptureRing)
	}
	if _, err := bpf.ParseAttach(b.CaptureAttach); err != nil {
		return fmt.Errorf("background.capture_attach: %w", err)
	}
	return nil
}

// openCapture places the capture's endpoints on the background hosts and
// attaches the program to the interface; frames wait in the ring until
// Start.
func (e *Emulator) openCapture() error {
	b := e.cfg.Background
	name := b.Capture
	if b.CaptureNetns != "" {
		name = b.CaptureNetns + "/" + b.Capture
	}
	live, err := replay.NewLiveCapture(e.sess, name, b.CaptureMapBy, b.Seed, e.background)
	if err != nil {
		return err
	}
	attach, _ := bpf.ParseAttach(b.CaptureAttach)
	c, err := bpf.OpenCapture(bpf.CaptureConfig{Netns: b.CaptureNetns, Iface: b.Capture, Filter: bpf.AnyFilter,
		RingBytes: b.CaptureRing, Attach: attach})
	if err != nil {
		return err
	}
	e.bgCap = &bgCapture{cap: c, live: live, log: e.log.With(zap.String("capture", name))}
	e.bgCap.log.Info("background capture attached", zap.String("attach", string(c.Mode())),
		zap.Int("ring_bytes", c.Config().RingBytes), zap.Ints("hosts", e.background))
	return nil
}

// start runs the reader: it decodes each frame and hands it to the pacer
// at the wall time the program saw it, waiting while the pacer's input
// queue is full (the ring buffer then fills, and the kernel counts what
// it cannot hold). It stops when stop is called.
func (c *bgCapture) start(p *des.Pacer) {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go func() {
		defer close(c.done)
		dec := pcap.NewDecoder()
		st, err := c.cap.Stream(ctx, func(f bpf.Frame) {
			n := c.read.Add(1)
			pk := &pcap.Packet{Record: int64(n), Time: f.Time, CapLen: len(f.Data), OrigLen: f.OrigLen,
				LinkType: layers.LinkTypeEthernet, Data: f.Data}
			dec.Decode(pk)
			pk.Data = nil // the ring's memory; the model needs the headers only
			if p.Submit(des.Input{At: f.Time, Fn: func(at des.Time) { c.live.Frame(pk, at) }}) != nil {
				c.late.Add(1)
				return
			}
			c.submitted.Add(1)
		})
		c.final.Store(st)
		if err != nil {
			c.err.Store(&err)
		}
		fields := []zap.Field{zap.Uint64("matched", st.Matched), zap.Uint64("captured", st.Captured),
			zap.Uint64("ring_dropped", st.Dropped), zap.Uint64("submitted", c.submitted.Load()), zap.Uint64("late", c.late.Load())}
		switch {
		case err != nil:
			c.log.Error("background capture stopped", append(fields, zap.Error(err))...)
		case st.Dropped > 0:
			c.log.Warn("background capture stopped; the ring buffer dropped frames (raise background.capture_ring)", fields...)
		default:
			c.log.Info("background capture stopped", fields...)
		}
	}()
}

// stop detaches the program; the reader drains the ring and ends.
func (c *bgCapture) stop() {
	if c.cancel != nil {
		c.cancel()
	}
}

// close waits for the reader and frees the program and the ring.
func (c *bgCapture) close() error {
	c.stop()
	if c.done != nil {
		<-c.done
	}
	return c.cap.Close()
}

// status runs on the loop goroutine.
func (c *bgCapture) status() *CaptureStatus {
	cfg := c.cap.Config()
	s := &CaptureStatus{Iface: cfg.Iface, Netns: cfg.Netns, Attach: string(cfg.Attach),
		Read: c.read.Load(), Submitted: c.submitted.Load(), Late: c.late.Load(), Fabric: c.live.Progress()}
	if st := c.final.Load(); st != nil {
		s.Stopped = true
		s.Attach = string(st.Attach)
		s.Matched, s.Captured, s.Dropped = st.Matched, st.Captured, st.Dropped
	} else if n, err := c.cap.Counts(); err == nil {
		s.Attach = string(c.cap.Mode())
		s.Matched, s.Captured, s.Dropped = n.Matched, n.Captured, n.Dropped
	} else {
		s.Error = err.Error()
	}
	if err := c.err.Load(); err != nil {
		s.Error = (*err).Error()
	}
	return s
}

// collectCapture exports background.capture's accounting (Collector).
func (c *Collector) collectCapture(ch chan<- prometheus.Metric, st *Status) {
	bc := st.BackgroundCapture
	if bc == nil {
		return
	}
	f := bc.Fabric
	for _, v := range []struct {
		stage string
		n     uint64
	}{{"matched", bc.Matched}, {"captured", bc.Captured}, {"read", bc.Read}, {"submitted", bc.Submitted}, {"late", bc.Late},
		{"sent", f.Sent}, {"local", f.Local}, {"unmapped", f.Unmapped}, {"unplaced", f.Unplaced}} {
		ch <- prometheus.MustNewConstMetric(c.capFrames, prometheus.CounterValue, float64(v.n), bc.Iface, v.stage)
	}
	ch <- prometheus.MustNewConstMetric(c.capDropped, prometheus.CounterValue, float64(bc.Dropped), bc.Iface)
}
