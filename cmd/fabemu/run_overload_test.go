package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/emu"
	"github.com/fabemu/fabemu/internal/privtest"
)

// A daemon whose background load the model cannot follow: past
// pacing.max_lag it stops reading its TAPs and warns with the cause; on
// SIGTERM it exits 0 within drain_timeout + 1 s, leaving no namespace,
// device or socket behind.
func TestDaemonOverloadSIGTERM(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	bin := buildBinary(t)
	// Also under SCHED_FIFO (pacing.realtime_priority), where a model that
	// cannot keep up spins at real-time priority: the signal must still be
	// handled and the drain deadline kept.
	for i, pacing := range []string{"{max_lag: 50ms}", "{max_lag: 50ms, realtime_priority: 5}"} {
		t.Run(pacing, func(t *testing.T) { testOverloadSIGTERM(t, bin, fmt.Sprint(os.Getpid()%100000+1+i), pacing) })
	}
}

func testOverloadSIGTERM(t *testing.T, bin, id, pacing string) {
	const drain = 500 * time.Millisecond // loadConfig's drain_timeout
	cfg, sock, nss, taps := loadConfig(t, t.TempDir(), "o"+id,
		"pacing: "+pacing+"\nbackground:\n  enabled: true\n  traffic: {load: 0.5}\n")
	cleanupNamespaces(t, nss)
	d := startDaemon(t, bin, cfg, sock)

	// Frames keep coming from one TAP while the model falls behind.
	ping := exec.Command("ip", "netns", "exec", nss[0], "ping", "-n", "-q", "-i", "0.005", "-w", "30", "10.254.0.2")
	if err := ping.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ping.Process.Kill(); _ = ping.Wait() }()
	var st emu.Status
	deadline := time.Now().Add(20 * time.Second)
	for {
		time.Sleep(250 * time.Millisecond)
		st = daemonStatus(t, bin, sock)
		if st.Pacer.Behind > 50*time.Millisecond && st.Hosts[0].LagStalls > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lag stall: behind %v, hosts %+v", st.Pacer.Behind, st.Hosts)
		}
	}
	t.Logf("behind %v, lag stalls %d, valid %.2f, excess lag max %.0f ms, SCHED_FIFO priority %d", st.Pacer.Behind, st.Hosts[0].LagStalls,
		st.Pacer.ValidFraction, st.Pacer.ExcessLag.Max/1e6, st.RealtimePriority)
	if want := strings.Contains(pacing, "realtime_priority"); want != (st.RealtimePriority > 0) {
		t.Errorf("pacing %s: the daemon reports SCHED_FIFO priority %d", pacing, st.RealtimePriority)
	}

	// Exit 0 within drain_timeout + 1 s, nothing left behind.
	took := sigterm(t, d, drain+time.Second, sock, nss, taps)
	t.Logf("exited %v after SIGTERM (drain_timeout %v)", took, drain)
	if !strings.Contains(d.stderr.String(), "pacing.max_lag") || !strings.Contains(d.stderr.String(), "background load") {
		t.Errorf("no lag warning naming the cause in the log:\n%s", d.stderr)
	}
}
