package qemusock_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
	"go.uber.org/zap/zaptest"
)

// guestModules are the kernel modules the guest needs for its virtio-net
// card, in load order (each depends only on the ones before it).
var guestModules = []string{"virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev",
	"virtio_pci", "failover", "net_failover", "virtio_net"}

// guestTools finds QEMU, a kernel with its modules and a static busybox,
// or says which is missing and how to install it.
type guestTools struct {
	qemu, kernel, modDir, busybox string
}

func findGuestTools() (guestTools, error) {
	var g guestTools
	var err error
	if g.qemu, err = exec.LookPath("qemu-system-x86_64"); err != nil {
		return g, fmt.Errorf("qemu-system-x86_64 not found (apt-get install qemu-system-x86)")
	}
	kernels, _ := filepath.Glob("/boot/vmlinuz-*")
	for _, k := range kernels {
		ver := strings.TrimPrefix(filepath.Base(k), "vmlinuz-")
		dir := filepath.Join("/lib/modules", ver, "kernel")
		if _, err := os.Stat(filepath.Join(dir, "drivers/net/virtio_net.ko")); err == nil {
			g.kernel, g.modDir = k, dir
			break
		}
	}
	if g.kernel == "" {
		return g, fmt.Errorf("no kernel in /boot with an uncompressed virtio_net module (apt-get install linux-image-cloud-amd64)")
	}
	for _, b := range []string{"/bin/busybox", "/usr/bin/busybox"} {
		if isStatic(b) {
			g.busybox = b
			break
		}
	}
	if g.busybox == "" {
		return g, fmt.Errorf("no static busybox (apt-get install busybox-static)")
	}
	return g, nil
}

// isStatic reports whether path is an ELF executable without a program
// interpreter (statically linked: it runs in an initramfs without libc).
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// guestInit is the guest's /init: load the virtio-net modules, configure
// eth0, ping the namespace host, send it a file and fetch one, printing
// the verdicts and SHA-256 sums on the serial console, then power off.
const guestInit = `#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t devtmpfs dev /dev
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp
for m in %[1]s; do insmod /lib/modules/$m.ko || echo FABEMU-FAIL insmod $m; done
ip link set lo up
ip link set eth0 up
ip addr add %[2]s/24 dev eth0
if ping -c 3 -W 5 %[3]s; then echo FABEMU-PING-OK; else echo FABEMU-FAIL ping; fi
dd if=/dev/urandom of=/tmp/up bs=1048576 count=%[4]d 2>/dev/null
echo FABEMU-UP-SHA $(sha256sum /tmp/up)
nc %[3]s %[5]d < /tmp/up || echo FABEMU-FAIL nc up
nc %[3]s %[6]d > /tmp/down || echo FABEMU-FAIL nc down
echo FABEMU-DOWN-SHA $(sha256sum /tmp/down)
echo FABEMU-DONE
poweroff -f
`

// cpioWriter writes a newc (SVR4, no CRC) archive: the initramfs format.
type cpioWriter struct {
	w   io.Writer
	ino int
	err error
}

func (c *cpioWriter) entry(name string, mode, rdevMajor, rdevMinor uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	pad := func(n int) []byte { return make([]byte, (4-n%4)%4) }
	for _, b := range [][]byte{[]byte(hdr), []byte(name), {0}, pad(len(hdr) + len(name) + 1), data, pad(len(data))} {
		if _, err := c.w.Write(b); err != nil {
			c.err = err
			return
		}
	}
}

