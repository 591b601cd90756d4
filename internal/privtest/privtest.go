// Package privtest gates tests that need privileges (TAP devices, network
// namespaces, eBPF).
//
// A privileged test calls Require at its start. Without the privileges the
// test is skipped with a message naming what is missing; when the environment
// variable FABEMU_REQUIRE_PRIV is "1" (CI sets it) the test fails instead, so a
// CI runner that lost its privileges cannot pass by skipping everything.
package privtest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// EnvRequire is the environment variable that turns skips into failures.
const EnvRequire = "FABEMU_REQUIRE_PRIV"

// TUNPath is the clone device TAP devices are created through.
const TUNPath = "/dev/net/tun"

// Linux capability numbers (include/uapi/linux/capability.h).
const (
	capNetAdmin = 12
	capSysAdmin = 21
)

// Check reports why privileged tests cannot run here, or nil if they can:
// the process must be root with CAP_NET_ADMIN and CAP_SYS_ADMIN effective
// (TAP creation, netlink changes, named network namespaces) and be able to
// open /dev/net/tun.
func Check() error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("effective uid is %d, not 0", uid)
	}
	capEff, err := effectiveCaps()
	if err != nil {
		return err
	}
	for _, c := range []struct {
		bit  uint
		name string
	}{{capNetAdmin, "CAP_NET_ADMIN"}, {capSysAdmin, "CAP_SYS_ADMIN"}} {
		if capEff&(1<<c.bit) == 0 {
			return fmt.Errorf("%s is not in the effective capability set", c.name)
		}
	}
	f, err := os.OpenFile(TUNPath, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("cannot open %s: %v", TUNPath, err)
	}
	return f.Close()
}

// Require skips t (or fails it when FABEMU_REQUIRE_PRIV=1) unless Check
// passes. what names the feature the test needs, e.g. "TAP devices".
func Require(t testing.TB, what string) {
	t.Helper()
	err := Check()
	if err == nil {
		return
	}
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("needs root for %s: %v (%s=1, so this is a failure, not a skip)", what, err, EnvRequire)
	}
	t.Skipf("needs root for %s: %v (set %s=1 to fail instead of skipping)", what, err, EnvRequire)
}

// effectiveCaps reads the CapEff mask from /proc/self/status.
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading capabilities: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status: bad CapEff %q: %v", strings.TrimSpace(v), err)
			}
			return caps, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("/proc/self/status: %v", err)
	}
	return 0, fmt.Errorf("/proc/self/status has no CapEff line")
}
