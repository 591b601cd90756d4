package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
)

// TestDaemonBackgroundCapture runs fabemu run with background.capture on
// one end of a veth pair between two namespaces, sends a known UDP burst
// across it, and reads the accounting back with fabemu stat: every frame
// sent was captured or counted as a ring drop, and every captured frame
// crossed the fabric as a background message. SIGTERM then detaches the
// program (no tcx program is left on the device) and the daemon exits 0
// within the drain deadline and a second.
func TestDaemonBackgroundCapture(t *testing.T) {
	privtest.Require(t, "TAP devices, network namespaces and eBPF")
	bin := buildBinary(t)
	dir := t.TempDir()
	// No IPv6 and static neighbours: only the burst crosses the veth.
	nsA, nsB, devA, devB := vethBetweenNamespaces(t, "fc", "fcv")
	id := fmt.Sprint(os.Getpid() % 100000)
	sh := func(args ...string) { t.Helper(); runOrFail(t, args...) }
	ipA, ipB := netip.MustParseAddr("10.248.0.1"), netip.MustParseAddr("10.248.0.2")
	for _, e := range []struct{ ns, dev, mac, ip, peerIP, peerMAC string }{
		{nsA, devA, "02:fd:00:00:00:01", ipA.String(), ipB.String(), "02:fd:00:00:00:02"},
		{nsB, devB, "02:fd:00:00:00:02", ipB.String(), ipA.String(), "02:fd:00:00:00:01"},
	} {
		sh("ip", "-n", e.ns, "link", "set", e.dev, "address", e.mac)
		sh("ip", "-n", e.ns, "addr", "add", e.ip+"/24", "dev", e.dev)
		sh("ip", "-n", e.ns, "link", "set", e.dev, "up")
		sh("ip", "-n", e.ns, "neigh", "replace", e.peerIP, "lladdr", e.peerMAC, "dev", e.dev, "nud", "permanent")
	}

	sock := filepath.Join(dir, "api.sock")
	var b strings.Builder
	fmt.Fprintf(&b, "model: {preset: tap-square-10g}\napi: {socket: %s}\nmetrics: {enabled: false}\ndrain_timeout: 500ms\n", sock)
	fmt.Fprintf(&b, "background: {capture: %s, capture_netns: %s}\ntaps:\n", devA, nsA)
	var tapNS []string
	for i := 0; i < 2; i++ {
		ns := fmt.Sprintf("fc-%s-h%d", id, i)
		tapNS = append(tapNS, ns)
		fmt.Fprintf(&b, "  - {name: fct%s%d, netns: %s, own_netns: true, addrs: [10.248.1.%d/24]}\n", id, i, ns, i+1)
	}
	cleanupNamespaces(t, tapNS)
	cfg := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, bin, cfg, sock)
	pingOnce(t, tapNS[0], "10.248.1.2") // the TAPs work beside the capture

	const sent = 2000
	var sink *net.UDPConn
	if err := netnsutil.Do(nsB, func() (err error) {
		sink, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ipB, 9000)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, err := sink.Read(buf); err != nil {
				return
			}
		}
	}()
	if err := netnsutil.Do(nsA, func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ipB, 9000)))
		if err != nil {
			return err
		}
		defer c.Close()
		msg := make([]byte, 300)
		for range sent {
			if _, err := c.Write(msg); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	var st emu.Status
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(bin, "stat", "--socket", sock, "--json").Output()
		if err != nil {
			t.Fatalf("fabemu stat: %v", err)
		}
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatal(err)
		}
		c := st.BackgroundCapture
		if c != nil && c.Read == c.Captured && c.Fabric.Frames == c.Submitted && c.Fabric.Outstanding == 0 && c.Matched >= sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("capture did not settle: %+v", c)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c := st.BackgroundCapture
	h, err := netnsutil.Handle(nsA)
	if err != nil {
		t.Fatal(err)
	}
	l, err := h.LinkByName(devA)
	h.Close()
	if err != nil {
		t.Fatal(err)
	}
	ls := l.Attrs().Statistics
	t.Logf("sent %d datagrams; device tx %d rx %d; capture %+v", sent, ls.TxPackets, ls.RxPackets, *c)
	if ls.TxPackets != sent || ls.RxPackets != 0 {
		t.Errorf("device sent %d frames and received %d, the test sent %d", ls.TxPackets, ls.RxPackets, sent)
	}
	if dev := ls.TxPackets + ls.RxPackets; c.Matched != dev || c.Matched != c.Captured+c.Dropped {
		t.Errorf("matched %d = captured %d + ring dropped %d; the device counted %d", c.Matched, c.Captured, c.Dropped, dev)
	}
	if f := c.Fabric; c.Submitted != c.Captured || f.Sent != c.Captured || f.Frames != f.Sent || f.Delivered != f.Copies || f.Bytes != f.Sent*(14+20+8+300) {
		t.Errorf("submitted %d of %d captured; fabric %+v", c.Submitted, c.Captured, f)
	}
	text, err := exec.Command(bin, "stat", "--socket", sock).Output()
	if err != nil || !strings.Contains(string(text), "background capture "+devA+" (") {
		t.Errorf("fabemu stat: %v\n%s", err, text)
	}

	t0 := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.stderr)
		}
	case <-time.After(1500 * time.Millisecond):
		t.Fatalf("still running 1.5 s (drain_timeout 500ms + 1 s) after SIGTERM\n%s", d.stderr)
	}
	t.Logf("exit %v after SIGTERM", time.Since(t0).Round(time.Millisecond))
	if !strings.Contains(d.stderr.String(), "background capture stopped") {
		t.Errorf("no final capture counts in the log:\n%s", d.stderr)
	}
	if err := netnsutil.Do(nsA, func() error {
		ifc, err := net.InterfaceByName(devA)
		if err != nil {
			return err
		}
		for _, at := range []ebpf.AttachType{ebpf.AttachTCXIngress, ebpf.AttachTCXEgress} {
			r, err := link.QueryPrograms(link.QueryOptions{Target: ifc.Index, Attach: at})
			if err != nil {
				return err
			}
			if len(r.Programs) != 0 {
				return fmt.Errorf("%d programs left at %s", len(r.Programs), at)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}
