// Package netnsutil creates, enters and deletes named Linux network
// namespaces: the kind `ip netns` lists, kept alive by a bind mount at
// /run/netns/NAME.
//
// Entering a namespace is a property of an OS thread, not of a goroutine. Every
// function here therefore does its namespace switching on a fresh goroutine
// locked to its thread and switches back before unlocking; if switching back
// fails, the goroutine exits still locked so the Go runtime discards the thread
// instead of reusing it in the wrong namespace. The caller's own thread is
// never moved.
package netnsutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Dir is where named network namespaces are bind-mounted (iproute2's convention).
const Dir = "/run/netns"

// Path returns the bind-mount path of the named namespace.
func Path(name string) string { return filepath.Join(Dir, name) }

// checkName rejects names that are not a single path element.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') || strings.ContainsRune(name, 0) {
		return fmt.Errorf("netns: invalid namespace name %q", name)
	}
	return nil
}

// Exists reports whether the named namespace's bind mount exists.
func Exists(name string) bool {
	if checkName(name) != nil {
		return false
	}
	_, err := os.Stat(Path(name))
	return err == nil
}

// onThread runs fn on a new goroutine locked to its OS thread and waits for
// it. fn returns whether the thread is still in its original namespace; if not,
// the thread is left locked so the runtime terminates it with the goroutine.
func onThread(fn func() (restored bool, err error)) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := fn()
		if restored {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// Create makes a new, empty network namespace named name (visible to
// `ip netns`). It fails if one with that name already exists.
func Create(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if Exists(name) {
		return fmt.Errorf("netns: namespace %q already exists", name)
	}
	if err := sharedRunDir(); err != nil {
		return err
	}
	return onThread(func() (bool, error) {
		origin, err := netns.Get()
		if err != nil {
			return true, fmt.Errorf("netns: current namespace: %w", err)
		}
		defer origin.Close()
		created, err := netns.NewNamed(name) // unshares this thread's netns
		if err == nil {
			created.Close()
		}
		if rerr := netns.Set(origin); rerr != nil {
			return false, errors.Join(err, fmt.Errorf("netns: returning to the original namespace: %w", rerr))
		}
		if err != nil {
			// NewNamed may leave an empty mount-point file behind.
			_ = unixUnmountRemove(name)
			return true, fmt.Errorf("netns: creating %q: %w", name, err)
		}
		return true, nil
	})
}

// unixUnmountRemove removes a possibly half-made namespace bind mount.
func unixUnmountRemove(name string) error {
	if err := netns.DeleteNamed(name); err == nil {
		return nil
	}
	return os.Remove(Path(name))
}

// Delete unmounts and removes the named namespace. The namespace itself
// disappears when no process and no open handle refers to it any more; its
// virtual devices (TAP, veth, dummy) are then destroyed by the kernel.
func Delete(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := netns.DeleteNamed(name); err != nil {
		return fmt.Errorf("netns: deleting %q: %w", name, err)
	}
	return nil
}

// Do runs fn with the calling thread's network namespace set to the named
// namespace, on a dedicated locked OS thread, and returns fn's error. Sockets
// fn opens stay in that namespace after Do returns. Goroutines fn starts do not
// inherit the namespace.
func Do(name string, fn func() error) error {
	if err := checkName(name); err != nil {
		return err
	}
	target, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("netns: opening %q: %w", name, err)
	}
	defer target.Close()
	return onThread(func() (bool, error) {
		origin, err := netns.Get()
		if err != nil {
			return true, fmt.Errorf("netns: current namespace: %w", err)
		}
		defer origin.Close()
		if err := netns.Set(target); err != nil {
			return true, fmt.Errorf("netns: entering %q: %w", name, err)
		}
		ferr := fn()
		if err := netns.Set(origin); err != nil {
			return false, errors.Join(ferr, fmt.Errorf("netns: leaving %q: %w", name, err))
		}
		return true, ferr
	})
}

// Handle returns a netlink handle whose requests act inside the named
// namespace (no thread switching needed). The caller must Close it.
func Handle(name string) (*netlink.Handle, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("netns: opening %q: %w", name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netns: netlink handle in %q: %w", name, err)
	}
	return h, nil
}

// Holders returns the processes whose network namespace is the named
// namespace (by the device and inode of /proc/PID/ns/net), so that a
// namespace a live process uses is never deleted as stale. Processes that
// vanish while it looks are skipped.
func Holders(name string) ([]int, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var want unix.Stat_t
	if err := unix.Stat(Path(name), &want); err != nil {
		return nil, fmt.Errorf("netns: %w", &os.PathError{Op: "stat", Path: Path(name), Err: err})
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("netns: listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil {
			continue
		}
		if st.Dev == want.Dev && st.Ino == want.Ino {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// sharedRunDir makes Dir a mount point with shared propagation, as
// iproute2's `ip netns add` does, so that namespace files mounted and
// unmounted by fabemu and by `ip netns` running alongside propagate to
// each other: without it, an `ip netns add` during a run turns Dir into a
// mount point over fabemu's namespace files, which can then no longer be
// unmounted ("device or resource busy").
func sharedRunDir() error {
	if err := os.MkdirAll(Dir, 0o755); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	for madeMount := false; ; madeMount = true {
		err := unix.Mount("", Dir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if err != unix.EINVAL || madeMount {
			return fmt.Errorf("netns: making %s a shared mount: %w", Dir, err)
		}
		// Not a mount point yet: bind it onto itself first.
		if err := unix.Mount(Dir, Dir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("netns: making %s a mount point: %w", Dir, err)
		}
	}
}
