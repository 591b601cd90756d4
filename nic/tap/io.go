package tap

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/nic/ether"
	"github.com/fabemu/fabemu/nic/frameport"
	"go.uber.org/zap"
)

// Frame is one Ethernet frame crossing the TAP boundary, in a pooled buffer
// (the frame-port contract's frame; Frame.Port is the *Device it was read
// from or allocated by). Whoever holds a Frame owns it until they pass it to
// Send (which takes ownership) or call Release.
type Frame = frameport.Frame

// NewFrame returns an empty pooled frame whose Data can grow (with append)
// up to the device's largest valid frame without reallocating.
func (d *Device) NewFrame() *Frame { return d.pool.Get() }

// Cause is why a frame was refused at the boundary (the contract's causes).
type Cause = frameport.Cause

// Refusal causes.
const (
	CauseQueueFull  = frameport.CauseQueueFull  // the writer queue was full
	CauseTooShort   = frameport.CauseTooShort   // shorter than its Ethernet header
	CauseTooLong    = frameport.CauseTooLong    // payload longer than the MTU
	CauseWriteError = frameport.CauseWriteError // the kernel refused the write (e.g. device down)
	CauseClosed     = frameport.CauseClosed     // offered or read while the device was closing
	NumCauses       = frameport.NumCauses
)

// Stats is a snapshot of a device's boundary counters. Stalls counts how
// often the reader found the inbound channel full (Start) or a StartFunc
// handler reported a wait (AddStalls); ReadErrors ends the reader (see
// Device.Err); InRefused counts too_short, too_long and closed.
type Stats = frameport.Stats

type counters struct {
	framesIn, bytesIn, framesOut, bytesOut atomic.Uint64
	stalls, readErrors                     atomic.Uint64
	inRefused, outRefused                  [NumCauses]atomic.Uint64
	inLog, outLog                          [NumCauses]rateLimit

	timingMu sync.Mutex
	timing   WriteTiming
}

// WriteTiming is where the time of frames sent with a non-zero Frame.At
// went on the way out, in nanoseconds of wall time; Write is the write
// system call.
type WriteTiming = frameport.WriteTiming

// WriteTiming returns a copy of the writer's timing histograms.
func (d *Device) WriteTiming() WriteTiming {
	d.ctr.timingMu.Lock()
	defer d.ctr.timingMu.Unlock()
	var t WriteTiming
	t.Queue.Merge(&d.ctr.timing.Queue)
	t.Write.Merge(&d.ctr.timing.Write)
	return t
}

// Stats returns a snapshot of the counters (each read atomically; the set
// is not one atomic snapshot).
func (d *Device) Stats() Stats {
	c := &d.ctr
	s := Stats{
		FramesIn: c.framesIn.Load(), BytesIn: c.bytesIn.Load(),
		FramesOut: c.framesOut.Load(), BytesOut: c.bytesOut.Load(),
		Stalls: c.stalls.Load(), ReadErrors: c.readErrors.Load(),
	}
	for i := range NumCauses {
		s.InRefused[i] = c.inRefused[i].Load()
		s.OutRefused[i] = c.outRefused[i].Load()
	}
	return s
}

// rateLimit lets one log line per cause through per logInterval and counts
// the ones it held back.
type rateLimit struct {
	next       atomic.Int64 // unix nanoseconds
	suppressed atomic.Uint64
}

const logInterval = time.Second

func (r *rateLimit) allow(now time.Time) (ok bool, suppressed uint64) {
	n := r.next.Load()
	if now.UnixNano() < n || !r.next.CompareAndSwap(n, now.Add(logInterval).UnixNano()) {
		r.suppressed.Add(1)
		return false, 0
	}
	return true, r.suppressed.Swap(0)
}

// Errors returned by Send and Write. Frame-size errors are ether.ErrTooShort
// and ether.ErrTooLong.
// They are the contract's errors, so a consumer of any frame port compares
// with the same values.
var (
	ErrQueueFull = frameport.ErrQueueFull
	ErrClosed    = frameport.ErrClosed
	ErrStarted   = frameport.ErrStarted
)

// Start launches the reader and the writer. The reader hands every valid
// frame to in, blocking while in is full: it then reads nothing more, so the
// kernel's TAP queue holds further frames (and drops past its own limit,
// counted by the kernel as the device's tx_dropped). in may be shared by
// several devices (Frame.Port tells them apart); its capacity is the bound.
// The consumer owns received frames and must Release or Send them.
func (d *Device) Start(in chan<- *Frame) error {
	if in == nil {
		return errors.New("tap: Start needs an inbound channel")
	}
	return d.start(func(f *Frame) bool {
		select {
		case in <- f:
			return true
		default:
		}
		// Backpressure: stop reading until the consumer admits this one.
		d.ctr.stalls.Add(1)
		select {
		case in <- f:
			return true
		case <-d.done:
			return false
		}
	})
}

// StartFunc launches the reader and the writer; the reader calls handle
// for every valid frame on its own goroutine, without a hand-over. handle
// takes ownership of the frame when it returns true. It may block, and
// while it does the reader reads nothing more (the kernel's TAP queue
// applies, as with Start). When it returns false the frame is refused
// (counted as closed) and the reader stops: the consumer is shutting down.
func (d *Device) StartFunc(handle func(*Frame) bool) error {
	if handle == nil {
		return errors.New("tap: StartFunc needs a handler")
	}
	return d.start(handle)
}

