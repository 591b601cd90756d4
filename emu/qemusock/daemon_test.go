package qemusock_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"go.uber.org/zap/zaptest"
)

// fakeQEMU is a test's stand-in for QEMU on a qemu-socket port.
type fakeQEMU struct {
	t *testing.T
	c net.Conn
}

func dialQEMU(t *testing.T, path string) *fakeQEMU {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fakeQEMU{t, c}
}

func (q *fakeQEMU) send(b []byte) {
	q.t.Helper()
	if _, err := q.c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
		q.t.Fatal(err)
	}
}

// recv reads one frame; the deadline only turns a lost frame into a
// failure instead of a hang.
func (q *fakeQEMU) recv() []byte {
	q.t.Helper()
	q.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var pre [4]byte
	if _, err := io.ReadFull(q.c, pre[:]); err != nil {
		q.t.Fatalf("no frame: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(pre[:]))
	if _, err := io.ReadFull(q.c, b); err != nil {
		q.t.Fatal(err)
	}
	return b
}

// waitPeers waits until both ports have a VM attached, a's the
// attachments-th since the start and b's the bth; the deadline only turns
// a lost attachment into a failure instead of a hang.
func waitPeers(t *testing.T, e *emu.Emulator, a, b uint64) {
	t.Helper()
	want := []uint64{a, b}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		st, err := e.Status()
		if err != nil {
			t.Fatal(err)
		}
		ok := true
		for i, h := range st.Hosts {
			if h.Peer == nil {
				t.Fatalf("%s: no peer status on a qemu-socket port", h.TAP)
			}
			ok = ok && h.Peer.Attached && h.Peer.Attachments == want[i]
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("VMs not attached after 20 s: %+v, %+v", st.Hosts[0].Peer, st.Hosts[1].Peer)
		}
	}
}

func ethFrame(dst, src ether.MAC, seq uint32, n int) []byte {
	b := make([]byte, ether.HeaderLen+n)
	copy(b, dst[:])
	copy(b[6:], src[:])
	binary.BigEndian.PutUint16(b[12:], 0x88b5)
	binary.BigEndian.PutUint32(b[ether.HeaderLen:], seq)
	for i := ether.HeaderLen + 4; i < len(b); i++ {
		b[i] = byte(i*3 + int(seq))
	}
	return b
}

// TestDaemonFakeGuests runs the daemon with two qemu-socket ports and no
// TAP, which needs no privileges, and a fake QEMU on each: a broadcast
// reaches the other guest (its MAC is learnt from it), unicast to the
// configured and to the learnt MAC crosses the fabric intact and in
// order, a guest that restarts (disconnects, reconnects) gets the traffic
// again, the status counts every frame with none refused after the
// guests attached, and Close removes the sockets.
func TestDaemonFakeGuests(t *testing.T) {
	dir := t.TempDir()
	sa, sb := filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")
	c := emu.DefaultRunConfig()
	c.Model.Preset = "tap-square-10g"
	c.Model.Delivery = "adaptive-inorder"
	c.API.Socket = ""
	c.Metrics.Enabled = false
	h0, h1 := 0, 3
	macA := ether.MAC{0x52, 0x54, 0, 0, 0, 0x0a}
	macB := ether.MAC{0x52, 0x54, 0, 0, 0, 0x0b}
	c.TAPs = []emu.TAPConfig{
		{Name: "vma", Kind: emu.KindQEMUSocket, Socket: sa, Host: &h0, MAC: macA.String()},
		{Name: "vmb", Kind: emu.KindQEMUSocket, Socket: sb, Host: &h1},
	}
	e, err := emu.New(c, zaptest.NewLogger(t).Named("emu"))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	closeEmu := func() {
		if closed {
			return
		}
		closed = true
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(closeEmu)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	qa, qb := dialQEMU(t, sa), dialQEMU(t, sb)
	// A dial returns once the kernel queued the connection, before the
	// daemon accepted it; a frame for a port with no VM attached yet is
	// refused (as a NIC without a link drops it), so wait for both.
	waitPeers(t, e, 1, 1)

	// b announces itself; a knows its own MAC from the configuration.
	hello := ethFrame(ether.BroadcastMAC, macB, 0, 46)
	qb.send(hello)
	if g := qa.recv(); !bytes.Equal(g, hello) {
		t.Fatal("broadcast from b arrived changed")
	}
	const n = 300
	for i := 0; i < n; i++ {
		qa.send(ethFrame(macB, macA, uint32(i), 46+i*4))
	}
	for i := 0; i < n; i++ {
		if g, w := qb.recv(), ethFrame(macB, macA, uint32(i), 46+i*4); !bytes.Equal(g, w) {
			t.Fatalf("a>b frame %d: got seq %d, %d bytes; want %d bytes", i, binary.BigEndian.Uint32(g[ether.HeaderLen:]), len(g), len(w))
		}
	}
	reply := ethFrame(macA, macB, 1, 1500)
	qb.send(reply)
	if g := qa.recv(); !bytes.Equal(g, reply) {
		t.Fatal("unicast b>a arrived changed")
	}

	// b's guest restarts: its QEMU goes away and a new one connects.
	qb.c.Close()
	qb2 := dialQEMU(t, sb)
	waitPeers(t, e, 1, 2)
	qb2.send(hello) // the restarted guest announces itself again
	if g := qa.recv(); !bytes.Equal(g, hello) {
		t.Fatal("broadcast from the restarted guest arrived changed")
	}
	again := ethFrame(macB, macA, n, 200)
	qa.send(again)
	if g := qb2.recv(); !bytes.Equal(g, again) {
		t.Fatal("a>b after the restart arrived changed")
	}

	// The writer counts a frame once its write returned, which may be
	// just after the fake QEMU read it.
	var st *emu.Status
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if st, err = e.Status(); err != nil {
			t.Fatal(err)
		}
		if (st.Hosts[1].FramesOut == n+1 && st.Hosts[0].FramesOut == 3) || time.Now().After(deadline) {
			break
		}
	}
	for _, hs := range st.Hosts {
		for cause, k := range hs.InRefused {
			if k != 0 {
				t.Errorf("%s: %d refused in (%s)", hs.TAP, k, cause)
			}
		}
		for cause, k := range hs.OutRefused {
			if k != 0 {
				t.Errorf("%s: %d refused out (%s)", hs.TAP, k, cause)
			}
		}
	}
	a, b := st.Hosts[0], st.Hosts[1]
	if a.FramesIn != n+1 || b.FramesOut != n+1 || b.FramesIn != 3 || a.FramesOut != 3 || a.UnknownUnicast != 0 {
		t.Errorf("a in %d out %d, b in %d out %d, unknown unicast %d; want a %d/3, b 3/%d, none unknown",
			a.FramesIn, a.FramesOut, b.FramesIn, b.FramesOut, a.UnknownUnicast, n+1, n+1)
	}
	if a.MAC != macA.String() || b.MAC != macB.String() {
		t.Errorf("MACs in the status: a %s, b %s; want the configured %s and the learnt %s", a.MAC, b.MAC, macA, macB)
	}
	closeEmu()
	for _, s := range []string{sa, sb} {
		if _, err := os.Lstat(s); !os.IsNotExist(err) {
			t.Errorf("socket %s left after Close: %v", s, err)
		}
	}
}
