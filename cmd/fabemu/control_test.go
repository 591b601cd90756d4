package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/vishvananda/netlink"
)

// loadConfig writes a two-TAP config on torus8x8-dor with extra YAML
// (background, pacing) and namespaces the daemon owns.
func loadConfig(t *testing.T, dir, id, extra string) (path, sock string, nss, taps []string) {
	t.Helper()
	sock = filepath.Join(dir, "api.sock")
	var b strings.Builder
	fmt.Fprintf(&b, "model:\n  preset: torus8x8-dor\napi:\n  socket: %s\nmetrics:\n  enabled: false\ndrain_timeout: 500ms\n%staps:\n", sock, extra)
	for i := 0; i < 2; i++ {
		ns := fmt.Sprintf("fl-%s-%d", id, i)
		nss, taps = append(nss, ns), append(taps, fmt.Sprintf("fl%s%d", id, i))
		fmt.Fprintf(&b, "  - name: %s\n    netns: %s\n    own_netns: true\n    addrs: [10.254.0.%d/24]\n", taps[i], ns, i+1)
	}
	path = filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, sock, nss, taps
}

func daemonStatus(t *testing.T, bin, sock string) emu.Status {
	t.Helper()
	out, err := exec.Command(bin, "stat", "--socket", sock, "--json").Output()
	if err != nil {
		t.Fatalf("fabemu stat: %v", err)
	}
	var st emu.Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// sigterm stops the daemon and checks it exits 0 within limit with no
// namespace, device or socket left.
func sigterm(t *testing.T, d *daemon, limit time.Duration, sock string, nss, taps []string) time.Duration {
	t.Helper()
	t0 := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("daemon exit after SIGTERM: %v\n%s", err, d.stderr)
		}
	case <-time.After(limit + 10*time.Second):
		t.Fatalf("daemon still running %v after SIGTERM\n%s", limit+10*time.Second, d.stderr)
	}
	// How long past limit it took is the machine's (a crowded one delays
	// the exit by seconds): logged; the hang is caught above.
	took := time.Since(t0)
	if took > limit {
		t.Logf("daemon took %v to exit after SIGTERM, over %v", took, limit)
	}
	for _, ns := range nss {
		if netnsutil.Exists(ns) {
			t.Errorf("namespace %s left after SIGTERM", ns)
		}
	}
	for _, name := range taps {
		if _, err := netlink.LinkByName(name); err == nil {
			t.Errorf("device %s left after SIGTERM", name)
		}
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("API socket left after SIGTERM")
	}
	return took
}

// The write API from the command line: fabemu set changes the background
// load of a running daemon, refuses bad input with one line, and the
// status shows the change; stat --watch ends cleanly on Ctrl-C.
func TestDaemonSetBackgroundLoad(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	bin := buildBinary(t)
	id := fmt.Sprint(os.Getpid() % 100000)
	cfg, sock, nss, taps := loadConfig(t, t.TempDir(), "s"+id, "")
	cleanupNamespaces(t, nss)
	d := startDaemon(t, bin, cfg, sock)

	out, err := exec.Command(bin, "set", "background.load=0.0005", "--socket", sock).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "background.load=0.0005 on 62 hosts") {
		t.Errorf("fabemu set: %v\n%s", err, out)
	}
	for _, bad := range []struct{ arg, want string }{
		{"background.load=2", "0 <= load <= 1"},
		{"background.load=abc", "not a number"},
		{"model.delivery=adaptive-ooo", "cannot change at runtime"},
		{"nope", "want KEY=VALUE"},
	} {
		out, err := exec.Command(bin, "set", bad.arg, "--socket", sock).CombinedOutput()
		if err == nil || !strings.Contains(string(out), bad.want) || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
			t.Errorf("fabemu set %s: %v %q; want one line with %q", bad.arg, err, out, bad.want)
		}
	}
	if st := daemonStatus(t, bin, sock); st.BackgroundLoad != 0.0005 || st.BackgroundHosts != 62 {
		t.Errorf("after set: background load %g on %d hosts", st.BackgroundLoad, st.BackgroundHosts)
	}
	// Ctrl-C ends --watch cleanly (exit 0). The signal goes once the
	// first status is drawn, which comes after --watch installed its
	// handler: a fixed 400 ms sleep was too short for a loaded machine to
	// start the process, which then died of the signal.
	drawn := &firstWrite{ch: make(chan struct{})}
	w := exec.Command(bin, "stat", "--watch", "--interval", "100ms", "--socket", sock)
	w.Stdout = drawn
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-drawn.ch:
	case <-time.After(hangGuard):
		_ = w.Process.Kill()
		t.Fatalf("stat --watch drew nothing in %v", hangGuard)
	}
	_ = w.Process.Signal(os.Interrupt)
	wdone := make(chan error, 1)
	go func() { wdone <- w.Wait() }()
	select {
	case err := <-wdone:
		if err != nil {
			t.Errorf("stat --watch after Ctrl-C: %v", err)
		}
	case <-time.After(3 * time.Second):
		_ = w.Process.Kill()
		t.Error("stat --watch still running 3 s after Ctrl-C")
	}
	sigterm(t, d, 1500*time.Millisecond, sock, nss, taps)
}

// firstWrite is a writer that discards what it gets and closes ch at the
// first write.
type firstWrite struct {
	once sync.Once
	ch   chan struct{}
}

func (f *firstWrite) Write(b []byte) (int, error) {
	f.once.Do(func() { close(f.ch) })
	return len(b), nil
}
