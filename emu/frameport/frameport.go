// Package frameport owns the contract between the daemon and whatever
// carries its Ethernet frames: a frame port. TAP devices (emu/tap) implement
// it today, the in-memory double beside it (emu/frameport/porttest) lets the
// daemon's frame path be tested without privileges, and capture files and
// eBPF capture are meant to implement it next.
//
// It owns the Port interface, the Frame that crosses it with the pool its
// buffer comes from, the refusal causes and the boundary counters every
// port keeps.
//
// The contract, which every implementation keeps and the daemon relies on:
//
//   - One reader and one writer per port. StartFunc launches the port's only
//     reader, which hands frames to the handler one at a time in the order
//     they arrived, and its only writer, which writes frames in Send order.
//     A port never reorders a flow itself.
//   - Backpressure by not reading. While the handler blocks, the reader
//     reads nothing more, so the source behind the port (the kernel's TAP
//     queue, a file) holds further frames; nothing is dropped by the port
//     for it.
//   - Bounded queues, nothing dropped silently. Send never blocks: a frame
//     that is invalid for the MTU, finds the writer queue full or arrives
//     while the port is closing is refused, released and counted by Cause in
//     Stats. A frame the reader cannot accept (shorter than an Ethernet
//     header, payload longer than the MTU) is counted too.
//   - Frame ownership. Whoever holds a Frame owns it until they pass it to
//     Send (which takes ownership in every case, refused or not) or call
//     Release. The handler owns a frame when it returns true; when it
//     returns false the port releases the frame, counts it as refused
//     (closed) and its reader stops. Frames handed to the handler are valid
//     for the port's MTU and carry their parsed header.
//   - Close lets the writer drain its queue, stops the reader (a read in
//     progress returns), waits for both and is idempotent. Frames the
//     consumer still holds remain its to Release.
//
// The shape follows wireguard-go's tun.Device (name, MTU, read, write,
// close, with a channel double beside it in tun/tuntest) with two
// differences the daemon needs: the read side is pushed by the port's own
// reader goroutine, so Close can unblock it whatever the source, and frames
// carry pooled buffers whose ownership moves with them, as gVisor's link
// endpoints pass packet buffers, so a frame is read once and copied only
// into its destination's buffer.
package frameport

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/emu/vnet"
	"github.com/fabemu/fabemu/internal/hist"
	"github.com/fabemu/fabemu/tracefmt/ether"
)

// Port is one frame port: a source and sink of Ethernet frames attached to
// one fabric host. Its methods are safe for concurrent use.
type Port interface {
	// Name names the port (the interface name of a TAP device).
	Name() string
	// MAC is the hardware address applications behind the port use as
	// source, or the zero MAC if the port has none of its own (addresses
	// are then learnt from the frames).
	MAC() ether.MAC
	// MTU is the largest payload in bytes a frame may carry (Linux's
	// meaning: the frame minus its Ethernet header and VLAN tags).
	MTU() int
	// NewFrame returns an empty frame from the port's pool whose Data can
	// grow (with append) to the port's longest valid frame without
	// reallocating. The caller owns it.
	NewFrame() *Frame
	// StartFunc launches the port's reader and writer. The reader calls
	// handle for every valid frame on its own goroutine; see the package
	// documentation for blocking and ownership. A second call returns
	// ErrStarted.
	StartFunc(handle func(*Frame) bool) error
	// Send queues f for the writer and takes ownership of it. It never
	// blocks; a refused frame is released, counted and reported with
	// ErrQueueFull, ErrClosed, ether.ErrTooShort or ether.ErrTooLong.
	Send(f *Frame) error
	// Stats returns the boundary counters.
	Stats() Stats
	// WriteTiming returns the writer's timing histograms.
	WriteTiming() WriteTiming
	// Close stops the port as described in the package documentation.
	Close() error
}