// buildInitramfs writes the guest's initramfs to path: busybox, the
// modules, /dev/console and /init.
func buildInitramfs(g guestTools, path, init string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	c := &cpioWriter{w: bw}
	const dir, file, exe, chr = 0o040755, 0o100644, 0o100755, 0o020600
	for _, d := range []string{"bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules"} {
		c.entry(d, dir, 0, 0, nil)
	}
	c.entry("dev/console", chr, 5, 1, nil) // the kernel opens it for init's stdio
	bb, err := os.ReadFile(g.busybox)
	if err != nil {
		return err
	}
	c.entry("bin/busybox", exe, 0, 0, bb)
	for _, m := range guestModules {
		matches, _ := filepath.Glob(filepath.Join(g.modDir, "*", m+".ko"))
		more, _ := filepath.Glob(filepath.Join(g.modDir, "*", "*", m+".ko"))
		matches = append(matches, more...)
		if len(matches) == 0 {
			return fmt.Errorf("module %s not found under %s", m, g.modDir)
		}
		b, err := os.ReadFile(matches[0])
		if err != nil {
			return err
		}
		c.entry("lib/modules/"+m+".ko", file, 0, 0, b)
	}
	c.entry("init", exe, 0, 0, []byte(init))
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	if c.err != nil {
		return c.err
	}
	return bw.Flush()
}

// payloadServers listen in namespace ns: up receives exactly size bytes
// and hashes them; down sends size pseudo-random bytes and hashes them.
type payloadServers struct {
	up, down         net.Listener
	size             int64
	mu               sync.Mutex
	upSum, downSum   string
	upRate, downRate float64 // bytes/s from accept to the last byte
	upErr, downErr   error
	upDone, downDone chan struct{}
}

func startPayloadServers(t *testing.T, ns string, size int64, upPort, downPort int) *payloadServers {
	t.Helper()
	s := &payloadServers{size: size, upDone: make(chan struct{}), downDone: make(chan struct{})}
	err := netnsutil.Do(ns, func() error {
		var err error
		if s.up, err = net.Listen("tcp", fmt.Sprintf(":%d", upPort)); err != nil {
			return err
		}
		s.down, err = net.Listen("tcp", fmt.Sprintf(":%d", downPort))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.up.Close(); s.down.Close() })
	go func() {
		defer close(s.upDone)
		c, err := s.up.Accept()
		if err != nil {
			s.upErr = err
			return
		}
		defer c.Close()
		t0 := time.Now()
		h := sha256.New()
		n, err := io.CopyN(h, c, size)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.upSum, s.upErr = hex.EncodeToString(h.Sum(nil)), err
		s.upRate = float64(n) / time.Since(t0).Seconds()
	}()
	go func() {
		defer close(s.downDone)
		c, err := s.down.Accept()
		if err != nil {
			s.downErr = err
			return
		}
		defer c.Close()
		t0 := time.Now()
		h := sha256.New()
		r := rand.NewChaCha8([32]byte{'f', 'a', 'b'})
		n, err := io.CopyN(io.MultiWriter(c, h), r, size)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.downSum, s.downErr = hex.EncodeToString(h.Sum(nil)), err
		s.downRate = float64(n) / time.Since(t0).Seconds()
	}()
	return s
}

// freeLoopbackPort returns 127.0.0.1:port with a port free a moment ago.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// guestBoot bounds one boot, transfer and power-off of the guest: it
// takes about 10 s plus the transfers on this 2-core machine under TCG;
// the limit only turns a hung guest into a failure.
const guestBoot = 150 * time.Second

