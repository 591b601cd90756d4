package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/internal/privtest"
)

// The daemon's /metrics passes Prometheus' own linter, promtool check
// metrics (TestCollector in emu runs the same rules in process), with
// samples in the histograms: pings cross the fabric first. The
// test skips where promtool is not installed (Debian's prometheus package
// ships it) unless FABEMU_REQUIRE_PRIV=1, as in CI, which installs it.
func TestDaemonMetricsPromtool(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("FABEMU_REQUIRE_PRIV") == "1" {
			t.Fatalf("promtool not installed (Debian: apt-get install --no-install-recommends prometheus): %v", err)
		}
		t.Skipf("promtool not installed (Debian: apt-get install --no-install-recommends prometheus): %v", err)
	}
	bin := buildBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg, sock, nss, _ := loadConfig(t, t.TempDir(), fmt.Sprintf("m%d", os.Getpid()%100000), "")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("metrics:\n  enabled: false\n"), []byte(fmt.Sprintf("metrics:\n  enabled: true\n  port: %d\n", port)), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cleanupNamespaces(t, nss)
	startDaemon(t, bin, cfg, sock)
	if out, err := exec.Command("ip", "netns", "exec", nss[0], "ping", "-n", "-q", "-c", "5", "-i", "0.05", "-w", "10", "10.254.0.2").CombinedOutput(); err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %v", resp.Status, err)
	}
	for _, h := range []string{"fabemu_lag_seconds", "fabemu_wake_lag_seconds", "fabemu_excess_lag_seconds", "fabemu_fabric_latency_seconds"} {
		if !strings.Contains(string(body), "# TYPE "+h+" histogram\n") || !strings.Contains(string(body), h+`_bucket{le="0.001"}`) {
			t.Errorf("%s is not a histogram with a 1 ms bucket", h)
		}
	}
	if strings.Contains(string(body), "quantile=") {
		t.Error("a metric still carries a quantile label")
	}
	lint := exec.Command(promtool, "check", "metrics")
	lint.Stdin = bytes.NewReader(body)
	out, err := lint.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
