package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/privtest"
)

// TestTwoCapturesOnOneInterface: two `fabemu capture`s on one interface
// either both see its frames or the second is refused by name. tcx with
// tc, and tcx with tcx, chain (the programs return TCX_NEXT /
// TC_ACT_UNSPEC), so both count the same pings; two clsact captures would
// share fabemu's filter priority and handle, and the second is refused at
// once naming the interface and the way out (--attach tcx) instead of
// "attaching under clsact (needs Linux 4.5 or later …): file exists"; the
// first keeps capturing. (The issue saw 0 frames with tcx + tc.)
func TestTwoCapturesOnOneInterface(t *testing.T) {
	privtest.Require(t, "network namespaces and eBPF")
	bin := buildBinary(t)
	dir := t.TempDir()
	nsA, nsB, devA, devB := vethBetweenNamespaces(t, "f2c", "f2c")
	sh := func(args ...string) { t.Helper(); runOrFail(t, args...) }
	sh("ip", "-n", nsA, "addr", "add", "10.247.0.1/24", "dev", devA)
	sh("ip", "-n", nsB, "addr", "add", "10.247.0.2/24", "dev", devB)
	sh("ip", "-n", nsA, "link", "set", devA, "up")
	sh("ip", "-n", nsB, "link", "set", devB, "up")

	// capture starts a capture of devA for d; it returns a function that
	// waits for the end and returns the frames matched.
	capture := func(name, attach string, d time.Duration) func() int {
		out := filepath.Join(dir, name+".pcapng")
		cmd := exec.Command(bin, "capture", "--iface", devA, "--netns", nsA, "--attach", attach, "--out", out, "--duration", d.String())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return func() int {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("capture %s (%s): %v\n%s", name, attach, err, stderr.String())
			}
			m := regexp.MustCompile(`matched\s+(\d+) frames`).FindSubmatch(stdout.Bytes())
			if m == nil {
				t.Fatalf("capture %s: no matched line:\n%s", name, stdout.String())
			}
			n, _ := strconv.Atoi(string(m[1]))
			return n
		}
	}
	// The second capture starts a second after the first, the pings two
	// seconds after that: a generous settle for the attach, not a timing
	// assertion (an attach later than that only loses pings, which the
	// check reports).
	for _, pair := range [][2]string{{"tcx", "tc"}, {"tcx", "tcx"}, {"tc", "tcx"}} {
		first := capture("first-"+pair[0]+pair[1], pair[0], 8*time.Second)
		time.Sleep(time.Second)
		second := capture("second-"+pair[0]+pair[1], pair[1], 6*time.Second)
		time.Sleep(2 * time.Second)
		sh("ip", "netns", "exec", nsA, "ping", "-c", "3", "-i", "0.3", "-W", "2", "10.247.0.2")
		a, b := first(), second()
		t.Logf("%s then %s: %d and %d frames", pair[0], pair[1], a, b)
		if a < 6 || b < 6 {
			t.Errorf("%s then %s: the captures matched %d and %d frames, want both at least the 3 pings and 3 replies", pair[0], pair[1], a, b)
		}
	}
	first := capture("first-tctc", "tc", 6*time.Second)
	time.Sleep(time.Second)
	expectRefusal(t, bin, []string{"capture", "--iface", devA, "--netns", nsA, "--attach", "tc", "--out", filepath.Join(dir, "second-tctc.pcapng"), "--duration", "2s"},
		"interface "+devA+" in namespace "+nsA+": another fabemu capture or order is attached there under clsact", 0)
	sh("ip", "netns", "exec", nsA, "ping", "-c", "3", "-i", "0.3", "-W", "2", "10.247.0.2")
	if n := first(); n < 6 {
		t.Errorf("the first clsact capture matched %d frames after the second was refused, want at least 6", n)
	}
}
