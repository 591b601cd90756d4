package tap

import (
	"errors"
	"fmt"
	"os"

	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// attached reports whether some process has a queue of the existing TUN/TAP
// device tt open, i.e. whether it is live rather than left over by a crash.
//
// The kernel reports the number of attached queues over netlink only for
// multi-queue devices (IFLA_TUN_NUM_QUEUES). For a single-queue device we ask
// the kernel directly: TUNSETIFF on a fresh /dev/net/tun fd, with the device's
// own mode and queue flags, fails with EBUSY while another fd is attached
// (drivers/net/tun.c, tun_attach). If the probe attaches instead, the device
// was idle; closing the probe fd detaches again, and the caller deletes the
// device.
func attached(tt *netlink.Tuntap, nsName string) (bool, error) {
	if tt.Flags&netlink.TUNTAP_MULTI_QUEUE != 0 {
		return tt.Queues > 0, nil
	}
	probe := func() (bool, error) {
		// The fd's namespace decides which device the name refers to, so it
		// must be opened on a thread inside nsName.
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, err
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq(tt.Name)
		if err != nil {
			return false, err
		}
		ifr.SetUint16(uint16(tt.Mode) | uint16(tt.Flags&netlink.TUNTAP_NO_PI))
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, unix.EBUSY):
			return true, nil
		}
		return false, fmt.Errorf("probe TUNSETIFF: %w", os.NewSyscallError("ioctl", err))
	}
	if nsName == "" {
		return probe()
	}
	var busy bool
	err := netnsutil.Do(nsName, func() (err error) {
		busy, err = probe()
		return err
	})
	return busy, err
}

// InUse reports whether a TAP or TUN device named name exists in the named
// namespace ("" for this one) and a running process has it open. A missing
// namespace or device is not in use.
func InUse(name, nsName string) (bool, error) {
	var h *netlink.Handle
	var err error
	if nsName != "" {
		if !netnsutil.Exists(nsName) {
			return false, nil
		}
		h, err = netnsutil.Handle(nsName)
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return false, err
	}
	defer h.Close()
	link, err := h.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return false, nil
		}
		return false, err
	}
	tt, ok := link.(*netlink.Tuntap)
	if !ok {
		return false, nil
	}
	return attached(tt, nsName)
}
