//go:build linux

package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
)

// unitUID is the user the test runs fabemu as, standing in for the unit's
// fabemu user (nobody).
const unitUID = 65534

// unitCaps are the capabilities the unit with the given drop-ins gives
// the daemon, as setpriv names them (net_admin, ...).
func unitCaps(t *testing.T, dropIns ...string) []string {
	t.Helper()
	caps := readUnit(t, unitPath).list("Service", "AmbientCapabilities")
	for _, d := range dropIns {
		caps = append(caps, readUnit(t, d).list("Service", "AmbientCapabilities")...)
	}
	var out []string
	for _, c := range caps {
		out = append(out, strings.ToLower(strings.TrimPrefix(c, "CAP_")))
	}
	return out
}

// capsRig runs fabemu inside a network namespace of its own (the test's
// stand-in for the host's), as an unprivileged user holding only the
// unit's capabilities, in the host's file system: what the unit does,
// less systemd's sandbox, which needs systemd as init.
type capsRig struct {
	bin, ns, dir string
	tun          string // a world-writable /dev/net/tun to bind over the real one, "" if not needed
}

func newCapsRig(t *testing.T) *capsRig {
	t.Helper()
	privtest.Require(t, "network namespaces and capabilities")
	for _, tool := range []string{"ip", "setpriv", "nsenter", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	if testing.Short() {
		t.Skip("builds fabemu")
	}
	r := &capsRig{bin: buildFabemu(t), ns: fmt.Sprintf("fe-unit-%06x", rand.Uint32()&0xffffff), dir: t.TempDir()}
	if err := os.Chmod(r.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// The binary and the configs must be reachable by the user.
	for _, d := range []string{filepath.Dir(r.bin), filepath.Dir(r.dir), filepath.Dir(filepath.Dir(r.bin))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := netnsutil.Create(r.ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netnsutil.Delete(r.ns) })
	// Distributions make /dev/net/tun mode 0666; where it is not, the
	// user gets such a node in its own mount namespace.
	if st, err := os.Stat("/dev/net/tun"); err == nil && st.Mode().Perm()&0o006 != 0o006 {
		r.tun = filepath.Join(r.dir, "tun")
		if err := unix.Mknod(r.tun, unix.S_IFCHR|0o666, int(unix.Mkdev(10, 200))); err != nil {
			t.Skipf("making a world-writable tun node: %v", err)
		}
		if err := os.Chmod(r.tun, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// command runs fabemu args in the rig's namespace as the unit's user with
// exactly caps (ambient, inheritable and bounding, as the unit sets them).
func (r *capsRig) command(caps []string, args ...string) *exec.Cmd {
	set := "-all,+" + strings.Join(caps, ",+")
	pre := ""
	if r.tun != "" {
		// Private to this mount namespace: /dev stops propagating first.
		pre = "mount --make-rprivate /dev && mount --bind " + r.tun + " /dev/net/tun && "
	}
	sh := pre + fmt.Sprintf(`exec nsenter --net=%s setpriv --reuid=%d --regid=%d --clear-groups --inh-caps=%s --ambient-caps=%s --bounding-set=%s "$@"`,
		netnsutil.Path(r.ns), unitUID, unitUID, set, set, set)
	// Not ip netns exec: its mount namespace would hide the daemon's
	// namespace files from the host, as systemd's sandbox would. This one
	// keeps the host's propagation, so /run/netns stays shared with it.
	return exec.Command("unshare", append([]string{"--mount", "--propagation", "unchanged", "sh", "-c", sh, "sh", r.bin}, args...)...)
}

// config writes a daemon config into the rig's directory.
func (r *capsRig) config(t *testing.T, name, taps string) string {
	t.Helper()
	path := filepath.Join(r.dir, name)
	text := fmt.Sprintf("model: {preset: tap-square-10g}\ntaps:\n%sapi: {socket: %s}\nmetrics: {enabled: false}\ndrain_timeout: 500ms\n",
		taps, filepath.Join(r.dir, name+".sock"))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// daemon is a running fabemu run.
type daemon struct {
	cmd *exec.Cmd
	log *bytes.Buffer
}

// start starts fabemu run and waits until it says the fabric is running;
// it fails the test with the log if it exits first.
func (r *capsRig) start(t *testing.T, caps []string, config string) *daemon {
	t.Helper()
	d := &daemon{cmd: r.command(caps, "run", "--config", config), log: &bytes.Buffer{}}
	pr, pw := io.Pipe()
	d.cmd.Stderr = pw
	d.cmd.Stdout = io.Discard
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.cmd.Process.Kill(); _ = pw.Close() })
	up := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		ok := false
		for sc.Scan() {
			d.log.WriteString(sc.Text() + "\n")
			if !ok && strings.Contains(sc.Text(), "fabric running") {
				ok = true
				up <- true
			}
		}
		if !ok {
			up <- false
		}
	}()
	go func() { _ = d.cmd.Wait(); pw.Close() }()
	select {
	case ok := <-up:
		if !ok {
			t.Fatalf("fabemu run exited before running:\n%s", d.log)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("fabemu run did not start:\n%s", d.log)
	}
	return d
}

// stop sends SIGTERM and wants exit 0 within the deadline.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.cmd.ProcessState == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := d.cmd.ProcessState; st == nil || st.ExitCode() != 0 {
		t.Fatalf("after SIGTERM: %v\n%s", st, d.log)
	}
}

// refused runs a fabemu command that must fail at start-up and returns
// its output; one still running after 15 s is killed and fails the test.
func refused(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("%s succeeded, want a refusal:\n%s", strings.Join(cmd.Args, " "), out.String())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		t.Fatalf("%s started instead of refusing:\n%s", strings.Join(cmd.Args, " "), out.String())
	}
	return out.Bytes()
}

func (r *capsRig) ip(args ...string) ([]byte, error) {
	return exec.Command("ip", append([]string{"-n", r.ns}, args...)...).CombinedOutput()
}

// TestUnitCapabilities runs the daemon as an unprivileged user with only
// the capabilities of the unit and its drop-ins: the unit's alone create
// TAP devices and refuse namespaces with one line; with netns.conf's the
// daemon owns namespaces that the host's ip netns sees, and refuses to
// reclaim one a root process lives in; with capture.conf's fabemu
// captures with eBPF, which the unit's alone cannot.
func TestUnitCapabilities(t *testing.T) {
	r := newCapsRig(t)
	base := unitCaps(t)
	netns := unitCaps(t, netnsPath)
	capture := unitCaps(t, capturePath)
	t.Logf("unit %v, +netns.conf %v, +capture.conf %v", base, netns, capture)

	t.Run("unit", func(t *testing.T) {
		cfg := r.config(t, "tap.yaml", "  - {name: feu0, addrs: [10.249.0.1/24]}\n  - {name: feu1}\n")
		d := r.start(t, base, cfg)
		if out, err := r.ip("link", "show", "feu0"); err != nil {
			t.Fatalf("TAP feu0: %v\n%s", err, out)
		}
		d.stop(t)
		if out, err := r.ip("link", "show", "feu0"); err == nil {
			t.Errorf("TAP feu0 left behind:\n%s", out)
		}
		cfg = r.config(t, "ns.yaml", "  - {name: feu0, netns: fe-unit-x}\n")
		if out := refused(t, r.command(base, "run", "--config", cfg)); !bytes.Contains(out, []byte("needs CAP_SYS_ADMIN")) {
			t.Errorf("a namespace with the unit's capabilities alone:\n%s", out)
		}
	})

	t.Run("netns.conf", func(t *testing.T) {
		h0 := r.ns + "-h0"
		cfg := r.config(t, "own.yaml", fmt.Sprintf("  - {name: feu0, netns: %s, own_netns: true, addrs: [10.249.1.1/24]}\n  - {name: feu1, netns: %s-h1, own_netns: true}\n", h0, r.ns))
		t.Cleanup(func() {
			for _, ns := range []string{h0, r.ns + "-h1"} {
				if netnsutil.Exists(ns) {
					_ = netnsutil.Delete(ns)
				}
			}
		})
		// The drop-in's ExecStartPre, run as root, with the test user's
		// group for the unit's; /run/netns is put back afterwards.
		var st unix.Stat_t
		if err := unix.Stat(netnsutil.Dir, &st); err == nil {
			t.Cleanup(func() {
				_ = os.Chown(netnsutil.Dir, int(st.Uid), int(st.Gid))
				_ = os.Chmod(netnsutil.Dir, os.FileMode(st.Mode&0o7777))
			})
		}
		pre := strings.Fields(strings.TrimPrefix(readUnit(t, netnsPath).last("Service", "ExecStartPre"), "+"))
		for i, w := range pre {
			if w == readUnit(t, unitPath).last("Service", "Group") {
				pre[i] = fmt.Sprint(unitUID)
			}
		}
		if out, err := exec.Command(pre[0], pre[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("ExecStartPre %v: %v\n%s", pre, err, out)
		}
		d := r.start(t, netns, cfg)
		// The namespace is visible to the host's ip netns (no mount
		// namespace in between).
		if out, err := exec.Command("ip", "netns", "exec", h0, "ip", "-br", "addr", "show", "feu0").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("10.249.1.1")) {
			t.Fatalf("ip netns exec %s: %v\n%s", h0, err, out)
		}
		// A crash leaves the namespaces; a root process then lives in one.
		_ = d.cmd.Process.Kill()
		for d.cmd.ProcessState == nil {
			time.Sleep(10 * time.Millisecond)
		}
		holder := exec.Command("ip", "netns", "exec", h0, "sleep", "60")
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		defer holder.Process.Kill()
		time.Sleep(100 * time.Millisecond)
		if out := refused(t, r.command(netns, "run", "--config", cfg)); !bytes.Contains(out, []byte("is in use by process")) {
			t.Fatalf("reclaiming a namespace a root process lives in:\n%s", out)
		}
		if !netnsutil.Exists(h0) {
			t.Fatal("the held namespace was deleted")
		}
		_ = holder.Process.Kill()
		_ = holder.Wait()
		d = r.start(t, netns, cfg) // reclaims the stale namespaces
		d.stop(t)
		if netnsutil.Exists(h0) {
			t.Errorf("namespace %s left behind", h0)
		}
	})

	t.Run("capture.conf", func(t *testing.T) {
		if out, err := r.ip("link", "add", "feuv0", "type", "veth", "peer", "name", "feuv1"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		out := filepath.Join(r.dir, "c.pcapng")
		args := []string{"capture", "--iface", "feuv0", "--duration", "200ms", "--out", out}
		if b, err := r.command(capture, args...).CombinedOutput(); err != nil {
			t.Fatalf("capture with %v: %v\n%s", capture, err, b)
		}
		if _, err := os.Stat(out); err != nil {
			t.Error(err)
		}
		if b := refused(t, r.command(base, args...)); !bytes.Contains(b, []byte("CAP_BPF")) {
			t.Errorf("capture with the unit's capabilities alone:\n%s", b)
		}
	})
}
