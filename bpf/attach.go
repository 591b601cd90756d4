//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/fabemu/fabemu/internal/netnsutil"
)

// Attach says how programs are attached to an interface.
type Attach string

const (
	// AttachAuto uses tcx where the kernel has it and clsact otherwise.
	AttachAuto Attach = "auto"
	// AttachTCX uses tcx links only (Linux 6.6 and later).
	AttachTCX Attach = "tcx"
	// AttachTC uses direct-action filters under a clsact qdisc.
	AttachTC Attach = "tc"
)

// ParseAttach checks an attach mode's name.
func ParseAttach(s string) (Attach, error) {
	switch a := Attach(s); a {
	case AttachAuto, AttachTCX, AttachTC:
		return a, nil
	case "":
		return AttachAuto, nil
	}
	return "", fmt.Errorf("attach mode %q: want auto, tcx or tc", s)
}

// tcPriority is the filter priority fabemu's clsact filters use, chosen to
// stay clear of the small numbers people pick by hand.
const tcPriority = 0xfab

// BusyError is an attach under clsact refused because fabemu's filters
// (priority tcPriority, handle 1) are already on the interface: another
// fabemu capture or order holds them. Adding ours beside them would fail
// with "file exists" (and the first to stop would remove the clsact qdisc
// under the other); tcx links, which chain, have no such limit.
type BusyError struct{ Iface, Netns string }

func (e *BusyError) Error() string {
	where := e.Iface
	if e.Netns != "" {
		where += " in namespace " + e.Netns
	}
	return fmt.Sprintf("interface %s: another fabemu capture or order is attached there under clsact (tc filter priority %#x): stop it first, or attach both with --attach tcx (Linux 6.6+), whose programs chain", where, tcPriority)
}

// hooks is a pair of programs attached to one interface's ingress and
// egress; detach undoes exactly what attach did.
type hooks struct {
	netns       string // named network namespace, "" for the current one
	iface       string
	ifindex     int
	mode        Attach // what was used: AttachTCX or AttachTC
	links       []link.Link
	filters     []*netlink.BpfFilter
	addedClsact bool
}

// inNetns runs fn in the named network namespace, or here when ns is "".
// Interface indexes, tcx links and netlink requests all resolve in the
// calling thread's namespace.
func inNetns(ns string, fn func() error) error {
	if ns == "" {
		return fn()
	}
	return netnsutil.Do(ns, fn)
}

// attachHooks attaches ingress and egress programs to the named interface
// of namespace ns ("" for the current one).
func attachHooks(ns, ifname string, ingress, egress *ebpf.Program, mode Attach) (*hooks, error) {
	var h *hooks
	err := inNetns(ns, func() (err error) {
		h, err = attachHere(ns, ifname, ingress, egress, mode)
		return err
	})
	return h, err
}

func attachHere(ns, ifname string, ingress, egress *ebpf.Program, mode Attach) (*hooks, error) {
	iface, err := net.InterfaceByName(ifname)
	if err != nil {
		if ns != "" {
			return nil, fmt.Errorf("interface %s in namespace %s: %w", ifname, ns, err)
		}
		return nil, fmt.Errorf("interface %s: %w", ifname, err)
	}
	h := &hooks{netns: ns, iface: ifname, ifindex: iface.Index}
	if mode != AttachTC {
		err := h.attachTCX(ingress, egress)
		if err == nil {
			h.mode = AttachTCX
			return h, nil
		}
		h.detachHere()
		if mode == AttachTCX || !errors.Is(err, ebpf.ErrNotSupported) {
			if errors.Is(err, ebpf.ErrNotSupported) {
				return nil, fmt.Errorf("interface %s: tcx links need Linux 6.6 or later (try --attach tc): %w", iface.Name, err)
			}
			return nil, fmt.Errorf("interface %s: attaching with tcx: %w", iface.Name, err)
		}
	}
	if err := h.attachTC(ingress, egress); err != nil {
		h.detachHere()
		var busy *BusyError
		if errors.As(err, &busy) {
			return nil, err
		}
		return nil, fmt.Errorf("interface %s: attaching under clsact (needs Linux 4.5 or later with sch_clsact): %w", iface.Name, err)
	}
	h.mode = AttachTC
	return h, nil
}

func (h *hooks) attachTCX(ingress, egress *ebpf.Program) error {
	for _, p := range []struct {
		prog *ebpf.Program
		at   ebpf.AttachType
	}{{ingress, ebpf.AttachTCXIngress}, {egress, ebpf.AttachTCXEgress}} {
		l, err := link.AttachTCX(link.TCXOptions{Interface: h.ifindex, Program: p.prog, Attach: p.at})
		if err != nil {
			return err
		}
		h.links = append(h.links, l)
	}
	return nil
}

func (h *hooks) attachTC(ingress, egress *ebpf.Program) error {
	qdisc := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: h.ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := netlink.QdiscAdd(qdisc); err == nil {
		h.addedClsact = true
	} else if !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("adding clsact qdisc: %w", err)
	}
	for _, p := range []struct {
		prog   *ebpf.Program
		parent uint32
		name   string
	}{{ingress, netlink.HANDLE_MIN_INGRESS, "fabemu-ingress"}, {egress, netlink.HANDLE_MIN_EGRESS, "fabemu-egress"}} {
		f := &netlink.BpfFilter{
			FilterAttrs: netlink.FilterAttrs{LinkIndex: h.ifindex, Parent: p.parent, Handle: 1,
				Protocol: unix.ETH_P_ALL, Priority: tcPriority},
			Fd: p.prog.FD(), Name: p.name, DirectAction: true,
		}
		if err := netlink.FilterAdd(f); err != nil {
			if errors.Is(err, unix.EEXIST) {
				return &BusyError{Iface: h.iface, Netns: h.netns}
			}
			return fmt.Errorf("adding %s filter: %w", p.name, err)
		}
		h.filters = append(h.filters, f)
	}
	return nil
}

// detach removes what was attached, and the clsact qdisc if attach added
// it. It returns the first error and carries on past it.
func (h *hooks) detach() error {
	if len(h.filters) == 0 && !h.addedClsact {
		return h.detachHere() // closing links needs no namespace
	}
	return inNetns(h.netns, h.detachHere)
}

func (h *hooks) detachHere() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, l := range h.links {
		keep(l.Close())
	}
	h.links = nil
	for _, f := range h.filters {
		if err := netlink.FilterDel(f); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
			keep(fmt.Errorf("removing %s filter: %w", f.Name, err))
		}
	}
	h.filters = nil
	if h.addedClsact {
		qdisc := &netlink.GenericQdisc{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: h.ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
			QdiscType:  "clsact",
		}
		if err := netlink.QdiscDel(qdisc); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENODEV) {
			keep(fmt.Errorf("removing clsact qdisc: %w", err))
		}
		h.addedClsact = false
	}
	return first
}

// sumPerCPU adds up the per-CPU values of one key of a per-CPU array.
func sumPerCPU(m *ebpf.Map, key uint32) (uint64, error) {
	var vals []uint64
	if err := m.Lookup(key, &vals); err != nil {
		return 0, err
	}
	var n uint64
	for _, v := range vals {
		n += v
	}
	return n, nil
}
