package porttest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/tracefmt/ether"
)

var (
	macA = ether.MAC{0x02, 0, 0, 0, 0, 0x0a}
	macB = ether.MAC{0x02, 0, 0, 0, 0, 0x0b}
)

// frame returns an Ethernet frame dst<-src with a payload of n bytes
// whose first four carry seq.
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

func closePort(t *testing.T, p *Port) {
	t.Helper()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// A frame injected at the peer reaches the handler validated and parsed;
// a frame sent comes out at the peer byte-identical, in Send order.
func TestRoundTripInOrder(t *testing.T) {
	p, q := New(Config{Name: "a", MAC: macA})
	got := make(chan *frameport.Frame, 100)
	if err := p.StartFunc(func(f *frameport.Frame) bool { got <- f; return true }); err != nil {
		t.Fatal(err)
	}
	if err := p.StartFunc(func(*frameport.Frame) bool { return true }); !errors.Is(err, frameport.ErrStarted) {
		t.Fatalf("second StartFunc: %v, want ErrStarted", err)
	}
	for i := range 50 {
		if err := q.Inject(frame(macA, macB, uint32(i), 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		f := <-got
		if want := frame(macA, macB, uint32(i), 100+i); !bytes.Equal(f.Data, want) {
			t.Fatalf("frame %d differs", i)
		}
		if f.Header.Src != macB || f.Header.Dst != macA || f.Port != p || f.At.IsZero() {
			t.Fatalf("frame %d: header %+v port %v at %v", i, f.Header, f.Port, f.At)
		}
		// Echo it back through the writer, as the daemon forwards it.
		nf := p.NewFrame()
		nf.Data = append(nf.Data, f.Data...)
		nf.At = time.Now()
		f.Release()
		if err := p.Send(nf); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		b, err := q.Recv(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if binary.BigEndian.Uint32(b[ether.HeaderLen:]) != uint32(i) {
			t.Fatalf("received frame %d out of order", i)
		}
	}
	closePort(t, p)
	s := p.Stats()
	if s.FramesIn != 50 || s.FramesOut != 50 || s.BytesIn != s.BytesOut {
		t.Errorf("stats %+v", s)
	}
	if wt := p.WriteTiming(); wt.Queue.Count() != 50 || wt.Write.Count() != 50 {
		t.Errorf("write timing counts %d, %d; want 50", wt.Queue.Count(), wt.Write.Count())
	}
	if h := p.Held(); h != 0 {
		t.Errorf("%d frames still held after close", h)
	}
}

// Frames invalid for the MTU are refused and counted on both sides.
func TestMTURefusals(t *testing.T) {
	p, q := New(Config{Name: "a", MTU: 200})
	got := make(chan *frameport.Frame, 10)
	if err := p.StartFunc(func(f *frameport.Frame) bool { got <- f; return true }); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{
		frame(macA, macB, 1, 201),  // payload one byte over the MTU
		frame(macA, macB, 2, 5000), // longer than the read buffer
		make([]byte, 10),           // shorter than a header
		frame(macA, macB, 3, 200),  // the largest valid frame
	} {
		if err := q.Inject(b); err != nil {
			t.Fatal(err)
		}
	}
	f := <-got
	if binary.BigEndian.Uint32(f.Data[ether.HeaderLen:]) != 3 {
		t.Fatalf("got the wrong frame")
	}
	f.Release()
	for _, tc := range []struct {
		b    []byte
		want error
	}{{frame(macA, macB, 4, 201), ether.ErrTooLong}, {make([]byte, 13), ether.ErrTooShort}} {
		nf := p.NewFrame()
		nf.Data = append(nf.Data, tc.b...)
		if err := p.Send(nf); !errors.Is(err, tc.want) {
			t.Errorf("Send: %v, want %v", err, tc.want)
		}
	}
	closePort(t, p)
	s := p.Stats()
	if s.InRefused[frameport.CauseTooLong] != 2 || s.InRefused[frameport.CauseTooShort] != 1 || s.FramesIn != 1 {
		t.Errorf("in: %+v", s)
	}
	if s.OutRefused[frameport.CauseTooLong] != 1 || s.OutRefused[frameport.CauseTooShort] != 1 || s.FramesOut != 0 {
		t.Errorf("out: %+v", s)
	}
	if h := p.Held(); h != 0 {
		t.Errorf("%d frames still held", h)
	}
}

// While the handler blocks the reader reads nothing more: the inbound
// queue fills, Inject waits, TryInject refuses with a count; once the
// handler goes on, every injected frame arrives, none lost.
func TestBackpressureByNotReading(t *testing.T) {
	const qlen = 8
	p, q := New(Config{Name: "a", InQueueLen: qlen})
	gate := make(chan struct{})
	var mu sync.Mutex
	var seqs []uint32
	if err := p.StartFunc(func(f *frameport.Frame) bool {
		<-gate
		mu.Lock()
		seqs = append(seqs, binary.BigEndian.Uint32(f.Data[ether.HeaderLen:]))
		mu.Unlock()
		f.Release()
		return true
	}); err != nil {
		t.Fatal(err)
	}
	// One frame is taken by the reader (blocked in the handler), qlen
	// fill the queue.
	for i := range qlen + 1 {
		if err := q.Inject(frame(macA, macB, uint32(i), 60)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for q.Queued() != qlen && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if q.Queued() != qlen {
		t.Fatalf("queued %d, want %d", q.Queued(), qlen)
	}
	if err := q.TryInject(frame(macA, macB, 999, 60)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("TryInject on a full queue: %v", err)
	}
	const total = 40
	injected := make(chan error, 1)
	go func() {
		for i := qlen + 1; i < total; i++ {
			if err := q.Inject(frame(macA, macB, uint32(i), 60)); err != nil {
				injected <- err
				return
			}
		}
		injected <- nil
	}()
	time.Sleep(10 * time.Millisecond)
	close(gate)
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for p.Stats().FramesIn != total && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	closePort(t, p)
	s, ps := p.Stats(), q.Stats()
	if s.FramesIn != total || ps.Injected != total || ps.InjectRefused != 1 || ps.InjectWaits == 0 || ps.Discarded != 0 {
		t.Fatalf("port %+v peer %+v", s, ps)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, v := range seqs {
		if v != uint32(i) {
			t.Fatalf("frame %d arrived as %d", v, i)
		}
	}
}

// A held writer lets its queue fill; Send then refuses with queue_full,
// counted, without blocking. Close lets the writer drain what was queued.
func TestWriterQueueFull(t *testing.T) {
	const txq = 4
	p, q := New(Config{Name: "a", TxQueueLen: txq})
	if err := p.StartFunc(func(f *frameport.Frame) bool { f.Release(); return true }); err != nil {
		t.Fatal(err)
	}
	q.HoldWriter()
	send := func(seq uint32) error {
		f := p.NewFrame()
		f.Data = append(f.Data, frame(macB, macA, seq, 60)...)
		return p.Send(f)
	}
	// The writer takes one frame and waits on it; txq more fill the queue.
	var ok, full int
	for i := range 20 {
		switch err := send(uint32(i)); {
		case err == nil:
			ok++
		case errors.Is(err, frameport.ErrQueueFull):
			full++
		default:
			t.Fatal(err)
		}
		if i == 0 {
			for len(p.txq) != 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	if ok != txq+1 || full != 20-txq-1 {
		t.Fatalf("accepted %d, refused %d; want %d and %d", ok, full, txq+1, 20-txq-1)
	}
	closePort(t, p) // lets the held writer drain
	if err := send(99); !errors.Is(err, frameport.ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	s := p.Stats()
	if s.FramesOut != txq+1 || s.OutRefused[frameport.CauseQueueFull] != uint64(full) || s.OutRefused[frameport.CauseClosed] != 1 {
		t.Fatalf("stats %+v", s)
	}
	if q.Pending() != txq+1 {
		t.Fatalf("peer has %d frames, want %d", q.Pending(), txq+1)
	}
	if h := p.Held(); h != 0 {
		t.Errorf("%d frames still held", h)
	}
}

// Close stops a reader whose handler refuses, counts frames the port
// never read as discarded, and refuses further injection; a port closed
// before it started refuses what was queued.
func TestClose(t *testing.T) {
	p, q := New(Config{Name: "a", InQueueLen: 4})
	stop := make(chan struct{})
	if err := p.StartFunc(func(f *frameport.Frame) bool {
		<-stop
		return false // the consumer is shutting down
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := q.Inject(frame(macA, macB, uint32(i), 60)); err != nil {
			t.Fatal(err)
		}
	}
	closed := make(chan struct{})
	go func() { closePort(t, p); close(closed) }()
	// An Inject blocked on the full queue returns once the port closes.
	blocked := make(chan error, 1)
	go func() { blocked <- q.Inject(frame(macA, macB, 5, 60)) }()
	time.Sleep(10 * time.Millisecond)
	close(stop)
	<-closed
	if err := <-blocked; err != nil && !errors.Is(err, frameport.ErrClosed) {
		t.Fatalf("blocked Inject: %v", err)
	}
	if err := q.Inject(frame(macA, macB, 6, 60)); !errors.Is(err, frameport.ErrClosed) {
		t.Fatalf("Inject after Close: %v", err)
	}
	if err := q.TryInject(frame(macA, macB, 6, 60)); !errors.Is(err, frameport.ErrClosed) {
		t.Fatalf("TryInject after Close: %v", err)
	}
	s, ps := p.Stats(), q.Stats()
	// One frame refused by the handler; every other injected one discarded.
	if s.FramesIn != 0 || s.InRefused[frameport.CauseClosed] != 1 || ps.Discarded != ps.Injected-1 {
		t.Fatalf("port %+v peer %+v", s, ps)
	}
	if h := p.Held(); h != 0 {
		t.Errorf("%d frames still held", h)
	}

	p2, _ := New(Config{Name: "b"})
	f := p2.NewFrame()
	f.Data = append(f.Data, frame(macA, macB, 0, 60)...)
	if err := p2.Send(f); err != nil {
		t.Fatal(err)
	}
	closePort(t, p2)
	if err := p2.StartFunc(func(*frameport.Frame) bool { return true }); !errors.Is(err, frameport.ErrStarted) {
		t.Fatalf("StartFunc after Close: %v", err)
	}
	if s := p2.Stats(); s.OutRefused[frameport.CauseClosed] != 1 || p2.Held() != 0 {
		t.Fatalf("stats %+v, held %d", s, p2.Held())
	}
}

func TestRecvTimeout(t *testing.T) {
	p, q := New(Config{Name: "a"})
	defer p.Close()
	if _, err := q.Recv(5 * time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Recv on an idle port: %v", err)
	}
}
