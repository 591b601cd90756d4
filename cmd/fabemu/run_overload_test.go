package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/fabemu/fabemu/nic/emu"
	"github.com/vishvananda/netlink"
)

// A daemon whose background load the model cannot follow: past
// pacing.max_lag it stops reading its TAPs and warns with the cause; on
// SIGTERM it exits 0 within drain_timeout + 1 s, leaving no namespace,
// device or socket behind.
func TestDaemonOverloadSIGTERM(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	bin := buildBinary(t)
	dir := t.TempDir()
	id := fmt.Sprint(os.Getpid()%100000 + 1)
	sock := filepath.Join(dir, "api.sock")
	const drain = time.Second
	var b strings.Builder
	fmt.Fprintf(&b, "model:\n  preset: torus8x8-dor\napi:\n  socket: %s\nmetrics:\n  enabled: false\ndrain_timeout: %v\n", sock, drain)
	b.WriteString("pacing: {max_lag: 50ms}\nbackground:\n  enabled: true\n  traffic: {load: 0.5}\ntaps:\n")
	var nss []string
	for i := 0; i < 2; i++ {
		ns := fmt.Sprintf("fo-%s-%d", id, i)
		nss = append(nss, ns)
		fmt.Fprintf(&b, "  - name: fo%s%d\n    netns: %s\n    own_netns: true\n    addrs: [10.253.0.%d/24]\n", id, i, ns, i+1)
	}
	cfg := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cleanupNamespaces(t, nss)
	d := startDaemon(t, bin, cfg, sock)

	// Frames keep coming from one TAP while the model falls behind.
	ping := exec.Command("ip", "netns", "exec", nss[0], "ping", "-n", "-q", "-i", "0.005", "-w", "30", "10.253.0.2")
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ping.Process.Kill(); _ = ping.Wait() }()
	var st emu.Status
	deadline := time.Now().Add(20 * time.Second)
	for {
		time.Sleep(250 * time.Millisecond)
		out, err := exec.Command(bin, "stat", "--socket", sock, "--json").Output()
		if err != nil {
			t.Fatalf("fabemu stat: %v\n%s", err, d.stderr)
		}
		if err := json.Unmarshal(out, &st); err != nil {
			t.Fatal(err)
		}
		if st.Pacer.Behind > 50*time.Millisecond && st.Hosts[0].LagStalls > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lag stall: behind %v, hosts %+v", st.Pacer.Behind, st.Hosts)
		}
	}
	t.Logf("behind %v, lag stalls %d, valid %.2f, excess lag max %.0f ms", st.Pacer.Behind, st.Hosts[0].LagStalls,
		st.Pacer.ValidFraction, st.Pacer.ExcessLag.Max/1e6)

	t0 := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("daemon exit after SIGTERM: %v\n%s", err, d.stderr)
		}
	case <-time.After(drain + 5*time.Second):
		t.Fatalf("daemon still running %v after SIGTERM\n%s", drain+5*time.Second, d.stderr)
	}
	took := time.Since(t0)
	t.Logf("exited %v after SIGTERM (drain_timeout %v)", took, drain)
	if took > drain+time.Second {
		t.Errorf("exit took %v, over drain_timeout + 1 s", took)
	}
	if !strings.Contains(d.stderr.String(), "pacing.max_lag") || !strings.Contains(d.stderr.String(), "background load") {
		t.Errorf("no lag warning naming the cause in the log:\n%s", d.stderr)
	}
	for _, ns := range nss {
		if netnsutil.Exists(ns) {
			t.Errorf("namespace %s left after SIGTERM", ns)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := netlink.LinkByName(fmt.Sprintf("fo%s%d", id, i)); err == nil {
			t.Errorf("device fo%s%d left after SIGTERM", id, i)
		}
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("API socket left after SIGTERM")
	}
}
