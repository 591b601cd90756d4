// Package porttest owns the in-memory frame port: a double of a TAP device
// that keeps the frame-port contract (emu/frameport) without a kernel, so
// the daemon's frame path is tested without privileges.
//
// New returns two ends of one link. The Port is the daemon's end and
// behaves as a TAP device does for the daemon: one reader that validates
// frames against the MTU and stops reading while its handler blocks, one
// writer draining a bounded queue, Send that never blocks and refuses with
// a counted cause. The Peer is the test's end, standing where the
// application behind a TAP would: it injects frames into the port's
// inbound queue (bounded like the kernel's TAP queue: Inject waits while it
// is full, TryInject refuses and counts) and receives the frames the
// writer wrote, in order. HoldWriter makes the sink slow so the writer
// queue fills. Everything is safe for concurrent use and race-free.
package porttest

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/tracefmt/ether"
)

// Defaults of Config.
const (
	DefaultMTU        = 1500
	DefaultInQueueLen = 64  // frames the inbound queue holds
	DefaultTxQueueLen = 256 // as emu/tap
)

// Config describes one in-memory port.
type Config struct {
	// Name names the port.
	Name string
	// MAC is the port's own address; zero for none.
	MAC ether.MAC
	// MTU in bytes; 0 means DefaultMTU.
	MTU int
	// InQueueLen bounds the frames injected and not yet read (the kernel's
	// TAP queue); 0 means DefaultInQueueLen.
	InQueueLen int
	// TxQueueLen bounds the writer queue; 0 means DefaultTxQueueLen.
	TxQueueLen int
}

// A Port is a frame port.
var _ frameport.Port = (*Port)(nil)
var _ frameport.WriteRoomer = (*Port)(nil)

// Port is the daemon's end of an in-memory link.
type Port struct {
	name string
	mac  ether.MAC
	mtu  int
	pool *frameport.Pool
	peer *Peer

	in   chan []byte  // injected, not yet read
	inMu sync.RWMutex // Close drains in under the write lock, after done

	txMu     sync.RWMutex // guards txClosed against Send racing Close
	txClosed bool
	txq      chan *frameport.Frame
	room     frameport.RoomSignal // OnWriteRoom's callback

	startOnce sync.Once
	started   atomic.Bool
	done      chan struct{} // closed by Close once the writer drained
	readerWG  sync.WaitGroup
	writerWG  sync.WaitGroup
	closeOnce sync.Once

	// The boundary counters: Stats and WriteTiming are theirs.
	frameport.Counters
}

// Peer is the test's end of an in-memory link.
type Peer struct {
	port *Port

	mu       sync.Mutex
	cond     *sync.Cond // signals received frames and the writer's hold
	received [][]byte   // written by the port, not yet taken by Recv
	held     bool
	closing  bool

	injected, waits, refused, discarded atomic.Uint64
	written                             atomic.Uint64
}

// PeerStats counts what crossed the test's end.
type PeerStats struct {
	// Injected counts frames accepted into the inbound queue.
	Injected uint64
	// InjectWaits counts how often Inject found the inbound queue full and
	// waited: the port's reader had stopped reading.
	InjectWaits uint64
	// InjectRefused counts frames TryInject refused for a full queue (a
	// kernel TAP queue would drop them and count tx_dropped).
	InjectRefused uint64
	// Discarded counts injected frames the port never read because it
	// closed first.
	Discarded uint64
	// Written counts frames the port's writer wrote to this end.
	Written uint64
}

// New returns the two ends of an in-memory link.
func New(cfg Config) (*Port, *Peer) {
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.InQueueLen <= 0 {
		cfg.InQueueLen = DefaultInQueueLen
	}
	if cfg.TxQueueLen <= 0 {
		cfg.TxQueueLen = DefaultTxQueueLen
	}
	p := &Port{name: cfg.Name, mac: cfg.MAC, mtu: cfg.MTU,
		in: make(chan []byte, cfg.InQueueLen), txq: make(chan *frameport.Frame, cfg.TxQueueLen),
		done: make(chan struct{})}
	// One spare byte, as emu/tap reads, shows an over-long frame.
	p.pool = frameport.NewPool(p, ether.MaxFrameLen(cfg.MTU)+1)
	p.peer = &Peer{port: p}
	p.peer.cond = sync.NewCond(&p.peer.mu)
	return p, p.peer
}

