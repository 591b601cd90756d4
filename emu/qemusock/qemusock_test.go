package qemusock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/vnet"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"golang.org/x/sys/unix"
)

var (
	macA = ether.MAC{0x02, 0, 0, 0, 0, 0x0a}
	macB = ether.MAC{0x02, 0, 0, 0, 0, 0x0b}
)

// hangLimit bounds every wait on the port: far above what any step takes
// on a loaded machine, it only turns a hang into a failure.
const hangLimit = 20 * time.Second

// frame returns an Ethernet frame dst<-src with a payload of n bytes whose
// first four carry seq.
func frame(dst, src ether.MAC, seq uint32, n int) []byte {
	b := make([]byte, ether.HeaderLen+n)
	copy(b, dst[:])
	copy(b[6:], src[:])
	binary.BigEndian.PutUint16(b[12:], 0x88b5) // local experimental EtherType
	if n >= 4 {
		binary.BigEndian.PutUint32(b[ether.HeaderLen:], seq)
	}
	for i := ether.HeaderLen + 4; i < len(b); i++ {
		b[i] = byte(i + int(seq))
	}
	return b
}

// wire is b with QEMU's length prefix.
func wire(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// pairListener is a net.Listener whose connections are the port's ends of
// socketpairs the test makes with dial.
type pairListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPairListener() *pairListener {
	return &pairListener{conns: make(chan net.Conn, 4), closed: make(chan struct{})}
}

func (l *pairListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pairListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pairListener) Addr() net.Addr { return &net.UnixAddr{Name: "socketpair", Net: "unix"} }

// dial makes a socketpair, hands one end to the port and returns the
// other: the fake QEMU.
func (l *pairListener) dial(t testing.TB) net.Conn {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int, name string) net.Conn {
		f := os.NewFile(uintptr(fd), name)
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	l.conns <- conn(fds[0], "port")
	peer := conn(fds[1], "qemu")
	t.Cleanup(func() { peer.Close() })
	return peer
}

// collector is a handler that keeps the frames it is handed.
type collector struct {
	mu     sync.Mutex
	frames [][]byte
	got    chan struct{}
	block  chan struct{} // non-nil: the handler waits on it (backpressure)
}

func newCollector() *collector { return &collector{got: make(chan struct{}, 1<<16)} }

func (c *collector) handle(f *frameport.Frame) bool {
	if c.block != nil {
		<-c.block
	}
	c.mu.Lock()
	c.frames = append(c.frames, append([]byte(nil), f.Data...))
	c.mu.Unlock()
	f.Release()
	c.got <- struct{}{}
	return true
}

func (c *collector) wait(t *testing.T, n int) [][]byte {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-c.got:
		case <-time.After(hangLimit):
			t.Fatalf("got %d of %d frames within %v", i, n, hangLimit)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames
}

func startPort(t *testing.T, cfg Config, h func(*frameport.Frame) bool) (*Port, *pairListener) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "vm0"
	}
	if cfg.Addr == "" {
		cfg.Addr = "/run/fabemu/test.sock"
	}
	l := newPairListener()
	p, err := newPort(cfg, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartFunc(h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Error(err)
		}
		if n := p.Held(); n != 0 {
			t.Errorf("%d frames of the port's pool not released", n)
		}
	})
	return p, l
}

// readWire reads one length-prefixed frame from the fake QEMU's end.
func readWire(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(hangLimit))
	var pre [4]byte
	if _, err := io.ReadFull(c, pre[:]); err != nil {
		t.Fatalf("reading a length prefix: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(pre[:]))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("reading a frame of %d bytes: %v", len(b), err)
	}
	return b
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, hangLimit)
		}
		time.Sleep(time.Millisecond)
	}
}

func send(t *testing.T, p *Port, b []byte) {
	t.Helper()
	f := p.NewFrame()
	f.Data = append(f.Data, b...)
	if err := p.Send(f); err != nil {
		t.Fatal(err)
	}
}