func (d *Device) start(handle func(*Frame) bool) error {
	err := ErrStarted
	d.startOnce.Do(func() {
		err = nil
		d.started.Store(true)
		d.readerWG.Add(1)
		d.writerWG.Add(1)
		go d.readLoop(handle)
		go d.writeLoop()
	})
	return err
}

// readLoop is the device's only reader.
func (d *Device) readLoop(handle func(*Frame) bool) {
	defer d.readerWG.Done()
	for {
		f := d.NewFrame()
		buf := f.Data[:cap(f.Data)]
		n, err := d.file.Read(buf)
		at := time.Now()
		if err != nil {
			f.Release()
			select {
			case <-d.done:
				return // Close closed the fd
			default:
			}
			if errors.Is(err, os.ErrClosed) {
				return
			}
			d.ctr.readErrors.Add(1)
			err = fmt.Errorf("tap %s: read: %w", d.name, err)
			d.readErr.Store(&err)
			d.log.Error("reader stopped", zap.Error(err))
			return
		}
		if n > len(buf) { // the kernel reports a frame longer than the buffer
			d.refuseIn(f, CauseTooLong, n)
			continue
		}
		f.Data = buf[:n]
		h, err := ether.Validate(f.Data, d.mtu)
		if err != nil {
			c := CauseTooShort
			if errors.Is(err, ether.ErrTooLong) {
				c = CauseTooLong
			}
			d.refuseIn(f, c, n)
			continue
		}
		f.Header, f.At = h, at
		// Count before the hand-over so the counters never lag what the
		// consumer has already received; undone if it is refused.
		d.ctr.framesIn.Add(1)
		d.ctr.bytesIn.Add(uint64(n))
		if !handle(f) {
			d.ctr.framesIn.Add(^uint64(0))
			d.ctr.bytesIn.Add(-uint64(n))
			d.refuseIn(f, CauseClosed, n)
			return
		}
	}
}

// AddStalls adds n to the reader-stall counter; a StartFunc handler that
// blocks for backpressure reports it so.
func (d *Device) AddStalls(n uint64) { d.ctr.stalls.Add(n) }

func (d *Device) refuseIn(f *Frame, c Cause, n int) {
	f.Release()
	d.ctr.inRefused[c].Add(1)
	if ok, sup := d.ctr.inLog[c].allow(time.Now()); ok {
		// A read that fills the buffer was truncated by the kernel: the
		// frame had at least n bytes.
		d.log.Warn("dropped frame read from TAP", zap.Stringer("cause", c), zap.Int("bytes", n),
			zap.Bool("truncated", n >= d.bufLen), zap.Int("mtu", d.mtu),
			zap.Uint64("suppressed_since_last_log", sup))
	}
}

func (d *Device) refuseOut(f *Frame, c Cause, err error) {
	n := len(f.Data)
	f.Release()
	d.ctr.outRefused[c].Add(1)
	if ok, sup := d.ctr.outLog[c].allow(time.Now()); ok {
		d.log.Warn("refused frame for TAP", zap.Stringer("cause", c), zap.Int("bytes", n),
			zap.Int("mtu", d.mtu), zap.Error(err), zap.Uint64("suppressed_since_last_log", sup))
	}
}

// Send queues f for writing and takes ownership of it in every case. It
// never blocks: if the frame is invalid for the MTU, the queue is full or
// the device is closing, the frame is released, counted by cause and an
// error returned (ErrQueueFull, ErrClosed, ether.ErrTooShort, ether.ErrTooLong).
func (d *Device) Send(f *Frame) error {
	if _, err := ether.Validate(f.Data, d.mtu); err != nil {
		c := CauseTooShort
		if errors.Is(err, ether.ErrTooLong) {
			c = CauseTooLong
		}
		d.refuseOut(f, c, nil)
		return err
	}
	d.txMu.RLock()
	defer d.txMu.RUnlock()
	if d.txClosed {
		d.refuseOut(f, CauseClosed, nil)
		return ErrClosed
	}
	select {
	case d.txq <- f:
		return nil
	default:
		d.refuseOut(f, CauseQueueFull, nil)
		return ErrQueueFull
	}
}

// Write copies p into a pooled frame and Sends it.
func (d *Device) Write(p []byte) error {
	f := d.NewFrame()
	if len(p) > cap(f.Data) {
		f.Data = p // not retained: Send refuses it as too long
	} else {
		f.Data = append(f.Data, p...)
	}
	return d.Send(f)
}

// writeLoop is the device's only writer: frames leave in Send order.
func (d *Device) writeLoop() {
	defer d.writerWG.Done()
	for f := range d.txq {
		var t0 time.Time
		if !f.At.IsZero() {
			t0 = time.Now()
		}
		n, err := d.file.Write(f.Data)
		if !t0.IsZero() {
			t1 := time.Now()
			d.ctr.timingMu.Lock()
			d.ctr.timing.Queue.Add(int64(t0.Sub(f.At)))
			d.ctr.timing.Write.Add(int64(t1.Sub(t0)))
			d.ctr.timingMu.Unlock()
		}
		if err == nil && n != len(f.Data) {
			err = fmt.Errorf("short write: %d of %d bytes", n, len(f.Data))
		}
		if err != nil {
			d.refuseOut(f, CauseWriteError, err)
			continue
		}
		d.ctr.framesOut.Add(1)
		d.ctr.bytesOut.Add(uint64(n))
		f.Release()
	}
}
