package netnsutil

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/privtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"fe-a", true}, {"", false}, {".", false}, {"..", false}, {"a/b", false}, {"a\x00", false}} {
		if err := checkName(tc.name); (err == nil) != tc.ok {
			t.Errorf("checkName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	if err := Create("a/b"); err == nil {
		t.Error("Create accepted a name with a slash")
	}
	if err := Do("", func() error { return nil }); err == nil {
		t.Error("Do accepted an empty name")
	}
}

func TestCreateDoDelete(t *testing.T) {
	privtest.Require(t, "network namespaces")
	name := fmt.Sprintf("fe-nsu-%06x", rand.Uint32()&0xffffff)
	if err := Create(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if Exists(name) {
			_ = Delete(name)
		}
	})
	if !Exists(name) {
		t.Fatalf("%s not visible after Create", Path(name))
	}
	if err := Create(name); err == nil {
		t.Fatal("second Create with the same name succeeded")
	}

	// The test's own thread must still be in the original namespace.
	runtime.LockOSThread()
	here, err := netns.Get()
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	target, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if here.Equal(target) {
		t.Fatal("the calling thread was left inside the new namespace")
	}

	var inside []string
	err = Do(name, func() error {
		cur, err := netns.Get()
		if err != nil {
			return err
		}
		defer cur.Close()
		if !cur.Equal(target) {
			return fmt.Errorf("Do ran fn outside %s", name)
		}
		links, err := netlink.LinkList()
		for _, l := range links {
			inside = append(inside, l.Attrs().Name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(inside) != 1 || inside[0] != "lo" {
		t.Fatalf("links in a fresh namespace = %v, want [lo]", inside)
	}

	h, err := Handle(name)
	if err != nil {
		t.Fatal(err)
	}
	links, err := h.LinkList()
	h.Close()
	if err != nil || len(links) != 1 {
		t.Fatalf("Handle sees %d links (err %v), want 1", len(links), err)
	}

	if err := Delete(name); err != nil {
		t.Fatal(err)
	}
	if Exists(name) {
		t.Fatal("namespace still present after Delete")
	}
	if err := Do(name, func() error { return nil }); err == nil {
		t.Fatal("Do into a deleted namespace succeeded")
	}
}

// TestHolders: a process started inside a namespace is one of its
// holders; an empty namespace has none.
func TestHolders(t *testing.T) {
	privtest.Require(t, "network namespaces")
	name := fmt.Sprintf("fe-hold-%d", rand.IntN(1_000_000))
	if err := Create(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Delete(name) })
	if pids, err := Holders(name); err != nil || len(pids) != 0 {
		t.Fatalf("empty namespace: holders %v, %v", pids, err)
	}
	cmd := exec.Command("ip", "netns", "exec", name, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatalf("ip netns exec: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids, err := Holders(name)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(pids, cmd.Process.Pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("holders %v do not include the process %d running in %s", pids, cmd.Process.Pid, name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunDirSharedWithIproute2: after Create, Dir is a shared mount point
// (as iproute2 leaves it), and a namespace made by `ip netns add` between
// our Create and Delete does not stop Delete.
func TestRunDirSharedWithIproute2(t *testing.T) {
	privtest.Require(t, "network namespaces")
	ours := fmt.Sprintf("fe-shr-%d", rand.IntN(1_000_000))
	theirs := ours + "-ip"
	if err := Create(ours); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Delete(ours) })
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	shared := false
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[4] == Dir && strings.Contains(line, " shared:") {
			shared = true
		}
	}
	if !shared {
		t.Fatalf("%s is not a shared mount point after Create:\n%s", Dir, mi)
	}
	if out, err := exec.Command("ip", "netns", "add", theirs).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", theirs).Run() })
	if err := Delete(ours); err != nil {
		t.Fatalf("Delete after ip netns add: %v", err)
	}
	if Exists(ours) {
		t.Fatalf("%s still there", ours)
	}
}
