package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/vishvananda/netlink"
)

// buildBinary builds fabemu into a temporary directory.
//
// The binary is built once per test process (into binDir, which TestMain
// removes at the end): some thirty tests run it, and linking it for each
// took minutes of a loaded machine's time.
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		bin := filepath.Join(binDir, "fabemu")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	binDir  string
	binOnce sync.Once
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fabemu-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemonConfig writes a two-TAP config with namespaces the daemon owns.
func daemonConfig(t *testing.T, dir, id string) (path, sock string, nss []string) {
	t.Helper()
	sock = filepath.Join(dir, "api.sock")
	var b strings.Builder
	fmt.Fprintf(&b, "model:\n  preset: tap-pair-10g\napi:\n  socket: %s\nmetrics:\n  enabled: false\ndrain_timeout: 500ms\ntaps:\n", sock)
	for i := 0; i < 2; i++ {
		ns := fmt.Sprintf("fd-%s-%d", id, i)
		nss = append(nss, ns)
		fmt.Fprintf(&b, "  - name: fd%s%d\n    netns: %s\n    own_netns: true\n    addrs: [10.252.0.%d/24]\n", id, i, ns, i+1)
	}
	path = filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, sock, nss
}

type daemon struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

func startDaemon(t *testing.T, bin, cfg, sock string, flags ...string) *daemon {
	// ready: the API answers (it starts serving once the devices are up).
	t.Helper()
	d := &daemon{cmd: exec.Command(bin, append([]string{"run", "--config", cfg}, flags...)...), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.done:
			case <-time.After(10 * time.Second):
				_ = d.cmd.Process.Kill()
			}
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(sock); err == nil {
			if exec.Command(bin, "stat", "--socket", sock, "--json").Run() == nil {
				return d
			}
		}
		select {
		case err := <-d.done:
			t.Fatalf("daemon exited: %v\n%s", err, d.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("daemon did not open %s\n%s", sock, d.stderr)
	return nil
}

func cleanupNamespaces(t *testing.T, nss []string) {
	t.Cleanup(func() {
		for _, ns := range nss {
			if netnsutil.Exists(ns) {
				_ = netnsutil.Delete(ns)
			}
		}
	})
}

// runOrFail runs a command and fails the test with its output if it fails.
func runOrFail(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// vethBetweenNamespaces creates two namespaces named prefix-ID-a and
// prefix-ID-b without IPv6 (only the test's traffic crosses), removed when
// the test ends, and a veth pair devPrefix+"a"+ID / devPrefix+"b"+ID
// between them, down and without addresses.
func vethBetweenNamespaces(t *testing.T, prefix, devPrefix string) (nsA, nsB, devA, devB string) {
	t.Helper()
	id := fmt.Sprint(os.Getpid() % 100000)
	nsA, nsB, devA, devB = prefix+"-"+id+"-a", prefix+"-"+id+"-b", devPrefix+"a"+id, devPrefix+"b"+id
	cleanupNamespaces(t, []string{nsA, nsB})
	for _, ns := range []string{nsA, nsB} {
		if err := netnsutil.Create(ns); err != nil {
			t.Fatal(err)
		}
		runOrFail(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	}
	runOrFail(t, "ip", "link", "add", devA, "netns", nsA, "type", "veth", "peer", "name", devB, "netns", nsB)
	return nsA, nsB, devA, devB
}

func pingOnce(t *testing.T, ns, addr string) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-n", "-c", "2", "-i", "0.1", "-W", "2", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("ping %s from %s: %v\n%s", addr, ns, err, out)
	}
}

func TestDaemonKill9RestartAndSIGTERMCleanup(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	bin := buildBinary(t)
	dir := t.TempDir()
	id := fmt.Sprint(os.Getpid() % 100000)
	cfg, sock, nss := daemonConfig(t, dir, id)
	cleanupNamespaces(t, nss)

	d := startDaemon(t, bin, cfg, sock)
	pingOnce(t, nss[0], "10.252.0.2")
	if err := d.cmd.Process.Kill(); err != nil { // kill -9: no cleanup at all
		t.Fatal(err)
	}
	<-d.done
	if !netnsutil.Exists(nss[0]) {
		t.Fatalf("namespace %s gone after kill -9; the test expects a stale one", nss[0])
	}

	// Same config again: the stale namespaces and socket are reclaimed.
	d = startDaemon(t, bin, cfg, sock)
	pingOnce(t, nss[0], "10.252.0.2")
	out, err := exec.Command(bin, "stat", "--socket", sock).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "fd"+id+"0>fd"+id+"1") {
		t.Fatalf("fabemu stat: %v\n%s", err, out)
	}
	t.Logf("fabemu stat after restart:\n%s", out)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("daemon exit after SIGTERM: %v\n%s", err, d.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not exit within 15 s of SIGTERM")
	}
	for _, ns := range nss {
		if netnsutil.Exists(ns) {
			t.Errorf("namespace %s left after SIGTERM", ns)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := netlink.LinkByName(fmt.Sprintf("fd%s%d", id, i)); err == nil {
			t.Errorf("device fd%s%d left after SIGTERM", id, i)
		}
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("API socket left after SIGTERM")
	}
}

// runErr runs the binary and returns its stderr lines, requiring failure.
func runErr(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		t.Fatalf("%v: exit 0, want failure\n%s", cmd.Args, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	return lines
}

func TestDaemonClearErrors(t *testing.T) {
	privtest.Require(t, "TAP devices and bridge links")
	bin := buildBinary(t)
	dir := t.TempDir()

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("taps:\n  - name: x0\n    mtuu: 1500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := runErr(t, exec.Command(bin, "run", "--config", bad))
	if len(lines) != 1 || !strings.Contains(lines[0], "bad.yaml:3") || !strings.Contains(lines[0], "mtuu") {
		t.Errorf("malformed config: want one line naming file, line and key, got %q", lines)
	}

	// A name clash with an existing non-TAP link.
	name := fmt.Sprintf("fdclash%d", os.Getpid()%10000)
	if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	clash := filepath.Join(dir, "clash.yaml")
	if err := os.WriteFile(clash, []byte(fmt.Sprintf("model: {preset: tap-pair-10g}\napi: {socket: %s}\nmetrics: {enabled: false}\ntaps:\n  - name: %s\n  - name: %sb\n", filepath.Join(dir, "c.sock"), name, name)), 0o644); err != nil {
		t.Fatal(err)
	}
	lines = runErr(t, exec.Command(bin, "run", "--config", clash, "--log-level", "error"))
	if len(lines) != 1 || !strings.Contains(lines[0], "name clash") || !strings.Contains(lines[0], "bridge") {
		t.Errorf("name clash: want one clear line, got %q", lines)
	}
	if l, err := netlink.LinkByName(name); err != nil || l.Type() != "bridge" {
		t.Errorf("the bridge was touched: %v", err)
	}

	// Missing privileges: run as nobody.
	nobody := exec.Command(bin, "run", "--demo", "2", "--socket", filepath.Join(dir, "n.sock"), "--no-metrics")
	nobody.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Dir(filepath.Dir(bin)), 0o755)
	lines = runErr(t, nobody)
	if len(lines) != 1 || !strings.Contains(lines[0], "missing privileges") || !strings.Contains(lines[0], "CAP_NET_ADMIN") {
		t.Errorf("missing privileges: want one clear line, got %q", lines)
	}
}

// TestListenAPISocketPath: the control socket replaces only a stale
// socket; a regular file, a directory or a symbolic link at the path is
// refused and left as it was, and a socket a daemon answers on is refused.
func TestListenAPISocketPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "empty-dir")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, kind string }{{file, "regular file"}, {sub, "directory"}, {link, "symbolic link"}} {
		if ln, err := listenAPI(tc.path); err == nil {
			ln.Close()
			t.Errorf("%s: accepted", tc.path)
		} else if !strings.Contains(err.Error(), "a "+tc.kind+" is there, not a socket") {
			t.Errorf("%s: %v", tc.path, err)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me" {
		t.Errorf("the regular file changed: %q, %v", b, err)
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone: %v", err)
	}
	// A live socket is refused; once its listener is gone the stale file is
	// replaced.
	sock := filepath.Join(dir, "api.sock")
	live, err := listenAPI(sock)
	if err != nil {
		t.Fatal(err)
	}
	if ln, err := listenAPI(sock); err == nil {
		ln.Close()
		t.Error("a live socket was replaced")
	} else if !strings.Contains(err.Error(), "another daemon is running") {
		t.Errorf("live socket: %v", err)
	}
	live.(*net.UnixListener).SetUnlinkOnClose(false)
	live.Close()
	again, err := listenAPI(sock)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	again.Close()
}

// TestSecondDaemonRefused: a second daemon configured with the same TAP
// devices and namespaces is refused with one line naming what is in use,
// and the first keeps working (it used to delete the first daemon's
// namespaces as stale).
func TestSecondDaemonRefused(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	bin := buildBinary(t)
	id := fmt.Sprint(os.Getpid()%100000 + 1)
	cfg, sock, nss := daemonConfig(t, t.TempDir(), id)
	cleanupNamespaces(t, nss)
	first := startDaemon(t, bin, cfg, sock)
	pingOnce(t, nss[0], "10.252.0.2")

	cfg2, _, _ := daemonConfig(t, t.TempDir(), id) // same devices, another socket
	cmd := exec.Command(bin, "run", "--config", cfg2)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the second daemon did not stop within 20 s")
	}
	if err == nil {
		t.Fatalf("the second daemon started:\n%s", out)
	}
	if !strings.Contains(string(out), "refusing to delete it") || !strings.Contains(string(out), nss[0]) {
		t.Errorf("second daemon's error does not name the namespace in use:\n%s", out)
	}
	select {
	case err := <-first.done:
		t.Fatalf("the first daemon exited: %v\n%s", err, first.stderr)
	default:
	}
	pingOnce(t, nss[0], "10.252.0.2")
}