// WriteRoomer is a Port whose consumer can wait for room in the writer
// queue instead of having frames refused: the daemon's lossless egress.
// The consumer is the queue's only sender, so room it sees stays there
// until it sends.
type WriteRoomer interface {
	// WriteRoom returns how many more frames Send would queue now.
	WriteRoom() int
	// OnWriteRoom sets fn, which the writer calls on its own goroutine
	// each time it takes a frame from its queue (room for one more). fn
	// must be quick and must not block; nil removes it.
	OnWriteRoom(fn func())
}

// PickerUpper is a Port that can hand over, on the caller's goroutine, a
// frame that one of its own inline writes made the kernel answer at once
// (an ICMP echo, a TCP segment's immediate ACK): the reply is waiting in
// the port's queue when the write returns, and reading it there saves the
// reader's wake-up.
type PickerUpper interface {
	// PickUp reads at most one frame without waiting, only if an inline
	// Send armed the port since the last PickUp and the port's reader is
	// not itself handing a frame over, and passes it to handle as the
	// reader would (same validation, counters and ownership). Frames keep
	// their order: the reader and PickUp hand over one frame at a time.
	// It reports whether a frame was handed over. handle must not call
	// PickUp on the same port.
	PickUp(handle func(*Frame) bool) bool
}

// KernelDropper is a Port whose kernel device counts frames it dropped
// itself, outside the port's view.
type KernelDropper interface {
	// KernelDrops returns the frames the kernel dropped on their way in
	// (to the port's reader: its queue was full) and on their way out (the
	// kernel refused frames the writer wrote), since the device was made.
	KernelDrops() (in, out uint64, err error)
}

// Errors of the contract. Frame-size errors are ether.ErrTooShort and
// ether.ErrTooLong.
var (
	ErrQueueFull = errors.New("frame port: writer queue full")
	ErrClosed    = errors.New("frame port: closed")
	ErrStarted   = errors.New("frame port: already started")
)

// Frame is one Ethernet frame crossing a port, normally in a pooled
// buffer. Whoever holds a Frame owns it until they pass it to Send or call
// Release.
type Frame struct {
	// Data is the frame from the destination MAC on (no packet-information
	// header, no FCS).
	Data []byte
	// At is the wall-clock time the read returned (zero for frames from
	// NewFrame). For a frame given to Send, a non-zero At is the time it
	// became ready to write: the writer then records how long it waited in
	// the queue and how long the write took (WriteTiming).
	At time.Time
	// Header is Data's parsed Ethernet header (set on frames read).
	Header ether.Header
	// Port is the port the frame was read from or allocated by.
	Port Port
	// Offload is the frame's virtio_net_hdr when it was read from a port
	// with offloads (a TCP super-frame to segment, a checksum to
	// complete), or the zero Header. A consumer that copies Data into
	// another port's frame copies Offload with it; the destination port
	// passes it to its sink or does the work itself.
	Offload vnet.Header

	pool *Pool
	buf  []byte
}

// Headroom returns the frame with n bytes of its buffer in front of
// Data (to write a header there without copying; its capacity reaches the
// buffer's end), or nil if Data does not start n bytes into the frame's
// buffer.
func (f *Frame) Headroom(n int) []byte {
	if n < 0 || n >= len(f.buf) || cap(f.Data) != cap(f.buf)-n || (len(f.Data) > 0 && &f.buf[n] != &f.Data[0]) {
		return nil
	}
	return f.buf[:n+len(f.Data)]
}

// Release returns f's buffer to its pool. f must not be used afterwards.
// Releasing a frame that came from no pool, or releasing twice, does
// nothing.
func (f *Frame) Release() {
	p := f.pool
	f.Data, f.Port, f.At, f.Header, f.Offload, f.pool = nil, nil, time.Time{}, ether.Header{}, vnet.Header{}, nil
	if p != nil {
		p.held.Add(-1)
		p.p.Put(f)
	}
}

// Pool hands out the frames of one port, each with a buffer of a fixed
// size, and counts the frames taken and not yet released.
type Pool struct {
	port     Port
	size     int
	headroom int
	p        sync.Pool
	held     atomic.Int64
}