// Name returns the port's name.
func (p *Port) Name() string { return p.name }

// MAC returns the port's own address.
func (p *Port) MAC() ether.MAC { return p.mac }

// MTU returns the MTU frames are validated against.
func (p *Port) MTU() int { return p.mtu }

// Peer returns the test's end.
func (p *Port) Peer() *Peer { return p.peer }

// Held returns the frames taken from the port's pool and not released:
// zero once every frame read or allocated has been written or released.
func (p *Port) Held() int64 { return p.pool.Held() }

// NewFrame returns an empty frame from the port's pool.
func (p *Port) NewFrame() *frameport.Frame { return p.pool.Get() }

// StartFunc launches the reader and the writer.
func (p *Port) StartFunc(handle func(*frameport.Frame) bool) error {
	if handle == nil {
		return errors.New("porttest: StartFunc needs a handler")
	}
	err := frameport.ErrStarted
	p.startOnce.Do(func() {
		err = nil
		p.started.Store(true)
		p.readerWG.Add(1)
		p.writerWG.Add(1)
		go p.readLoop(handle)
		go p.writeLoop()
	})
	return err
}

// readLoop is the port's only reader.
func (p *Port) readLoop(handle func(*frameport.Frame) bool) {
	defer p.readerWG.Done()
	for {
		var b []byte
		select {
		case b = <-p.in:
		case <-p.done:
			return
		}
		f := p.pool.Get()
		buf := f.Data[:cap(f.Data)]
		if len(b) > len(buf) {
			p.refuseIn(f, frameport.CauseTooLong)
			continue
		}
		f.Data = buf[:copy(buf, b)]
		h, err := ether.Validate(f.Data, p.mtu)
		if err != nil {
			c := frameport.CauseTooShort
			if errors.Is(err, ether.ErrTooLong) {
				c = frameport.CauseTooLong
			}
			p.refuseIn(f, c)
			continue
		}
		f.Header, f.At = h, time.Now()
		n := len(f.Data)
		p.CountIn(n)
		if !handle(f) {
			p.UncountIn(n)
			p.refuseIn(f, frameport.CauseClosed)
			return
		}
	}
}

func (p *Port) refuseIn(f *frameport.Frame, c frameport.Cause) {
	f.Release()
	p.RefuseIn(c)
}

func (p *Port) refuseOut(f *frameport.Frame, c frameport.Cause) {
	f.Release()
	p.RefuseOut(c)
}

// Send queues f for the writer and takes ownership of it; it never blocks.
func (p *Port) Send(f *frameport.Frame) error {
	if _, err := ether.Validate(f.Data, p.mtu); err != nil {
		c := frameport.CauseTooShort
		if errors.Is(err, ether.ErrTooLong) {
			c = frameport.CauseTooLong
		}
		p.refuseOut(f, c)
		return err
	}
	p.txMu.RLock()
	defer p.txMu.RUnlock()
	if p.txClosed {
		p.refuseOut(f, frameport.CauseClosed)
		return frameport.ErrClosed
	}
	select {
	case p.txq <- f:
		return nil
	default:
		p.refuseOut(f, frameport.CauseQueueFull)
		return frameport.ErrQueueFull
	}
}

// WriteRoom returns how many more frames Send would queue now
// (frameport.WriteRoomer).
func (p *Port) WriteRoom() int { return cap(p.txq) - len(p.txq) }

// OnWriteRoom sets the callback the writer calls each time it takes a
// frame from its queue (frameport.WriteRoomer).
func (p *Port) OnWriteRoom(fn func()) { p.room.Set(fn) }

// writeLoop is the port's only writer: frames reach the peer in Send order.
func (p *Port) writeLoop() {
	defer p.writerWG.Done()
	q := p.peer
	for f := range p.txq {
		p.room.Signal()
		var t0 time.Time
		if !f.At.IsZero() {
			t0 = time.Now()
		}
		b := append([]byte(nil), f.Data...)
		q.mu.Lock()
		for q.held && !q.closing {
			q.cond.Wait()
		}
		q.received = append(q.received, b)
		q.mu.Unlock()
		q.cond.Broadcast()
		q.written.Add(1)
		if !t0.IsZero() {
			p.RecordWrite(f.At, t0, time.Now())
		}
		p.CountOut(len(b))
		f.Release()
	}
}

