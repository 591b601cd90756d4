// Package qemusock owns the QEMU socket port: a frame port (emu/frameport)
// that a stock QEMU attaches a VM's network card to, over a unix stream
// socket (QEMU 7.2 and later: -netdev stream,addr.type=unix,...) or a TCP
// socket (older QEMU: -netdev socket,connect=host:port), with QEMU's framing:
// every Ethernet frame is preceded by its length as a 32-bit big-endian
// integer (QEMU's net/stream.c and net/socket.c; no virtio_net_hdr).
//
// It exists because a TAP device the daemon holds open cannot be opened a
// second time by QEMU (TUNSETIFF on a busy name fails with EBUSY), so a VM
// cannot share the daemon's TAP; here the daemon listens and QEMU connects.
//
// The port keeps the frame-port contract, with these particulars:
//   - One peer at a time. The port listens from Listen to Close; the first
//     connection becomes the peer. When it disconnects (the VM powered off
//     or QEMU restarted) the next connection becomes the peer: a restarted
//     guest reattaches without restarting the daemon. A connection that
//     arrives while a peer is attached waits, counted and logged (Peers),
//     until that peer detaches: a restarted QEMU may connect before the
//     port has read the old one's end of stream.
//   - Backpressure both ways. While the consumer blocks, the reader reads
//     nothing more, the socket's buffer fills and QEMU stops taking frames
//     from the guest (its send queue waits for the socket to drain). The
//     writer writes with blocking writes: while the guest does not read,
//     the writer stalls, its queue fills and a consumer that waits for room
//     (frameport.WriteRoomer) holds the frames, losing none.
//   - Frames sent while no peer is connected are refused and counted as
//     no_peer (the cable is unplugged); one whose write fails because the
//     peer went away mid-write as write_error. A frame the peer sent only in part before it
//     disconnected counts as a read error (Stats.ReadErrors), which, unlike
//     a TAP's, does not stop the reader: it waits for the next peer.
//   - A length prefix above MaxWireLen (QEMU's own receive buffer) means the
//     peer does not speak the protocol: the connection is closed and counted
//     as a read error. A frame within it but longer than the MTU allows is
//     skipped and counted as too_long, one shorter than an Ethernet header
//     as too_short; the stream stays in step.
//   - QEMU's stream and socket back-ends carry no virtio_net_hdr, so the
//     guest sees plain frames: a TCP super-frame from a TAP with offloads is
//     cut into MTU-sized segments and a partial checksum completed in
//     software (emu/vnet) before it is written.
package qemusock

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/vnet"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"go.uber.org/zap"
)

// Limits and defaults.
const (
	// MaxWireLen is the longest frame QEMU's stream and socket back-ends
	// accept (NET_BUFSIZE in QEMU's include/net/net.h: 4096 + 65536); a
	// length prefix above it is a protocol error.
	MaxWireLen = 4096 + 65536
	// MinMTU and MaxMTU bound Config.MTU (as for a TAP device).
	MinMTU = 68
	MaxMTU = 65535 - 14
	// DefaultMTU is the MTU when Config.MTU is 0 (a virtio-net card's).
	DefaultMTU = 1500
	// DefaultTxQueueLen is the writer queue when Config.TxQueueLen is 0.
	DefaultTxQueueLen = 1024
	// DefaultDrainTimeout is how long Close lets the writer drain into a
	// live peer when Config.DrainTimeout is 0.
	DefaultDrainTimeout = 2 * time.Second
	// MaxUnixPath is the longest unix socket path (sun_path minus its NUL).
	MaxUnixPath = 107
	// prefixLen is the length prefix before every frame.
	prefixLen = 4
	// maxSuperPayload is the longest super-frame payload a port may be
	// sent (a TAP with offloads: one IP packet); it sizes the frame pool.
	maxSuperPayload = 65535
)