// TestFramingBothWays: frames the peer writes (whole, several per write,
// and cut into pieces at every boundary, the prefix included) arrive
// whole and in order; frames sent reach the peer with their prefixes, in
// order.
func TestFramingBothWays(t *testing.T) {
	col := newCollector()
	p, l := startPort(t, Config{}, col.handle)
	q := l.dial(t)
	waitFor(t, "peer attached", p.Connected)

	var want [][]byte
	var stream []byte
	for i, n := range []int{46, 1500, 0, 4, 1000, 60, 1499} {
		b := frame(macB, macA, uint32(i), n)
		want = append(want, b)
		stream = append(stream, wire(b)...)
	}
	// Whole stream in one write, then the same stream in pieces of 1, 3,
	// 7... bytes with pauses so the reader sees partial frames and
	// partial prefixes.
	if _, err := q.Write(stream); err != nil {
		t.Fatal(err)
	}
	for off, step := 0, 1; off < len(stream); step = step*2 + 1 {
		end := min(off+step, len(stream))
		if _, err := q.Write(stream[off:end]); err != nil {
			t.Fatal(err)
		}
		off = end
		time.Sleep(100 * time.Microsecond)
	}
	got := col.wait(t, 2*len(want))
	for i, g := range got {
		if !bytes.Equal(g, want[i%len(want)]) {
			t.Fatalf("frame %d: got %d bytes, want %d (%x...)", i, len(g), len(want[i%len(want)]), g[:min(len(g), 20)])
		}
	}
	st := p.Stats()
	if st.FramesIn != uint64(2*len(want)) || st.BytesIn != 2*uint64(len(stream)-4*len(want)) {
		t.Errorf("stats in: %d frames %d bytes", st.FramesIn, st.BytesIn)
	}

	for i, b := range want {
		send(t, p, b)
		if g := readWire(t, q); !bytes.Equal(g, b) {
			t.Fatalf("frame %d to the peer: got %d bytes, want %d", i, len(g), len(b))
		}
	}
	waitFor(t, "frames counted out", func() bool { return p.Stats().FramesOut == uint64(len(want)) })
}

// TestRefusedFramesKeepStep: a frame longer than the MTU but within
// QEMU's limit, and one shorter than an Ethernet header, are counted and
// skipped and the next frame arrives; a prefix beyond QEMU's limit is a
// protocol error that ends the connection.
func TestRefusedFramesKeepStep(t *testing.T) {
	col := newCollector()
	p, l := startPort(t, Config{MTU: 1000}, col.handle)
	q := l.dial(t)
	good := frame(macB, macA, 7, 100)
	var s []byte
	s = append(s, wire(frame(macB, macA, 1, 1001))...) // payload one above the MTU
	s = append(s, wire(make([]byte, 10))...)           // too short
	s = append(s, wire(frame(macB, macA, 2, 9000))...) // beyond the frame buffer the MTU needs
	s = append(s, wire(good)...)
	if _, err := q.Write(s); err != nil {
		t.Fatal(err)
	}
	if got := col.wait(t, 1); !bytes.Equal(got[0], good) {
		t.Fatalf("after the refused frames got %x", got[0][:20])
	}
	st := p.Stats()
	if st.InRefused[frameport.CauseTooLong] != 2 || st.InRefused[frameport.CauseTooShort] != 1 || st.FramesIn != 1 {
		t.Errorf("refused %v, in %d", st.InRefused, st.FramesIn)
	}

	// Not QEMU's framing: a prefix beyond NET_BUFSIZE.
	if _, err := q.Write(binary.BigEndian.AppendUint32(nil, MaxWireLen+1)); err != nil {
		t.Fatal(err)
	}
	q.SetReadDeadline(time.Now().Add(hangLimit))
	if n, err := q.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after a bad prefix the peer read %d bytes, %v; want the connection closed (EOF)", n, err)
	}
	waitFor(t, "peer detached", func() bool { return !p.Connected() })
	if st := p.Stats(); st.ReadErrors != 1 {
		t.Errorf("read errors %d, want 1", st.ReadErrors)
	}
}