// Close refuses further frames, lets the writer drain its queue (a held
// writer is let go), stops the reader (after its handler returns) and
// counts the injected frames never read as the peer's Discarded. It is
// idempotent.
func (p *Port) Close() error {
	p.closeOnce.Do(func() {
		p.startOnce.Do(func() {}) // a later StartFunc must not launch goroutines
		p.txMu.Lock()
		p.txClosed = true
		close(p.txq)
		p.txMu.Unlock()
		if !p.started.Load() {
			for f := range p.txq {
				p.refuseOut(f, frameport.CauseClosed)
			}
		}
		q := p.peer
		q.mu.Lock()
		q.closing = true
		q.mu.Unlock()
		q.cond.Broadcast()
		p.writerWG.Wait()
		close(p.done)
		p.readerWG.Wait()
		p.inMu.Lock() // an Inject in progress returns first
		defer p.inMu.Unlock()
		for {
			select {
			case <-p.in:
				q.discarded.Add(1)
				continue
			default:
			}
			break
		}
	})
	return nil
}

// Errors of the peer.
var (
	// ErrQueueFull: TryInject found the inbound queue full.
	ErrQueueFull = errors.New("porttest: inbound queue full")
	// ErrTimeout: Recv found no frame in time.
	ErrTimeout = os.ErrDeadlineExceeded
)

// Inject copies frame into the port's inbound queue, waiting while the
// queue is full (the port's reader has stopped reading). It returns
// frameport.ErrClosed once the port is closed. The frame is validated
// when the port reads it, as a TAP device validates what it reads.
func (q *Peer) Inject(frame []byte) error {
	p := q.port
	p.inMu.RLock()
	defer p.inMu.RUnlock()
	select {
	case <-p.done:
		return frameport.ErrClosed
	default:
	}
	b := append([]byte(nil), frame...)
	select {
	case p.in <- b:
		q.injected.Add(1)
		return nil
	default:
	}
	q.waits.Add(1)
	select {
	case p.in <- b:
		q.injected.Add(1)
		return nil
	case <-p.done:
		return frameport.ErrClosed
	}
}

// TryInject is Inject without waiting: a full queue refuses the frame
// (counted as InjectRefused) with ErrQueueFull.
func (q *Peer) TryInject(frame []byte) error {
	p := q.port
	p.inMu.RLock()
	defer p.inMu.RUnlock()
	select {
	case <-p.done:
		return frameport.ErrClosed
	default:
	}
	select {
	case p.in <- append([]byte(nil), frame...):
		q.injected.Add(1)
		return nil
	default:
		q.refused.Add(1)
		return ErrQueueFull
	}
}

// Queued returns the frames injected and not yet read by the port.
func (q *Peer) Queued() int { return len(q.port.in) }

// Recv returns the oldest frame the port wrote and the peer has not taken
// yet, waiting up to timeout; ErrTimeout if none came.
func (q *Peer) Recv(timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	t := time.AfterFunc(timeout, func() {
		// Taking the lock orders the wake-up after the waiter's Wait.
		q.mu.Lock()
		defer q.mu.Unlock()
		q.cond.Broadcast()
	})
	defer t.Stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.received) == 0 {
		if !time.Now().Before(deadline) {
			return nil, ErrTimeout
		}
		q.cond.Wait()
	}
	b := q.received[0]
	q.received[0] = nil
	q.received = q.received[1:]
	return b, nil
}

// Pending returns the frames written and not yet taken by Recv.
func (q *Peer) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.received)
}

// HoldWriter makes the sink slow: the port's writer takes at most one more
// frame from its queue and waits before writing it, so the queue fills and
// Send refuses with queue_full. Close lets a held writer go.
func (q *Peer) HoldWriter() {
	q.mu.Lock()
	q.held = true
	q.mu.Unlock()
}

// ReleaseWriter lets a held writer write again.
func (q *Peer) ReleaseWriter() {
	q.mu.Lock()
	q.held = false
	q.mu.Unlock()
	q.cond.Broadcast()
}

// Stats returns the peer's counters.
func (q *Peer) Stats() PeerStats {
	return PeerStats{Injected: q.injected.Load(), InjectWaits: q.waits.Load(), InjectRefused: q.refused.Load(),
		Discarded: q.discarded.Load(), Written: q.written.Load()}
}