// Config describes one QEMU socket port.
type Config struct {
	// Name names the port (the VM, in the daemon's statistics).
	Name string
	// Addr is where the port listens: an absolute unix socket path for
	// -netdev stream (QEMU 7.2 and later), or ip:port for -netdev socket
	// (TCP; any QEMU).
	Addr string
	// MAC is the guest's address if known (QEMU's -device ...,mac=); the
	// zero MAC leaves it to be learnt from the guest's frames.
	MAC ether.MAC
	// MTU is the largest payload of a frame in bytes; 0 means DefaultMTU.
	MTU int
	// TxQueueLen bounds the writer queue in frames; 0 means
	// DefaultTxQueueLen.
	TxQueueLen int
	// Owner is the uid that owns a unix socket (a QEMU that does not run
	// as root must be able to connect); 0 leaves it to root. The socket's
	// mode is 0600.
	Owner int
	// DrainTimeout bounds how long Close waits for the writer to hand its
	// queue to a peer that is not reading; 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Logger receives connection notices and rate-limited refusal logs;
	// nil discards them.
	Logger *zap.Logger
}

// ParseAddr checks a listening address: an absolute unix socket path (at
// most MaxUnixPath bytes) or ip:port with a literal IP and a port 1..65535.
// It returns the network, "unix" or "tcp".
func ParseAddr(addr string) (network string, err error) {
	switch {
	case addr == "":
		return "", errors.New("socket is empty: want an absolute unix socket path such as /run/fabemu/vm0.sock, or ip:port for TCP")
	case filepath.IsAbs(addr):
		if len(addr) > MaxUnixPath {
			return "", fmt.Errorf("socket %q: a unix socket path has at most %d bytes", addr, MaxUnixPath)
		}
		if filepath.Clean(addr) != addr || addr == "/" {
			return "", fmt.Errorf("socket %q: want a clean path to a file, such as /run/fabemu/vm0.sock", addr)
		}
		return "unix", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("socket %q: want an absolute unix socket path, or ip:port for TCP", addr)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return "", fmt.Errorf("socket %q: %q is not an IP address (TCP sockets listen on a literal IP, e.g. 127.0.0.1:5600)", addr, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("socket %q: port %q: want 1..65535", addr, port)
	}
	return "tcp", nil
}

// Check validates cfg without listening.
func (cfg Config) Check() error {
	if cfg.Name == "" {
		return errors.New("name is empty")
	}
	if _, err := ParseAddr(cfg.Addr); err != nil {
		return err
	}
	if cfg.MTU != 0 && (cfg.MTU < MinMTU || cfg.MTU > MaxMTU) {
		return fmt.Errorf("mtu %d: want %d..%d", cfg.MTU, MinMTU, MaxMTU)
	}
	if cfg.MAC.IsMulticast() {
		return fmt.Errorf("mac %s is a multicast address", cfg.MAC)
	}
	if cfg.TxQueueLen < 0 || cfg.Owner < 0 || cfg.DrainTimeout < 0 {
		return errors.New("tx queue length, owner and drain timeout must not be negative")
	}
	return nil
}

var (
	_ frameport.Port        = (*Port)(nil)
	_ frameport.WriteRoomer = (*Port)(nil)
)

// Port is a listening QEMU socket port.
type Port struct {
	name  string
	addr  string
	mac   ether.MAC
	mtu   int
	drain time.Duration
	log   *zap.Logger
	pool  *frameport.Pool
	ln    net.Listener

	connMu   sync.Mutex
	detached *sync.Cond    // on connMu: conn became nil, or done closed
	conn     net.Conn      // the live peer, nil if none
	conns    chan net.Conn // accepted peers for the reader

	txMu     sync.RWMutex // guards txClosed against Send racing Close
	txClosed bool
	txq      chan *frameport.Frame
	room     frameport.RoomSignal // OnWriteRoom's callback
	wbuf     []byte               // writer-owned: a length prefix and its frame
	segBuf   []byte               // writer-owned: the segment vnet.Segment builds

	startOnce sync.Once
	done      chan struct{} // closed by Close after the writer drained
	wg        sync.WaitGroup
	writerWG  sync.WaitGroup
	closeOnce sync.Once

	peers, peersWaited atomic.Uint64
	logNext            atomic.Int64
	// The boundary counters: Stats and WriteTiming are theirs.
	frameport.Counters
}

// Listen checks cfg and listens on its address. A unix socket file left
// by an earlier run is removed if nothing answers on it; one a live
// process listens on is refused. The parent directory is created (0755).
// The port accepts peers from now on; frames flow once StartFunc runs.
func Listen(cfg Config) (*Port, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("qemu socket %s: %w", cfg.Name, err)
	}
	network, _ := ParseAddr(cfg.Addr)
	p := newUnlistened(cfg)
	var err error
	if network == "unix" {
		p.ln, err = listenUnix(cfg.Addr, cfg.Owner, p.log)
	} else {
		p.ln, err = net.Listen("tcp", cfg.Addr)
	}
	if err != nil {
		return nil, fmt.Errorf("qemu socket %s: %w", cfg.Name, err)
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// newPort is Listen on a listener of the caller's (the tests' socketpair
// listener), with cfg's address only checked.
func newPort(cfg Config, ln net.Listener) (*Port, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	p := newUnlistened(cfg)
	p.ln = ln
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// newUnlistened returns the port cfg describes, with no listener yet.
func newUnlistened(cfg Config) *Port {
	p := &Port{name: cfg.Name, addr: cfg.Addr, mac: cfg.MAC, mtu: cfg.MTU, drain: cfg.DrainTimeout, log: cfg.Logger,
		conns: make(chan net.Conn, 1), done: make(chan struct{})}
	p.detached = sync.NewCond(&p.connMu)
	if p.mtu == 0 {
		p.mtu = DefaultMTU
	}
	if p.drain == 0 {
		p.drain = DefaultDrainTimeout
	}
	if p.log == nil {
		p.log = zap.NewNop()
	}
	p.log = p.log.With(zap.String("port", cfg.Name), zap.String("socket", cfg.Addr))
	q := cfg.TxQueueLen
	if q == 0 {
		q = DefaultTxQueueLen
	}
	p.txq = make(chan *frameport.Frame, q)
	p.pool = frameport.NewPool(p, ether.MaxFrameLen(maxSuperPayload))
	return p
}

// listenUnix listens on path, reclaiming a stale socket file.
func listenUnix(path string, owner int, log *zap.Logger) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
		}
		c, derr := net.DialTimeout("unix", path, time.Second)
		if derr == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use: a process (another daemon?) listens on it", path)
		}
		log.Warn("removing stale socket left by an earlier run")
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	err = os.Chmod(path, 0o600)
	if err == nil && owner > 0 {
		err = os.Chown(path, owner, -1)
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Name returns the port's name.
func (p *Port) Name() string { return p.name }

// Addr returns the address the port listens on.
func (p *Port) Addr() string { return p.ln.Addr().String() }

// MAC returns the configured guest MAC (zero if it is learnt).
func (p *Port) MAC() ether.MAC { return p.mac }

// MTU returns the port's MTU in bytes.
func (p *Port) MTU() int { return p.mtu }

// NewFrame returns an empty pooled frame that can hold a super-frame.
func (p *Port) NewFrame() *frameport.Frame { return p.pool.Get() }

// Held returns the frames of the port's pool not yet released.
func (p *Port) Held() int64 { return p.pool.Held() }

// Connected reports whether a peer is attached.
func (p *Port) Connected() bool {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	return p.conn != nil
}

// Peers returns how many peers attached since Listen, and how many of
// them had to wait for an attached peer to detach first.
func (p *Port) Peers() (attached, waited uint64) { return p.peers.Load(), p.peersWaited.Load() }

// acceptLoop accepts peers until Close; each becomes the peer once the
// one before it detached, and goes to the reader.
func (p *Port) acceptLoop() {
	defer p.wg.Done()
	defer close(p.conns)
	for {
		c, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			p.log.Warn("accepting a peer failed", zap.Error(err))
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.connMu.Lock()
		if p.conn != nil && !p.closing() {
			p.peersWaited.Add(1)
			p.log.Warn("a new peer waits until the attached one detaches (a restarted QEMU, or two QEMUs on one socket?)")
		}
		for p.conn != nil && !p.closing() {
			p.detached.Wait()
		}
		if p.closing() {
			p.connMu.Unlock()
			c.Close()
			return
		}
		p.conn = c
		p.connMu.Unlock()
		p.peers.Add(1)
		p.log.Info("peer attached")
		p.conns <- c
	}
}

// closing reports whether Close has begun stopping the port.
func (p *Port) closing() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// StartFunc launches the reader and the writer (frameport.Port).
func (p *Port) StartFunc(handle func(*frameport.Frame) bool) error {
	if handle == nil {
		return errors.New("qemu socket: StartFunc needs a handler")
	}
	err := frameport.ErrStarted
	p.startOnce.Do(func() {
		err = nil
		p.wg.Add(1)
		p.writerWG.Add(1)
		go p.readLoop(handle)
		go p.writeLoop()
	})
	return err
}

// readLoop serves one peer after the other until Close.
func (p *Port) readLoop(handle func(*frameport.Frame) bool) {
	defer p.wg.Done()
	for c := range p.conns {
		stop := p.serve(c, handle)
		p.dropConn(c)
		if stop {
			// The consumer is shutting down; later peers wait in the
			// accept queue until Close.
			for c := range p.conns {
				p.dropConn(c)
			}
			return
		}
	}
}

// dropConn closes c and forgets it as the peer.
func (p *Port) dropConn(c net.Conn) {
	c.Close()
	p.connMu.Lock()
	if p.conn == c {
		p.conn = nil
		p.detached.Broadcast()
	}
	p.connMu.Unlock()
}

// serve reads c's frames until it ends; it reports true if the handler
// refused a frame (the consumer is stopping).
func (p *Port) serve(c net.Conn, handle func(*frameport.Frame) bool) (stop bool) {
	r := bufio.NewReaderSize(c, 256<<10)
	var pre [prefixLen]byte
	for {
		if _, err := io.ReadFull(r, pre[:]); err != nil {
			p.peerGone(err, err == io.EOF)
			return false
		}
		n := int(binary.BigEndian.Uint32(pre[:]))
		if n > MaxWireLen {
			p.CountReadError()
			p.log.Error("peer sent a length prefix beyond QEMU's frame size: not QEMU's framing; closing the connection",
				zap.Int("length", n), zap.Int("max", MaxWireLen))
			return false
		}
		if n > ether.MaxFrameLen(p.mtu) {
			if _, err := r.Discard(n); err != nil {
				p.peerGone(err, false)
				return false
			}
			p.refuseIn(nil, frameport.CauseTooLong, n)
			continue
		}
		f := p.NewFrame()
		f.Data = f.Data[:n]
		if _, err := io.ReadFull(r, f.Data); err != nil {
			f.Release()
			p.peerGone(err, false)
			return false
		}
		at := time.Now()
		h, err := ether.Validate(f.Data, p.mtu)
		if err != nil {
			c := frameport.CauseTooShort
			if errors.Is(err, ether.ErrTooLong) {
				c = frameport.CauseTooLong
			}
			p.refuseIn(f, c, n)
			continue
		}
		f.Header, f.At = h, at
		p.CountIn(n)
		if !handle(f) {
			p.UncountIn(n)
			p.refuseIn(f, frameport.CauseClosed, n)
			return true
		}
	}
}

// peerGone notes the end of a peer's stream: clean at a frame boundary,
// or with a frame cut short (a read error).
func (p *Port) peerGone(err error, clean bool) {
	select {
	case <-p.done:
		return // Close closed the connection
	default:
	}
	if clean {
		p.log.Info("peer detached; waiting for the next one")
		return
	}
	p.CountReadError()
	p.log.Warn("peer's stream broke off; waiting for the next peer", zap.Error(err))
}

// refuseIn counts an inbound frame refused by cause (f may be nil when
// the frame was skipped unread).
func (p *Port) refuseIn(f *frameport.Frame, c frameport.Cause, n int) {
	if f != nil {
		f.Release()
	}
	p.RefuseIn(c)
	if p.logAllowed() {
		p.log.Warn("dropped frame from peer", zap.Stringer("cause", c), zap.Int("bytes", n), zap.Int("mtu", p.mtu))
	}
}

func (p *Port) refuseOut(f *frameport.Frame, c frameport.Cause, err error) {
	n := len(f.Data)
	f.Release()
	p.RefuseOut(c)
	if p.logAllowed() {
		p.log.Warn("refused frame for peer", zap.Stringer("cause", c), zap.Int("bytes", n), zap.Int("mtu", p.mtu), zap.Error(err))
	}
}

// logAllowed lets one refusal log line through per second.
func (p *Port) logAllowed() bool {
	now := time.Now().UnixNano()
	n := p.logNext.Load()
	return now >= n && p.logNext.CompareAndSwap(n, now+int64(time.Second))
}

// checkSize validates a frame to send: a super-frame against the largest
// IP packet (it is segmented at the MTU on the way out), others against
// the MTU.
func (p *Port) checkSize(f *frameport.Frame) error {
	mtu := p.mtu
	if f.Offload.IsGSO() {
		mtu = maxSuperPayload
	}
	_, err := ether.Validate(f.Data, mtu)
	return err
}

// Send queues f for the writer and takes ownership of it (frameport.Port).
func (p *Port) Send(f *frameport.Frame) error {
	if err := p.checkSize(f); err != nil {
		c := frameport.CauseTooShort
		if errors.Is(err, ether.ErrTooLong) {
			c = frameport.CauseTooLong
		}
		p.refuseOut(f, c, nil)
		return err
	}
	p.txMu.RLock()
	defer p.txMu.RUnlock()
	if p.txClosed {
		p.refuseOut(f, frameport.CauseClosed, nil)
		return frameport.ErrClosed
	}
	select {
	case p.txq <- f:
		return nil
	default:
		p.refuseOut(f, frameport.CauseQueueFull, nil)
		return frameport.ErrQueueFull
	}
}

// WriteRoom returns how many more frames Send would queue now.
func (p *Port) WriteRoom() int { return cap(p.txq) - len(p.txq) }

// OnWriteRoom sets the writer's room callback (frameport.WriteRoomer).
func (p *Port) OnWriteRoom(fn func()) { p.room.Set(fn) }

// writeLoop is the port's only writer: frames leave in Send order.
func (p *Port) writeLoop() {
	defer p.writerWG.Done()
	for f := range p.txq {
		p.room.Signal()
		p.writeOne(f)
	}
}

// writeOne writes f to the peer, records its timing and counts it.
func (p *Port) writeOne(f *frameport.Frame) {
	p.connMu.Lock()
	c := p.conn
	p.connMu.Unlock()
	if c == nil {
		p.refuseOut(f, frameport.CauseNoPeer, errors.New("no peer attached"))
		return
	}
	t0 := time.Now()
	err := p.writeFrame(c, f)
	if !f.At.IsZero() {
		p.RecordWrite(f.At, t0, time.Now())
	}
	if err != nil {
		// A frame cut short leaves the stream out of step: end the
		// connection (the reader sees it and waits for the next peer).
		c.Close()
		p.refuseOut(f, frameport.CauseWriteError, err)
		return
	}
	p.CountOut(len(f.Data))
	f.Release()
}

// writeFrame writes f with its length prefix, a super-frame as segments
// and a frame with a partial checksum completed (no virtio_net_hdr on
// QEMU's socket back-ends).
func (p *Port) writeFrame(c net.Conn, f *frameport.Frame) error {
	if !f.Offload.IsGSO() && f.Offload.Flags&vnet.FlagNeedsCsum == 0 {
		return p.writeWire(c, f.Data)
	}
	if p.segBuf == nil {
		p.segBuf = make([]byte, 0, ether.MaxFrameLen(maxSuperPayload))
	}
	return vnet.Segment(f.Data, f.Offload, p.segBuf, func(b []byte) error { return p.writeWire(c, b) })
}

// writeWire writes one frame with its length prefix in one write.
func (p *Port) writeWire(c net.Conn, b []byte) error {
	p.wbuf = binary.BigEndian.AppendUint32(p.wbuf[:0], uint32(len(b)))
	p.wbuf = append(p.wbuf, b...)
	_, err := c.Write(p.wbuf)
	return err
}

// Close refuses further frames, lets the writer hand its queue to the peer
// for at most the drain timeout (then cuts the peer off so a write that
// waits for a guest that does not read returns), stops the reader and the
// listener (removing a unix socket file) and waits for the goroutines. It
// is idempotent.
func (p *Port) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.startOnce.Do(func() {}) // a later StartFunc must not launch goroutines
		p.txMu.Lock()
		p.txClosed = true
		close(p.txq)
		p.txMu.Unlock()
		drained := make(chan struct{})
		go func() { p.writerWG.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(p.drain):
			p.log.Warn("the peer did not take the queued frames in time; cutting it off", zap.Duration("drain_timeout", p.drain))
		}
		p.connMu.Lock()
		close(p.done)
		if p.conn != nil {
			p.conn.Close()
		}
		p.detached.Broadcast()
		p.connMu.Unlock()
		err = p.ln.Close()
		<-drained
		p.wg.Wait()
		// Frames queued but never started (no writer ran) are refused.
		for f := range p.txq {
			p.refuseOut(f, frameport.CauseClosed, nil)
		}
	})
	return err
}
