package tap

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/vnet"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
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
	CauseKernel     = frameport.CauseKernel     // dropped by the kernel (KernelDrops)
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

// TakeWriteWindow returns the largest queue and write times since it was
// last called (frameport.WriteWindower).
func (d *Device) TakeWriteWindow() (queue, write time.Duration) {
	d.ctr.timingMu.Lock()
	defer d.ctr.timingMu.Unlock()
	return d.ctr.timing.TakeWindow()
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

// readLoop is the device's reader. It waits for the device to be
// readable through the runtime's poller without holding rmu, and holds rmu
// from the read until the frame is handed over, so a PickUp never hands a
// frame over between its read and its hand-over.
func (d *Device) readLoop(handle func(*Frame) bool) {
	defer d.readerWG.Done()
	for {
		f := d.NewFrame()
		var n int
		var rerr error
		locked := false
		err := d.raw.Read(func(fd uintptr) bool {
			d.rmu.Lock()
			n, rerr = d.readFrame(int(fd), f)
			if rerr == unix.EAGAIN {
				d.rmu.Unlock()
				return false // wait until readable
			}
			locked = true
			return true
		})
		if err == nil {
			err = rerr
		}
		at := time.Now()
		if err != nil {
			if locked {
				d.rmu.Unlock()
			}
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
		ok := d.handOver(f, n, at, handle)
		d.rmu.Unlock()
		if !ok {
			return
		}
	}
}

// handOver validates a frame read at at (n as readFrame returned it) and
// passes it to handle; it reports false if handle refused it (the
// consumer is shutting down). Called with rmu held.
func (d *Device) handOver(f *Frame, n int, at time.Time, handle func(*Frame) bool) bool {
	if n < 0 { // a virtio_net_hdr that does not decode
		d.refuseIn(f, CauseTooShort, -n)
		return true
	}
	if n >= d.bufLen-d.hdroom { // the kernel filled the buffer: truncated
		d.refuseIn(f, CauseTooLong, n)
		return true
	}
	h, err := d.checkSize(f.Data, f.Offload)
	if err != nil {
		c := CauseTooShort
		if errors.Is(err, ether.ErrTooLong) {
			c = CauseTooLong
		}
		d.refuseIn(f, c, n)
		return true
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
		return false
	}
	return true
}

// PickUp hands over a frame already waiting in the device's queue after
// one of its inline writes (frameport.PickerUpper). The kernel runs the
// receiving stack inside a TAP write, so an answer it sends at once (an
// echo reply, an immediate ACK) is queued on this device before the write
// returns; the reader would be woken for it through the poller, a thread
// wake-up (on a VM an inter-processor interrupt to a halted CPU). PickUp reads
// it on the caller's goroutine instead, without waiting: once per inline
// write, and only if the reader is not handing a frame over itself.
func (d *Device) PickUp(handle func(*Frame) bool) bool {
	if !d.pickArm.Swap(false) {
		return false
	}
	d.pickTries.Add(1)
	if !d.rmu.TryLock() {
		return false
	}
	defer d.rmu.Unlock()
	d.fdMu.RLock()
	if d.fd < 0 {
		d.fdMu.RUnlock()
		return false
	}
	f := d.NewFrame()
	n, err := d.readFrame(d.fd, f)
	d.fdMu.RUnlock()
	if err != nil { // EAGAIN: nothing came back; other errors are the reader's to report
		f.Release()
		return false
	}
	d.pickUps.Add(1)
	d.handOver(f, n, time.Now(), handle)
	return true
}

// PickUps returns how many frames PickUp handed over, and how many times
// it was called armed by an inline write (it then lost to the reader or
// found no answer the other times).
func (d *Device) PickUps() (handed, tries uint64) { return d.pickUps.Load(), d.pickTries.Load() }

// readFrame reads one frame from fd (the device's non-blocking queue)
// into f: with offloads its virtio_net_hdr into the headroom and Offload,
// the frame into Data. It returns the frame's length, or minus the read's
// length if the header is short; unix.EAGAIN if no frame is waiting.
func (d *Device) readFrame(fd int, f *Frame) (int, error) {
	buf := f.Data[:cap(f.Data)]
	if d.hdroom == 0 {
		n, err := readRetry(fd, buf)
		f.Data = buf[:max(n, 0)]
		return n, err
	}
	full := f.Headroom(d.hdroom)
	full = full[:cap(full)]
	n, err := readRetry(fd, full)
	if err != nil {
		return n, err
	}
	if n < d.hdroom {
		return -n, nil
	}
	if f.Offload, err = vnet.Decode(full[:n]); err != nil {
		return -n, nil
	}
	f.Data = full[d.hdroom:n]
	return n - d.hdroom, nil
}

// readRetry is read(2) retried on EINTR.
func readRetry(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Read(fd, b)
		if err != unix.EINTR {
			return n, err
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
			zap.Bool("truncated", n >= d.bufLen-d.hdroom), zap.Int("mtu", d.MTU()),
			zap.Uint64("suppressed_since_last_log", sup))
	}
}

func (d *Device) refuseOut(f *Frame, c Cause, err error) {
	n := len(f.Data)
	f.Release()
	d.ctr.outRefused[c].Add(1)
	if ok, sup := d.ctr.outLog[c].allow(time.Now()); ok {
		d.log.Warn("refused frame for TAP", zap.Stringer("cause", c), zap.Int("bytes", n),
			zap.Int("mtu", d.MTU()), zap.Error(err), zap.Uint64("suppressed_since_last_log", sup))
	}
}

// Send queues f for writing and takes ownership of it in every case. It
// never blocks: if the frame is invalid for the MTU, the queue is full or
// the device is closing, the frame is released, counted by cause and an
// error returned (ErrQueueFull, ErrClosed, ether.ErrTooShort, ether.ErrTooLong).
func (d *Device) Send(f *Frame) error {
	if _, err := d.checkSize(f.Data, f.Offload); err != nil {
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
	if d.inlineMax > 0 && len(f.Data) <= d.inlineMax && d.quietSend() && d.started.Load() && d.pending.CompareAndSwap(0, 1) {
		// The writer is idle with nothing queued and the device was
		// quiet: write here, saving its wake-up. pending keeps the writer
		// out until this write is done, so frames still leave in Send
		// order.
		d.writeOne(f)
		d.inlineWrites.Add(1)
		d.pickArm.Store(true)
		d.pending.Add(-1)
		return nil
	}
	d.pending.Add(1)
	select {
	case d.txq <- f:
		return nil
	default:
		d.pending.Add(-1)
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

// writeFrame writes f: with offloads after its virtio_net_hdr (in the
// frame's headroom when it has one, so nothing is copied); without, a
// super-frame is cut into segments and a partial checksum completed in
// software (emu/vnet). It returns the frame bytes written.
func (d *Device) writeFrame(f *Frame) (int, error) {
	if d.offload {
		b := f.Headroom(d.hdroom)
		if b == nil {
			b = append(append(d.segBuf[:0], make([]byte, d.hdroom)...), f.Data...)
		}
		f.Offload.Encode(b)
		n, err := d.file.Write(b)
		return n - d.hdroom, err
	}
	if !f.Offload.IsGSO() && f.Offload.Flags&vnet.FlagNeedsCsum == 0 {
		return d.file.Write(f.Data)
	}
	total := 0
	err := vnet.Segment(f.Data, f.Offload, d.segBuf, func(seg []byte) error {
		n, err := d.file.Write(seg)
		if err == nil && n != len(seg) {
			err = fmt.Errorf("short write: %d of %d bytes", n, len(seg))
		}
		total += n
		return err
	})
	if err == nil {
		total = len(f.Data) // count the frame as sent, as with offloads
	}
	return total, err
}

// inlineQuiet is how long a device must have had no frame to send for
// Send to write a small frame inline. A stream of small frames (a TCP
// sender's ACKs) goes through the writer: each write runs the receiving
// stack's work (an ACK makes the sender transmit), which would otherwise
// be spent on the caller's goroutine, the model's loop, and delay its
// events (measured under iperf3: excess lag p99 0.4-0.5 ms with every
// small frame inline, 0.1-0.2 ms without).
const inlineQuiet = time.Millisecond

// quietSend notes a Send and reports whether the previous one was at
// least inlineQuiet ago.
func (d *Device) quietSend() bool {
	now := time.Now().UnixNano()
	return now-d.lastSend.Swap(now) >= d.inlineQuiet
}

// InlineWrites returns how many frames Send wrote itself
// (Config.InlineWriteMax) instead of queueing them for the writer.
func (d *Device) InlineWrites() uint64 { return d.inlineWrites.Load() }

// WriteRoom returns how many more frames Send would queue now
// (frameport.WriteRoomer).
func (d *Device) WriteRoom() int { return cap(d.txq) - len(d.txq) }

// OnWriteRoom sets the callback the writer calls each time it takes a
// frame from its queue (frameport.WriteRoomer).
func (d *Device) OnWriteRoom(fn func()) { d.room.Set(fn) }

// writeLoop is the device's only writer: frames leave in Send order.
func (d *Device) writeLoop() {
	defer d.writerWG.Done()
	for f := range d.txq {
		d.room.Signal()
		// An inline write (Send) that started before this frame was
		// queued is finishing: it holds pending at 1 only while it
		// writes, and this frame is counted in pending too.
		for d.pending.Load() > int64(len(d.txq))+1 && d.inlineMax > 0 {
			runtime.Gosched()
		}
		d.writeOne(f)
		d.pending.Add(-1)
	}
}

// writeOne writes f, records its timing and counts it (writer, or Send
// writing inline).
func (d *Device) writeOne(f *Frame) {
	var t0 time.Time
	if !f.At.IsZero() {
		t0 = time.Now()
	}
	n, err := d.writeFrame(f)
	if !t0.IsZero() {
		t1 := time.Now()
		d.ctr.timingMu.Lock()
		d.ctr.timing.Record(t0.Sub(f.At), t1.Sub(t0))
		d.ctr.timingMu.Unlock()
	}
	if err == nil && n != len(f.Data) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(f.Data))
	}
	if err != nil {
		d.refuseOut(f, CauseWriteError, err)
		return
	}
	d.ctr.framesOut.Add(1)
	d.ctr.bytesOut.Add(uint64(n))
	f.Release()
}