// TestPeerDisconnectAndReattach: a peer that leaves mid-frame costs that
// frame (a read error); a peer that connects while another is attached
// waits and takes over when it leaves (a restarted QEMU connecting
// before the old one's end was read); frames sent with no peer are
// refused as no_peer; the next peer after a disconnect gets the
// traffic (a restarted guest).
func TestPeerDisconnectAndReattach(t *testing.T) {
	col := newCollector()
	p, l := startPort(t, Config{}, col.handle)
	q1 := l.dial(t)
	waitFor(t, "first peer attached", p.Connected)
	next := l.dial(t)
	waitFor(t, "second peer waiting", func() bool { _, w := p.Peers(); return w == 1 })

	whole := frame(macB, macA, 1, 200)
	cut := wire(frame(macB, macA, 2, 200))
	if _, err := q1.Write(append(wire(whole), cut[:50]...)); err != nil {
		t.Fatal(err)
	}
	col.wait(t, 1)
	q1.Close()
	waitFor(t, "waiting peer attached", func() bool { a, _ := p.Peers(); return a == 2 })
	if st := p.Stats(); st.ReadErrors != 1 || st.FramesIn != 1 {
		t.Errorf("after a frame cut short: read errors %d frames in %d, want 1 and 1", st.ReadErrors, st.FramesIn)
	}
	b0 := frame(macA, macB, 9, 90)
	send(t, p, b0)
	if g := readWire(t, next); !bytes.Equal(g, b0) {
		t.Fatal("the peer that waited got a different frame")
	}
	next.Close()
	waitFor(t, "peer detached", func() bool { return !p.Connected() })

	send(t, p, frame(macA, macB, 3, 100))
	waitFor(t, "frame refused without a peer", func() bool { return p.Stats().OutRefused[frameport.CauseNoPeer] == 1 })

	q2 := l.dial(t)
	waitFor(t, "second peer attached", p.Connected)
	b := frame(macA, macB, 4, 300)
	send(t, p, b)
	if g := readWire(t, q2); !bytes.Equal(g, b) {
		t.Fatal("the reattached peer got a different frame")
	}
	in := frame(macB, macA, 5, 64)
	if _, err := q2.Write(wire(in)); err != nil {
		t.Fatal(err)
	}
	if got := col.wait(t, 1); !bytes.Equal(got[1], in) {
		t.Fatal("the reattached peer's frame differs")
	}
	if a, w := p.Peers(); a != 3 || w != 1 {
		t.Errorf("peers attached %d waited %d, want 3 and 1", a, w)
	}
}

// TestBackpressureBothWays: a consumer that blocks stops the reader (the
// peer's writes then block: nothing is dropped), and a peer that does
// not read stalls the writer until its queue is full; a consumer that
// waits for room (OnWriteRoom) loses nothing, and every frame arrives in
// order once the peer reads.
func TestBackpressureBothWays(t *testing.T) {
	col := newCollector()
	col.block = make(chan struct{})
	const queue = 8
	p, l := startPort(t, Config{TxQueueLen: queue}, col.handle)
	q := l.dial(t)
	waitFor(t, "peer attached", p.Connected)

	// Inbound: the handler blocks, so the peer's writes fill the socket
	// and then block; a write deadline shows they block, not fail.
	big := wire(frame(macB, macA, 0, 1500))
	q.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	sent := 0
	for {
		if _, err := q.Write(big); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
		sent++
	}
	q.SetWriteDeadline(time.Time{})
	if sent < 2 {
		t.Fatalf("only %d frames fit before the writes blocked", sent)
	}
	close(col.block)
	col.wait(t, sent)
	if st := p.Stats(); st.InRefused != [frameport.NumCauses]uint64{} {
		t.Errorf("inbound refusals %v, want none", st.InRefused)
	}

	// Outbound: nobody reads at the peer. Send while there is room;
	// when there is none, wait for the writer's call.
	room := make(chan struct{}, 1)
	p.OnWriteRoom(func() {
		select {
		case room <- struct{}{}:
		default:
		}
	})
	const total = 4000 // far beyond the socket buffer and the queue
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < total; i++ {
			for p.WriteRoom() == 0 {
				<-room
			}
			f := p.NewFrame()
			f.Data = append(f.Data, frame(macA, macB, uint32(i), 1400)...)
			if err := p.Send(f); err != nil {
				t.Errorf("frame %d: %v", i, err)
				return
			}
		}
	}()
	waitFor(t, "writer queue full", func() bool { return p.WriteRoom() == 0 })
	for i := 0; i < total; i++ {
		g := readWire(t, q)
		if s := binary.BigEndian.Uint32(g[ether.HeaderLen:]); s != uint32(i) || len(g) != ether.HeaderLen+1400 {
			t.Fatalf("frame %d: got seq %d, %d bytes", i, s, len(g))
		}
	}
	<-done
	// The writer counts a frame once its write returned, which may be
	// just after the peer read it.
	waitFor(t, "the last write counted", func() bool { return p.Stats().FramesOut >= total })
	if st := p.Stats(); st.OutRefused != [frameport.NumCauses]uint64{} || st.FramesOut != total {
		t.Errorf("out: %d frames, refused %v", st.FramesOut, st.OutRefused)
	}
	// A full queue refuses, counted: the contract's Send never blocks.
	q.Close()
	waitFor(t, "peer detached", func() bool { return !p.Connected() })
}