// NewPool returns a pool of frames with buffers of size bytes, marked as
// belonging to port.
func NewPool(port Port, size int) *Pool {
	p := &Pool{port: port, size: size}
	p.p.New = func() any { return &Frame{buf: make([]byte, size)} }
	return p
}

// NewPoolHeadroom is NewPool whose frames' Data starts headroom bytes into
// their buffer (capacity size-headroom), leaving room for a header in
// front (Frame.Headroom).
func NewPoolHeadroom(port Port, size, headroom int) *Pool {
	p := NewPool(port, size)
	p.headroom = headroom
	return p
}

// Get returns an empty frame of the pool: Data has length zero and
// capacity Size.
func (p *Pool) Get() *Frame {
	f := p.p.Get().(*Frame)
	f.pool, f.Port = p, p.port
	f.Data = f.buf[p.headroom:p.headroom]
	p.held.Add(1)
	return f
}

// Size is the capacity of every frame's buffer.
func (p *Pool) Size() int { return p.size }

// Held returns the frames taken from the pool and not yet released (by
// whoever owns them: the port, its queue or its consumer).
func (p *Pool) Held() int64 { return p.held.Load() }

// Cause is why a frame was refused at a port.
type Cause int

// Refusal causes.
const (
	CauseQueueFull  Cause = iota // the writer queue was full
	CauseTooShort                // shorter than its Ethernet header
	CauseTooLong                 // payload longer than the MTU
	CauseWriteError              // the sink refused the write (e.g. device down)
	CauseClosed                  // offered or read while the port was closing
	// CauseKernel: dropped by the kernel device behind the port, counted
	// by the kernel (KernelDropper), never by the port's own Stats.
	CauseKernel
	// CauseNoPeer: the port had nothing attached to write to (a
	// qemu-socket port before its VM's QEMU connected or after it left:
	// the cable is unplugged). Unlike write_error, no write failed.
	CauseNoPeer
	NumCauses
)

var causeNames = [NumCauses]string{"queue_full", "too_short", "too_long", "write_error", "closed", "kernel", "no_peer"}

// String returns the cause's metric label, e.g. "queue_full".
func (c Cause) String() string {
	if c < 0 || c >= NumCauses {
		return fmt.Sprintf("cause(%d)", int(c))
	}
	return causeNames[c]
}

// Stats is a snapshot of a port's boundary counters.
type Stats struct {
	// FramesIn and BytesIn count valid frames read and handed (or, while
	// the reader is blocked, being handed) to the consumer; a frame
	// abandoned at Close moves to InRefused[CauseClosed].
	FramesIn, BytesIn uint64
	// FramesOut and BytesOut count frames written.
	FramesOut, BytesOut uint64
	// Stalls counts how often the reader stopped reading because the
	// consumer could not take a frame (backpressure, no loss).
	Stalls uint64
	// ReadErrors counts failed reads (the reader stops on the first one
	// other than Close).
	ReadErrors uint64
	// InRefused counts frames read and dropped, by cause (too_short,
	// too_long, closed).
	InRefused [NumCauses]uint64
	// OutRefused counts frames offered to Send and not written, by cause.
	OutRefused [NumCauses]uint64
}

// WriteTiming is where the time of frames sent with a non-zero Frame.At
// went on the way out, in nanoseconds of wall time.
type WriteTiming struct {
	// Queue is from Frame.At to the writer taking the frame from its queue
	// (the writer's wake-up and the frames ahead of it).
	Queue hist.Hist
	// Write is the write itself (a system call for a TAP device).
	Write hist.Hist
	// QueueMax and WriteMax are the largest Queue and Write since the
	// last TakeWindow (the daemon's per-interval stage times).
	QueueMax, WriteMax time.Duration
}

// Record adds one frame's time in the writer's queue and in its write.
func (t *WriteTiming) Record(queue, write time.Duration) {
	t.Queue.Add(int64(queue))
	t.Write.Add(int64(write))
	t.QueueMax = max(t.QueueMax, queue)
	t.WriteMax = max(t.WriteMax, write)
}