// TestRealGuest boots a Debian kernel with a busybox initramfs under QEMU
// (TCG: no KVM needed) attached to the fabric through a qemu-socket port
// on one corner of a 2x2 mesh, with a namespace host behind a TAP on the
// opposite corner (two minimal paths, so adaptive routing has a choice).
// The guest pings the namespace and moves a payload each way; the SHA-256
// sums the guest prints on its serial console must match the namespace
// side's, under deterministic and adaptive-inorder delivery, and nothing
// may be refused at either port.
func TestRealGuest(t *testing.T) {
	privtest.Require(t, "a TAP device and a network namespace for the guest's peer")
	g, err := findGuestTools()
	if err != nil {
		if os.Getenv("FABEMU_REQUIRE_PRIV") == "1" {
			t.Fatalf("FABEMU_REQUIRE_PRIV=1 and the real-guest test cannot run: %v", err)
		}
		t.Skipf("real-guest test skipped: %v", err)
	}
	size := 16
	if testing.Short() {
		size = 4
	}
	dir := t.TempDir()
	const guestIP, hostIP, upPort, downPort = "10.252.0.1", "10.252.0.2", 5001, 5002
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := buildInitramfs(g, initrd, fmt.Sprintf(guestInit, strings.Join(guestModules, " "), guestIP, hostIP, size, upPort, downPort)); err != nil {
		t.Fatal(err)
	}
	// Each mode attaches the guest one of the two ways QEMU offers: a unix
	// socket (-netdev stream, QEMU 7.2 and later) and TCP (-netdev
	// socket, any QEMU; libvirt's <interface type='client'>). The second
	// gives the namespace's TAP offloads, so its TCP super-frames cross
	// the fabric whole and are segmented in software for the guest.
	for i, tc := range []struct {
		mode, attach string
		offload      bool
	}{{"deterministic", "unix", false}, {"adaptive-inorder", "tcp", true}} {
		mode := tc.mode
		t.Run(mode+"/"+tc.attach, func(t *testing.T) {
			id := fmt.Sprintf("%d%c", os.Getpid()%100000, 'a'+i)
			sock := filepath.Join(dir, "vm"+id+".sock")
			netdev := "stream,id=n0,server=off,addr.type=unix,addr.path=" + sock
			if tc.attach == "tcp" {
				sock = freeLoopbackPort(t)
				netdev = "socket,id=n0,connect=" + sock
			}
			offload := tc.offload
			c := emu.DefaultRunConfig()
			c.Model.Preset = "tap-square-10g"
			c.Model.Delivery = mode
			c.API.Socket = ""
			c.Metrics.Enabled = false
			h0, h1 := 0, 3
			ns := "fg-" + id
			c.TAPs = []emu.TAPConfig{
				{Name: "vm" + id, Kind: emu.KindQEMUSocket, Socket: sock, Host: &h0},
				{Name: "fg" + id, MAC: "02:fa:be:78:00:02", Host: &h1, Netns: ns, OwnNetns: true, Addrs: []string{hostIP + "/24"}, Offload: &offload},
			}
			e, err := emu.New(c, zaptest.NewLogger(t).Named("emu"))
			if err != nil {
				t.Fatal(err)
			}
			var pf *os.File // pcap_out's file, closed after the emulator
			t.Cleanup(func() {
				if err := e.Close(); err != nil {
					t.Error(err)
				}
				if pf != nil {
					pf.Close()
				}
				if _, err := os.Lstat(sock); tc.attach == "unix" && !os.IsNotExist(err) {
					t.Errorf("socket %s left behind", sock)
				}
				if netnsutil.Exists(ns) {
					t.Errorf("namespace %s left behind", ns)
				}
			})
			pcapPath := filepath.Join(dir, "out"+id+".pcapng")
			if pf, err = os.Create(pcapPath); err != nil {
				t.Fatal(err)
			}
			if err := e.RecordPcap(pf, pcapPath); err != nil {
				t.Fatal(err)
			}
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			srv := startPayloadServers(t, ns, int64(size)<<20, upPort, downPort)

			ctx, cancel := context.WithTimeout(context.Background(), guestBoot)
			defer cancel()
			cmd := exec.CommandContext(ctx, g.qemu, "-accel", "tcg", "-m", "256", "-smp", "1",
				"-nographic", "-monitor", "none", "-no-reboot",
				"-kernel", g.kernel, "-initrd", initrd,
				"-append", "console=ttyS0 panic=-1 quiet loglevel=3 mitigations=off",
				"-netdev", netdev,
				"-device", "virtio-net-pci,netdev=n0,mac=52:54:00:fa:be:01,romfile=")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			verdict := map[string]string{}
			var console []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := strings.TrimRight(sc.Text(), "\r")
				console = append(console, line)
				if k, v, ok := strings.Cut(line, " "); ok && strings.HasPrefix(k, "FABEMU-") {
					verdict[k] = v
				} else if strings.HasPrefix(line, "FABEMU-") {
					verdict[line] = ""
				}
			}
			werr := cmd.Wait()
			elapsed := time.Since(t0)
			tail := strings.Join(console[max(0, len(console)-30):], "\n")
			if ctx.Err() != nil {
				t.Fatalf("guest did not finish within %v; console:\n%s", guestBoot, tail)
			}
			if werr != nil {
				t.Fatalf("qemu: %v; console:\n%s", werr, tail)
			}
			if f, ok := verdict["FABEMU-FAIL"]; ok {
				t.Fatalf("guest reports failure (%s); console:\n%s", f, tail)
			}
			for _, k := range []string{"FABEMU-PING-OK", "FABEMU-DONE"} {
				if _, ok := verdict[k]; !ok {
					t.Fatalf("guest console lacks %s; console:\n%s", k, tail)
				}
			}
			<-srv.upDone
			<-srv.downDone
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if srv.upErr != nil || srv.downErr != nil {
				t.Fatalf("payload servers: up %v, down %v", srv.upErr, srv.downErr)
			}
			upSum, _, _ := strings.Cut(verdict["FABEMU-UP-SHA"], " ")
			downSum, _, _ := strings.Cut(verdict["FABEMU-DOWN-SHA"], " ")
			if upSum != srv.upSum {
				t.Errorf("guest to namespace: guest sent SHA-256 %q, namespace received %s", upSum, srv.upSum)
			}
			if downSum != srv.downSum {
				t.Errorf("namespace to guest: namespace sent SHA-256 %s, guest received %q", srv.downSum, downSum)
			}

			st, err := e.Status()
			if err != nil {
				t.Fatal(err)
			}
			// Frames sent to the VM's port while no QEMU was attached
			// (the namespace's IPv6 router solicitations before QEMU
			// connected, a retransmission after the guest powered off)
			// are refused as no_peer, rightly: the cable was unplugged.
			// Nothing may be refused for any other cause.
			if n := st.Hosts[0].OutRefused["no_peer"]; n != 0 {
				t.Logf("%s: %d frames refused while no VM was attached (no_peer)", st.Hosts[0].TAP, n)
				delete(st.Hosts[0].OutRefused, "no_peer")
			}
			for _, hs := range st.Hosts {
				for cause, n := range hs.InRefused {
					if n != 0 {
						t.Errorf("%s: %d frames refused on the way in (%s)", hs.TAP, n, cause)
					}
				}
				for cause, n := range hs.OutRefused {
					if n != 0 {
						t.Errorf("%s: %d frames refused on the way out (%s)", hs.TAP, n, cause)
					}
				}
				if hs.FramesIn == 0 || hs.FramesOut == 0 || hs.WriteRefused != 0 || hs.UnknownUnicast != 0 {
					t.Errorf("%s: in %d out %d write refused %d unknown unicast %d", hs.TAP, hs.FramesIn, hs.FramesOut, hs.WriteRefused, hs.UnknownUnicast)
				}
			}
			if payloadFrames := uint64(size<<20) / 1514; tc.offload && st.Hosts[0].FramesOut >= payloadFrames {
				t.Errorf("%s: %d frames written for %d MiB: the namespace's TCP super-frames should reach the port whole (fewer than %d) and be segmented there",
					st.Hosts[0].TAP, st.Hosts[0].FramesOut, size, payloadFrames)
			}
			for _, cs := range st.Connections {
				if cs.Reordered != 0 {
					t.Errorf("%s>%s: %d frames reordered at egress under %s", cs.Src, cs.Dst, cs.Reordered, mode)
				}
			}
			if st.PcapOut == nil || st.PcapOut.Written == 0 {
				t.Errorf("pcap_out recorded nothing: %+v", st.PcapOut)
			}
			for _, hs := range st.Hosts {
				t.Logf("%s: %d frames in, %d out; write system call p50 %.1f µs, p99 %.1f µs; read to submit p50 %.1f µs",
					hs.TAP, hs.FramesIn, hs.FramesOut, hs.Path.Write.P50/1e3, hs.Path.Write.P99/1e3, hs.Path.ReadToSubmit.P50/1e3)
			}
			t.Logf("%s: guest booted, pinged and moved %d MiB each way in %.1f s (wall, under TCG); guest to namespace %.1f MB/s, namespace to guest %.1f MB/s",
				mode, size, elapsed.Seconds(), srv.upRate/1e6, srv.downRate/1e6)
		})
	}
}