// TestSendRefusals: Send refuses frames the MTU does not allow and
// refuses everything once closed, counting each.
func TestSendRefusals(t *testing.T) {
	p, _ := startPort(t, Config{MTU: 500}, newCollector().handle)
	f := p.NewFrame()
	f.Data = append(f.Data, frame(macA, macB, 0, 501)...)
	if err := p.Send(f); !errors.Is(err, ether.ErrTooLong) {
		t.Errorf("too long: %v", err)
	}
	f = p.NewFrame()
	f.Data = append(f.Data, 1, 2, 3)
	if err := p.Send(f); !errors.Is(err, ether.ErrTooShort) {
		t.Errorf("too short: %v", err)
	}
	p.Close()
	f = p.NewFrame()
	f.Data = append(f.Data, frame(macA, macB, 0, 100)...)
	if err := p.Send(f); !errors.Is(err, frameport.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	st := p.Stats()
	if st.OutRefused[frameport.CauseTooLong] != 1 || st.OutRefused[frameport.CauseTooShort] != 1 || st.OutRefused[frameport.CauseClosed] != 1 {
		t.Errorf("refused %v", st.OutRefused)
	}
	if err := p.StartFunc(newCollector().handle); !errors.Is(err, frameport.ErrStarted) {
		t.Errorf("StartFunc again: %v", err)
	}
}

// superFrameV4 is an IPv4 TCP super-frame of payload bytes with its
// virtio_net_hdr (segments of mss payload bytes, checksum to complete).
func superFrameV4(payload, mss int) ([]byte, vnet.Header) {
	b := make([]byte, 14+20+20+payload)
	copy(b, macB[:])
	copy(b[6:], macA[:])
	b[12], b[13] = 0x08, 0x00
	ip := b[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(40+payload))
	ip[8], ip[9] = 64, 6
	copy(ip[12:], []byte{10, 250, 0, 1, 10, 250, 0, 2})
	tcp := ip[20:]
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 5201)
	tcp[12] = 5 << 4
	tcp[13] = 0x10
	for i := range payload {
		tcp[20+i] = byte(i * 7)
	}
	return b, vnet.Header{Flags: vnet.FlagNeedsCsum, GSOType: vnet.GSOTCPv4, HdrLen: 54, GSOSize: uint16(mss),
		CsumStart: 34, CsumOffset: 16}
}

// TestSuperFrameSegmented: a TCP super-frame from a TAP with offloads
// reaches the guest as MTU-sized segments carrying its payload in order
// (the checksums are emu/vnet's and tested there).
func TestSuperFrameSegmented(t *testing.T) {
	p, l := startPort(t, Config{}, newCollector().handle)
	q := l.dial(t)
	waitFor(t, "peer attached", p.Connected)
	const payload, mss = 20000, 1448
	b, h := superFrameV4(payload, mss)
	f := p.NewFrame()
	f.Data = append(f.Data, b...)
	f.Offload = h
	if err := p.Send(f); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for n := 0; len(got) < payload; n++ {
		seg := readWire(t, q)
		if len(seg) > ether.MaxFrameLen(DefaultMTU) {
			t.Fatalf("segment %d: %d bytes, beyond the MTU", n, len(seg))
		}
		got = append(got, seg[54:]...)
	}
	if !bytes.Equal(got, b[54:]) {
		t.Fatal("the segments' payload differs from the super-frame's")
	}
	waitFor(t, "counted out", func() bool { return p.Stats().FramesOut == 1 })
}

// TestCloseUnblocksStalledWriter: Close with a peer that does not read
// gives up after the drain timeout instead of hanging.
func TestCloseUnblocksStalledWriter(t *testing.T) {
	l := newPairListener()
	p, err := newPort(Config{Name: "vm0", Addr: "/x.sock", DrainTimeout: 50 * time.Millisecond}, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.StartFunc(newCollector().handle); err != nil {
		t.Fatal(err)
	}
	_ = l.dial(t)
	waitFor(t, "peer attached", p.Connected)
	for i := 0; i < 2000 && p.WriteRoom() > 0; i++ {
		send(t, p, frame(macA, macB, uint32(i), 1400))
	}
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatal("Close hung on a peer that does not read")
	}
	st := p.Stats()
	if st.FramesOut+st.OutRefused[frameport.CauseWriteError]+st.OutRefused[frameport.CauseNoPeer]+st.OutRefused[frameport.CauseClosed] == 0 {
		t.Error("no frame accounted for")
	}
	if n := p.Held(); n != 0 {
		t.Errorf("%d frames not released", n)
	}
}