// TakeWindow returns QueueMax and WriteMax and starts a new window.
func (t *WriteTiming) TakeWindow() (queue, write time.Duration) {
	queue, write = t.QueueMax, t.WriteMax
	t.QueueMax, t.WriteMax = 0, 0
	return queue, write
}

// WriteWindower is a Port whose writer keeps the largest queue and write
// times since it was last asked (WriteTiming.TakeWindow).
type WriteWindower interface {
	TakeWriteWindow() (queue, write time.Duration)
}

// Counters are a port's boundary counters and write timing, updated by
// its reader, its writer and Send at once. A port embeds them, so that
// its Stats and WriteTiming are the counters'; Stalls stays zero (the
// consumer's handler knows when it blocks).
type Counters struct {
	framesIn, bytesIn, framesOut, bytesOut atomic.Uint64
	readErrors                             atomic.Uint64
	inRefused, outRefused                  [NumCauses]atomic.Uint64
	timingMu                               sync.Mutex
	timing                                 WriteTiming
}

// CountIn counts a valid frame of n bytes handed to the consumer.
func (c *Counters) CountIn(n int) {
	c.framesIn.Add(1)
	c.bytesIn.Add(uint64(n))
}

// UncountIn takes back a CountIn whose frame the consumer did not take
// (the port closed while it waited); the caller refuses it as CauseClosed.
func (c *Counters) UncountIn(n int) {
	c.framesIn.Add(^uint64(0))
	c.bytesIn.Add(-uint64(n))
}

// CountOut counts a frame of n bytes written.
func (c *Counters) CountOut(n int) {
	c.framesOut.Add(1)
	c.bytesOut.Add(uint64(n))
}

// CountReadError counts a failed read.
func (c *Counters) CountReadError() { c.readErrors.Add(1) }

// RefuseIn counts an inbound frame dropped for cause.
func (c *Counters) RefuseIn(cause Cause) { c.inRefused[cause].Add(1) }

// RefuseOut counts a frame offered to Send and not written, for cause.
func (c *Counters) RefuseOut(cause Cause) { c.outRefused[cause].Add(1) }

// RecordWrite records a frame's time in the writer's queue (from its At
// to start, the writer taking it) and in the write (start to end).
func (c *Counters) RecordWrite(at, start, end time.Time) {
	c.timingMu.Lock()
	c.timing.Record(start.Sub(at), end.Sub(start))
	c.timingMu.Unlock()
}

// TakeWriteWindow returns the largest queue and write times since it was
// last called (WriteWindower).
func (c *Counters) TakeWriteWindow() (queue, write time.Duration) {
	c.timingMu.Lock()
	defer c.timingMu.Unlock()
	return c.timing.TakeWindow()
}

// Stats returns the boundary counters (Port).
func (c *Counters) Stats() Stats {
	s := Stats{
		FramesIn: c.framesIn.Load(), BytesIn: c.bytesIn.Load(),
		FramesOut: c.framesOut.Load(), BytesOut: c.bytesOut.Load(),
		ReadErrors: c.readErrors.Load(),
	}
	for i := range NumCauses {
		s.InRefused[i] = c.inRefused[i].Load()
		s.OutRefused[i] = c.outRefused[i].Load()
	}
	return s
}

// WriteTiming returns a copy of the writer's timing histograms.
func (c *Counters) WriteTiming() WriteTiming {
	c.timingMu.Lock()
	defer c.timingMu.Unlock()
	var t WriteTiming
	t.Queue.Merge(&c.timing.Queue)
	t.Write.Merge(&c.timing.Write)
	return t
}

// RoomSignal holds the callback a port's writer calls each time it takes
// a frame from its queue (WriteRoomer.OnWriteRoom); set and called from
// different goroutines.
type RoomSignal struct{ fn atomic.Pointer[func()] }

// Set replaces the callback; nil removes it.
func (r *RoomSignal) Set(fn func()) {
	if fn == nil {
		r.fn.Store(nil)
		return
	}
	r.fn.Store(&fn)
}

// Signal calls the callback, if one is set.
func (r *RoomSignal) Signal() {
	if fn := r.fn.Load(); fn != nil {
		(*fn)()
	}
}
