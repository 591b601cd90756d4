package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/privtest"
)

// fabemu run --require-valid exits non-zero when an interval of the run
// was not real-time valid and 0 when every one was, and the final report
// says which, with the cause. The overloaded run is background load the
// model cannot follow with pacing.overload none (backpressure cannot slow
// background load: it is the experiment); its cause is the busy loop's
// (behind, or preempted where other processes left the loop's thread
// without a CPU half the time). The light run (background load 2e-5) has
// a lag threshold of one second: it is valid at the daemon's 1 ms too,
// but a crowded machine can leave the model's thread without a CPU for
// milliseconds, a genuine invalid interval this test is not about.
func TestRunRequireValid(t *testing.T) {
	privtest.Require(t, "TAP devices and network namespaces")
	bin := buildBinary(t)
	for i, tc := range []struct {
		name, extra string
		valid       bool
	}{
		{"light", "pacing: {lag_threshold: 1s}\nbackground:\n  enabled: true\n  traffic: {load: 0.00002}\n", true},
		{"overloaded", "pacing: {overload: none}\nbackground:\n  enabled: true\n  traffic: {load: 0.5}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, sock, nss, _ := loadConfig(t, t.TempDir(), fmt.Sprintf("v%d", os.Getpid()%10000*10+i), tc.extra)
			cleanupNamespaces(t, nss)
			d := startDaemon(t, bin, cfg, sock, "--require-valid")
			deadline := time.Now().Add(30 * time.Second)
			for st := daemonStatus(t, bin, sock); st.Pacer.Intervals < 2; st = daemonStatus(t, bin, sock) {
				if time.Now().After(deadline) {
					t.Fatalf("%d intervals closed in 30 s", st.Pacer.Intervals)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-d.done:
			case <-time.After(30 * time.Second):
				t.Fatalf("daemon still running 30 s after SIGTERM\n%s", d.stderr)
			}
			log := d.stderr.String()
			var exit *exec.ExitError
			switch {
			case tc.valid && err != nil:
				t.Errorf("light run: %v\n%s", err, log)
			case tc.valid && !strings.Contains(log, "real time: every interval valid"):
				t.Errorf("light run: no final report of a valid run\n%s", log)
			case !tc.valid && !(errors.As(err, &exit) && exit.ExitCode() != 0):
				t.Errorf("overloaded run: exit %v, want non-zero\n%s", err, log)
			case !tc.valid && (!strings.Contains(log, "not real-time valid (--require-valid)") || !(strings.Contains(log, "invalid_behind") || strings.Contains(log, "invalid_preempted"))):
				t.Errorf("overloaded run: the log does not say it was not valid and why\n%s", log)
			}
			if t.Failed() {
				return
			}
			t.Logf("%s: exit %v; final report: %s", tc.name, err, lineWith(log, "real time:"))
		})
	}
}

// lineWith returns the first line of s containing sub.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