// TestCheck: bad configurations are refused with the reason.
func TestCheck(t *testing.T) {
	long := "/" + strings.Repeat("a", MaxUnixPath)
	for _, c := range []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{Name: "vm0", Addr: "/run/fabemu/vm0.sock"}, ""},
		{Config{Name: "vm0", Addr: "127.0.0.1:5600", MTU: 9000}, ""},
		{Config{Name: "vm0", Addr: "[::1]:5600"}, ""},
		{Config{Name: "", Addr: "/a.sock"}, "name is empty"},
		{Config{Name: "vm0"}, "socket is empty"},
		{Config{Name: "vm0", Addr: "vm0.sock"}, "absolute unix socket path"},
		{Config{Name: "vm0", Addr: long}, "at most 107 bytes"},
		{Config{Name: "vm0", Addr: "/run/../x.sock"}, "clean path"},
		{Config{Name: "vm0", Addr: "localhost:5600"}, "not an IP address"},
		{Config{Name: "vm0", Addr: "127.0.0.1:0"}, "want 1..65535"},
		{Config{Name: "vm0", Addr: "127.0.0.1:x"}, "want 1..65535"},
		{Config{Name: "vm0", Addr: "/a.sock", MTU: 67}, "mtu 67"},
		{Config{Name: "vm0", Addr: "/a.sock", MTU: 65522}, "mtu 65522"},
		{Config{Name: "vm0", Addr: "/a.sock", MAC: ether.MAC{1, 0, 0, 0, 0, 1}}, "multicast"},
		{Config{Name: "vm0", Addr: "/a.sock", TxQueueLen: -1}, "negative"},
	} {
		err := c.cfg.Check()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q mtu %d: got %v, want an error with %q", c.cfg.Addr, c.cfg.MTU, err, c.want)
		}
	}
}

// TestListenUnix: Listen makes the directory and a 0600 socket, reclaims
// a stale socket file, refuses one a live port listens on and a path that
// is not a socket; Close removes the file; a TCP port works as well.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "vm0.sock")
	p, err := Listen(Config{Name: "vm0", Addr: path})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket file: %v %v", st.Mode(), err)
	}
	col := newCollector()
	if err := p.StartFunc(col.handle); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(Config{Name: "vm1", Addr: path}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("second port on a live socket: %v", err)
	}
	// Its probe attached and left.
	waitFor(t, "probe detached", func() bool { a, _ := p.Peers(); return a == 1 && !p.Connected() })
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	b := frame(macB, macA, 1, 64)
	if _, err := c.Write(wire(b)); err != nil {
		t.Fatal(err)
	}
	if got := col.wait(t, 1); !bytes.Equal(got[0], b) {
		t.Error("frame over the unix socket differs")
	}
	c.Close()
	p.Close()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("socket file after Close: %v", err)
	}

	// A stale socket file (its listener gone without unlinking) is
	// reclaimed.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	p, err = Listen(Config{Name: "vm0", Addr: path})
	if err != nil {
		t.Fatalf("stale socket not reclaimed: %v", err)
	}
	p.Close()

	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(Config{Name: "vm0", Addr: file}); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("plain file: %v", err)
	}

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	tp, err := Listen(Config{Name: "vm0", Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	if tp.Addr() != addr {
		t.Errorf("TCP port listens on %s", tp.Addr())
	}
	tp.Close()
}

// FuzzStream feeds arbitrary bytes to the port as a peer's stream: it
// never panics or hangs, every frame it hands over is valid for the MTU
// and was framed as the stream says, and each complete length-prefixed
// record up to the first protocol error is accounted for exactly once.
func FuzzStream(f *testing.F) {
	f.Add(wire(frame(macB, macA, 1, 46)))
	f.Add(append(wire(make([]byte, 3)), wire(frame(macB, macA, 2, 1501))...))
	f.Add(binary.BigEndian.AppendUint32(nil, MaxWireLen+1))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, stream []byte) {
		// What the port should make of the stream, parsed independently.
		var want [][]byte
		records := 0
		for b := stream; len(b) >= 4; {
			n := int(binary.BigEndian.Uint32(b))
			if n > MaxWireLen || len(b)-4 < n {
				break
			}
			records++
			if _, err := ether.Validate(b[4:4+n], DefaultMTU); err == nil {
				want = append(want, b[4:4+n])
			}
			b = b[4+n:]
		}
		col := newCollector()
		p, l := startPort(t, Config{}, col.handle)
		q := l.dial(t)
		if _, err := q.Write(stream); err != nil {
			t.Fatal(err)
		}
		q.Close()
		got := col.wait(t, len(want))
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d differs", i)
			}
		}
		waitFor(t, "peer detached", func() bool { a, _ := p.Peers(); return a == 1 && !p.Connected() })
		st := p.Stats()
		var refused uint64
		for _, n := range st.InRefused {
			refused += n
		}
		if st.FramesIn != uint64(len(want)) || st.FramesIn+refused != uint64(records) {
			t.Fatalf("in %d refused %d, want %d of %d records", st.FramesIn, refused, len(want), records)
		}
	})
}
