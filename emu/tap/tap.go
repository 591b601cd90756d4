// Package tap owns the daemon's TAP devices: the Linux network interfaces
// through which real applications, VMs and network stacks attach to the
// emulated fabric.
//
// It owns, per device:
//   - the device's life cycle: creation through netlink and /dev/net/tun
//     (name, MAC, MTU, owner and group, optional multi-queue flag and
//     persistence), optionally a move into a named network namespace (created on
//     demand) with IPv4/IPv6 addresses, bringing it up, reclaiming a stale device
//     of the same name left by a crashed run, and removal (device and any
//     namespace it created) on Close;
//   - the frame I/O: exactly one reader goroutine and one writer goroutine, so
//     the daemon never reorders a flow itself; the reader hands frames to a
//     bounded channel and stops reading when it is full, so the kernel's TAP
//     queue applies backpressure instead of the daemon dropping; the writer drains
//     a bounded queue;
//   - the boundary counters: frames and bytes in and out and every frame refused
//     by cause. Nothing is dropped without being counted.
//
// It does not know about the fabric, hosts or MAC ownership: the consumer of
// the inbound channel (the daemon's event loop) decides where a frame goes and
// calls Send on the destination device.
//
// Pitfalls handled here (see the netlink TAP notes in the design references):
// netlink's Tuntap ignores MTU, MAC and up state at creation, so they are set
// afterwards; setting Tuntap.Flags replaces the library's defaults, so IFF_NO_PI
// is always given explicitly; the queue fd is non-blocking and wrapped by
// os.NewFile, so it is registered with the Go runtime poller and Close really
// unblocks a pending Read.
package tap

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/emu/vnet"
	"github.com/fabemu/fabemu/internal/netnsutil"
	"github.com/fabemu/fabemu/tracefmt/ether"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Limits of Linux TAP devices.
const (
	// MaxNameLen is the longest interface name (IFNAMSIZ minus the NUL).
	MaxNameLen = unix.IFNAMSIZ - 1
	// MinMTU is the smallest MTU Linux accepts for IPv4 (RFC 791 §3.2: 68).
	MinMTU = 68
	// MaxMTU is the largest TAP MTU: 65535 minus the Ethernet header.
	MaxMTU = 65535 - ether.HeaderLen
	// DefaultMTU is used when Config.MTU is zero.
	DefaultMTU = 1500
	// DefaultTxQueueLen is the writer queue length when Config.TxQueueLen is zero.
	DefaultTxQueueLen = 256
)

// Config describes one TAP device.
type Config struct {
	// Name is the interface name (at most MaxNameLen bytes, no '%' template:
	// reclaiming needs a fixed name).
	Name string
	// MAC is the device's hardware address; nil keeps the kernel's random one.
	MAC net.HardwareAddr
	// MTU in bytes; 0 means DefaultMTU.
	MTU int
	// MultiQueue creates the device with IFF_MULTI_QUEUE so other processes
	// (e.g. a VM's vhost) can attach further queues. This package itself reads
	// and writes one queue only: several readers could reorder a flow when the
	// kernel re-steers it between queues.
	MultiQueue bool
	// Offload opens the device with IFF_VNET_HDR and turns on checksum and
	// TCP segmentation offload (TUNSETOFFLOAD: TUN_F_CSUM, TSO4, TSO6,
	// TSO_ECN), so the kernel hands TCP super-frames of up to 64 KB with a
	// virtio_net_hdr (emu/vnet) and takes them back the same way. Frames
	// read carry the header in Frame.Offload; a frame sent to a device
	// without offloads is segmented and checksummed in software.
	Offload bool
	// Owner and Group are the uid and gid allowed to attach to the device
	// without CAP_NET_ADMIN (TUNSETOWNER, TUNSETGROUP); 0 means root.
	Owner, Group uint32
	// Persist keeps the device when its last queue is closed (TUNSETPERSIST),
	// as needed when an unprivileged process attaches later. Close deletes it
	// either way; persistent devices left by a crash are reclaimed by the next
	// Create with the same name.
	Persist bool
	// Netns, if set, names a network namespace (as `ip netns` lists) to move
	// the device into. It is created if absent and then deleted by Close; an
	// existing namespace is used as it is and left in place.
	Netns string
	// Addrs are IPv4/IPv6 addresses with prefix length configured on the
	// device (inside Netns if set). IPv6 addresses skip duplicate address
	// detection so they are usable at once.
	Addrs []netip.Prefix
	// TxQueueLen bounds the writer queue in frames; 0 means DefaultTxQueueLen.
	TxQueueLen int
	// InlineWriteMax: Send writes a frame of at most this many bytes
	// itself, on the caller's goroutine, when the writer is idle with an
	// empty queue and no such frame was sent in the last millisecond
	// (a stream of small frames goes through the writer), instead of
	// waking the writer (a thread wake-up, tens of
	// microseconds on an idle VM); frames still leave in Send order. The
	// caller then spends the write system call, in which the receiving
	// namespace's stack handles the frame. 0 never writes inline.
	InlineWriteMax int
	// Logger receives reclaim notices and rate-limited refusal logs; nil
	// discards them.
	Logger *zap.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("tap: config: Name is empty")
	case len(c.Name) > MaxNameLen:
		return fmt.Errorf("tap: config: Name %q is %d bytes, longer than %d", c.Name, len(c.Name), MaxNameLen)
	case strings.ContainsAny(c.Name, "%/: \t\n\x00"):
		return fmt.Errorf("tap: config: Name %q contains a character not allowed in an interface name ('%%', '/', ':', space)", c.Name)
	case c.MAC != nil && len(c.MAC) != 6:
		return fmt.Errorf("tap: config %s: MAC %v is not a 48-bit address", c.Name, c.MAC)
	case c.MAC != nil && c.MAC[0]&1 != 0:
		return fmt.Errorf("tap: config %s: MAC %v is a multicast address", c.Name, c.MAC)
	case c.MTU != 0 && (c.MTU < MinMTU || c.MTU > MaxMTU):
		return fmt.Errorf("tap: config %s: MTU %d outside %d..%d bytes", c.Name, c.MTU, MinMTU, MaxMTU)
	case c.InlineWriteMax < 0:
		return fmt.Errorf("tap: config %s: InlineWriteMax %d is negative", c.Name, c.InlineWriteMax)
	case c.TxQueueLen < 0:
		return fmt.Errorf("tap: config %s: TxQueueLen %d is negative", c.Name, c.TxQueueLen)
	}
	for _, p := range c.Addrs {
		if !p.IsValid() {
			return fmt.Errorf("tap: config %s: invalid address prefix %v", c.Name, p)
		}
	}
	return nil
}

// Device is one TAP device with its reader and writer: a frame port
// (emu/frameport) whose source and sink is the kernel's TAP queue. Its
// methods are safe for concurrent use.
type Device struct {
	name      string
	mac       ether.MAC
	mtu       atomic.Int64 // followed at runtime: see checkSize
	mtuNext   atomic.Int64 // unix ns before which the MTU is not asked again
	offload   bool
	hdroom    int    // vnet.HeaderLen with offloads, else 0
	netns     string // namespace the device lives in, "" for the creator's
	ownNetns  bool   // Close deletes netns
	reclaimed bool
	log       *zap.Logger

	file *os.File // queue 0, non-blocking, registered with the runtime poller
	raw  syscall.RawConn
	// rmu is held by whoever reads a frame and hands it over: the reader
	// (not while it waits for the device to be readable) or a PickUp.
	rmu sync.Mutex
	// fdMu keeps Close from closing the fd under a PickUp, which reads
	// the raw descriptor (the poller's read lock is the parked reader's).
	fdMu      sync.RWMutex
	fd        int           // -1 once closed
	pickArm   atomic.Bool   // an inline write since the last PickUp
	pickUps   atomic.Uint64 // frames PickUp handed over
	pickTries atomic.Uint64 // PickUp calls armed by an inline write
	pool      *frameport.Pool
	bufLen    int    // frame buffer: headroom, the longest frame any MTU allows, one spare byte
	segBuf    []byte // writer-owned scratch for software segmentation

	txMu     sync.RWMutex // guards txClosed against Send racing Close
	txClosed bool
	txq      chan *Frame
	// pending counts the frames Send has taken and not yet written: those
	// queued, the writer's current one, an inline write. Send writes
	// inline only when it moves pending from 0 to 1.
	pending      atomic.Int64
	inlineMax    int
	inlineWrites atomic.Uint64
	lastSend     atomic.Int64         // unix ns of the last Send of a small frame (inline candidate)
	inlineQuiet  int64                // ns: inlineQuiet (tests set 0)
	room         frameport.RoomSignal // OnWriteRoom's callback

	startOnce sync.Once
	started   atomic.Bool
	done      chan struct{} // closed by Close: the reader gives up a blocked hand-over
	readerWG  sync.WaitGroup
	writerWG  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	readErr   atomic.Pointer[error]

	ctr counters
}

// A Device is a frame port.
var _ frameport.Port = (*Device)(nil)
var _ frameport.WriteRoomer = (*Device)(nil)
var _ frameport.KernelDropper = (*Device)(nil)
var _ frameport.PickerUpper = (*Device)(nil)

// Create reclaims a stale device of the same name, creates the TAP device,
// sets its MAC and MTU, moves it into cfg.Netns if set, adds cfg.Addrs and
// brings it up. Frame I/O starts with Start. On error nothing it created is
// left behind.
func Create(cfg Config) (d *Device, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	d = &Device{
		name:    cfg.Name,
		netns:   cfg.Netns,
		log:     cfg.Logger,
		offload: cfg.Offload,
		done:    make(chan struct{}),
	}
	d.inlineMax, d.inlineQuiet = cfg.InlineWriteMax, int64(inlineQuiet)
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	d.mtu.Store(int64(mtu))
	if d.log == nil {
		d.log = zap.NewNop()
	}
	d.log = d.log.With(zap.String("tap", cfg.Name))
	qlen := cfg.TxQueueLen
	if qlen == 0 {
		qlen = DefaultTxQueueLen
	}
	d.txq = make(chan *Frame, qlen)
	// Buffers fit the largest frame of any MTU, so an MTU raised at
	// runtime (or a super-frame) never truncates a read; the spare byte
	// shows an over-long one.
	if d.offload {
		d.hdroom = vnet.HeaderLen
	}
	d.bufLen = d.hdroom + ether.MaxFrameLen(maxSuperPayload) + 1
	d.pool = frameport.NewPoolHeadroom(d, d.bufLen, d.hdroom)
	d.segBuf = make([]byte, 0, d.bufLen)

	// Undo on failure, in reverse order.
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()

	if cfg.Netns != "" && !netnsutil.Exists(cfg.Netns) {
		if err := netnsutil.Create(cfg.Netns); err != nil {
			return nil, fmt.Errorf("tap %s: %w", cfg.Name, err)
		}
		d.ownNetns = true
		undo = append(undo, func() { _ = netnsutil.Delete(cfg.Netns) })
		if err := markNetns(cfg.Netns); err != nil {
			return nil, fmt.Errorf("tap %s: %w", cfg.Name, err)
		}
	}

	// The device is created in our own namespace, so a stale device there
	// blocks TUNSETIFF and one in the target namespace blocks the move.
	host, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("tap %s: netlink: %w", cfg.Name, err)
	}
	defer host.Close()
	if err := d.reclaim(host, ""); err != nil {
		return nil, err
	}
	target := host
	if cfg.Netns != "" {
		target, err = netnsutil.Handle(cfg.Netns)
		if err != nil {
			return nil, fmt.Errorf("tap %s: %w", cfg.Name, err)
		}
		defer target.Close()
		if err := d.reclaim(target, cfg.Netns); err != nil {
			return nil, err
		}
	}

	// Always pass flags: they replace the library's defaults, and without
	// IFF_NO_PI every frame would carry a 4-byte packet-information header.
	flags := netlink.TUNTAP_NO_PI
	if cfg.Offload {
		flags |= netlink.TUNTAP_VNET_HDR
	}
	if cfg.MultiQueue {
		flags |= netlink.TUNTAP_MULTI_QUEUE
	} else {
		// IFF_TUN_EXCL: fail instead of attaching to a device someone else
		// created between our reclaim and this call.
		flags |= netlink.TUNTAP_ONE_QUEUE | netlink.TUNTAP_TUN_EXCL
	}
	tt := &netlink.Tuntap{
		LinkAttrs:  netlink.LinkAttrs{Name: cfg.Name},
		Mode:       netlink.TUNTAP_MODE_TAP,
		Flags:      flags,
		Queues:     1, // keep the fd (Queues 0 closes it)
		NonPersist: !cfg.Persist,
		Owner:      cfg.Owner,
		Group:      cfg.Group,
	}
	if err := host.LinkAdd(tt); err != nil {
		return nil, fmt.Errorf("tap %s: creating TAP device: %w", cfg.Name, err)
	}
	if len(tt.Fds) != 1 {
		for _, f := range tt.Fds {
			f.Close()
		}
		return nil, fmt.Errorf("tap %s: creating TAP device: got %d queue fds, want 1", cfg.Name, len(tt.Fds))
	}
	d.file = tt.Fds[0]
	undo = append(undo, func() {
		_ = d.file.Close()
		d.deleteLink()
	})
	raw, err := d.file.SyscallConn()
	if err == nil {
		err = raw.Control(func(fd uintptr) { d.fd = int(fd) })
	}
	if err != nil {
		return nil, fmt.Errorf("tap %s: the queue's descriptor: %w", cfg.Name, err)
	}
	d.raw = raw

	if cfg.Offload {
		if err := setOffload(d.file); err != nil {
			return nil, fmt.Errorf("tap %s: %w", cfg.Name, err)
		}
	}

	link, err := host.LinkByName(cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("tap %s: looking up the new device: %w", cfg.Name, err)
	}
	if cfg.MAC != nil {
		if err := host.LinkSetHardwareAddr(link, cfg.MAC); err != nil {
			return nil, fmt.Errorf("tap %s: setting MAC %v: %w", cfg.Name, cfg.MAC, err)
		}
	}
	if err := host.LinkSetMTU(link, mtu); err != nil {
		return nil, fmt.Errorf("tap %s: setting MTU %d: %w", cfg.Name, mtu, err)
	}
	// The mark that lets a later run reclaim the device after a crash
	// (reclaim deletes nothing without it). The alias moves with the
	// device into its namespace.
	if err := host.LinkSetAlias(link, Mark); err != nil {
		return nil, fmt.Errorf("tap %s: marking the device as fabemu's: %w", cfg.Name, err)
	}
	if cfg.Netns != "" {
		ns, err := netns.GetFromName(cfg.Netns)
		if err != nil {
			return nil, fmt.Errorf("tap %s: opening namespace %s: %w", cfg.Name, cfg.Netns, err)
		}
		err = host.LinkSetNsFd(link, int(ns))
		ns.Close()
		if err != nil {
			return nil, fmt.Errorf("tap %s: moving into namespace %s: %w", cfg.Name, cfg.Netns, err)
		}
		if link, err = target.LinkByName(cfg.Name); err != nil {
			return nil, fmt.Errorf("tap %s: looking up the device in namespace %s: %w", cfg.Name, cfg.Netns, err)
		}
	}
	for _, p := range cfg.Addrs {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
		if p.Addr().Is6() {
			a.Flags = unix.IFA_F_NODAD
		}
		if err := target.AddrAdd(link, a); err != nil {
			return nil, fmt.Errorf("tap %s: adding address %v: %w", cfg.Name, p, err)
		}
	}
	if err := target.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("tap %s: bringing up: %w", cfg.Name, err)
	}
	copy(d.mac[:], link.Attrs().HardwareAddr)
	return d, nil
}

// Mark is the interface alias fabemu gives every TAP device it creates:
// only a device carrying it is reclaimed as left by an earlier run, so a
// user's persistent TAP of the same name is never deleted.
const Mark = "fabemu"

// Marked reports whether link carries fabemu's Mark.
func Marked(link netlink.Link) bool { return link.Attrs().Alias == Mark }

// markNetns marks a namespace fabemu created: its loopback device gets
// the alias Mark (a namespace has no other place for a label that lives
// exactly as long as it does).
func markNetns(nsName string) error {
	h, err := netnsutil.Handle(nsName)
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetAlias(lo, Mark)
	}
	if err != nil {
		return fmt.Errorf("marking namespace %s as fabemu's: %w", nsName, err)
	}
	return nil
}

// NetnsIsFabemus reports whether the named namespace is one fabemu
// created (its loopback carries Mark) and holds nothing but loopback and
// TAP devices carrying Mark. Otherwise what says what is there: a user's
// namespace (`ip netns add`), or a device fabemu did not create.
func NetnsIsFabemus(nsName string) (ok bool, what string, err error) {
	h, err := netnsutil.Handle(nsName)
	if err != nil {
		return false, "", err
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return false, "", err
	}
	marked := false
	for _, l := range links {
		switch {
		case l.Attrs().Name == "lo":
			marked = Marked(l)
		case l.Type() == "tuntap" && Marked(l):
		default:
			return false, fmt.Sprintf("the %s device %s, which fabemu did not create", l.Type(), l.Attrs().Name), nil
		}
	}
	if !marked {
		return false, "no fabemu mark: its loopback has no alias " + strconv.Quote(Mark), nil
	}
	return true, "", nil
}

// reclaim deletes a leftover TAP device named d.name in the namespace h acts
// in (nsName, "" for our own), and refuses to touch anything else.
func (d *Device) reclaim(h *netlink.Handle, nsName string) error {
	where := "this namespace"
	if nsName != "" {
		where = "namespace " + nsName
	}
	link, err := h.LinkByName(d.name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("tap %s: looking for a stale device in %s: %w", d.name, where, err)
	}
	tt, ok := link.(*netlink.Tuntap)
	if !ok {
		return fmt.Errorf("tap: name clash: link %s exists in %s and is a %s, not a TAP; refusing to delete it", d.name, where, link.Type())
	}
	if !Marked(link) {
		return fmt.Errorf("tap: name clash: %s device %s in %s was not created by fabemu (its alias is %q, not %q); refusing to delete it: delete it yourself (ip link del %s) or choose another name",
			tt.Mode, d.name, where, link.Attrs().Alias, Mark, d.name)
	}
	if busy, err := attached(tt, nsName); err != nil {
		return fmt.Errorf("tap %s: checking whether the existing %s device in %s is in use: %w", d.name, tt.Mode, where, err)
	} else if busy {
		return fmt.Errorf("tap: name clash: %s device %s in %s is in use (a running process has it open); refusing to delete it", tt.Mode, d.name, where)
	}
	if err := h.LinkDel(link); err != nil {
		return fmt.Errorf("tap %s: deleting the stale %s device in %s: %w", d.name, tt.Mode, where, err)
	}
	d.reclaimed = true
	d.log.Warn("reclaimed stale device left by an earlier run", zap.String("netns", nsName), zap.Stringer("mode", tt.Mode))
	return nil
}

// deleteLink removes the device from wherever it lives; a device that is
// already gone (non-persistent after its queue closed) is fine.
func (d *Device) deleteLink() error {
	var h *netlink.Handle
	var err error
	if d.netns != "" {
		if !netnsutil.Exists(d.netns) {
			return nil
		}
		h, err = netnsutil.Handle(d.netns)
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return fmt.Errorf("tap %s: deleting: %w", d.name, err)
	}
	defer h.Close()
	link, err := h.LinkByName(d.name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			// Not found: already gone with its last queue, or (if the move
			// into the namespace failed) still in ours.
			if d.netns != "" {
				if l, err := netlink.LinkByName(d.name); err == nil {
					if _, ok := l.(*netlink.Tuntap); ok {
						return netlink.LinkDel(l)
					}
				}
			}
			return nil
		}
		return fmt.Errorf("tap %s: deleting: %w", d.name, err)
	}
	if _, ok := link.(*netlink.Tuntap); !ok {
		return fmt.Errorf("tap %s: deleting: link is now a %s, not our TAP; left alone", d.name, link.Type())
	}
	if err := h.LinkDel(link); err != nil {
		return fmt.Errorf("tap %s: deleting: %w", d.name, err)
	}
	return nil
}

// Name returns the interface name.
func (d *Device) Name() string { return d.name }

// MAC returns the device's hardware address (the one applications behind
// the TAP use as source).
func (d *Device) MAC() ether.MAC { return d.mac }

// MTU returns the MTU in bytes that frames are validated against: the
// configured one, or the device's own once it was changed at runtime and a
// larger frame showed it.
func (d *Device) MTU() int { return int(d.mtu.Load()) }

// Offload reports whether the device was opened with offloads
// (Config.Offload).
func (d *Device) Offload() bool { return d.offload }

// setOffload sets the virtio_net_hdr to little-endian, its size, and the
// offloads the daemon takes: checksum and TCP segmentation.
func setOffload(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		if e := unix.IoctlSetPointerInt(int(fd), unix.TUNSETVNETLE, 1); e != nil {
			ioErr = fmt.Errorf("TUNSETVNETLE: %w", e)
			return
		}
		if e := unix.IoctlSetPointerInt(int(fd), unix.TUNSETVNETHDRSZ, vnet.HeaderLen); e != nil {
			ioErr = fmt.Errorf("TUNSETVNETHDRSZ: %w", e)
			return
		}
		if e := unix.IoctlSetInt(int(fd), unix.TUNSETOFFLOAD, unix.TUN_F_CSUM|unix.TUN_F_TSO4|unix.TUN_F_TSO6|unix.TUN_F_TSO_ECN); e != nil {
			ioErr = fmt.Errorf("TUNSETOFFLOAD: %w", e)
		}
	})
	return errors.Join(err, ioErr)
}

// maxSuperPayload is the longest payload of a super-frame: one IP packet
// (its 16-bit total length). It also sizes every frame buffer, which is
// thus larger than the longest frame of any MTU.
const maxSuperPayload = 65535

// mtuRecheck bounds how often a frame too long for the cached MTU makes
// the device ask the kernel for its current MTU.
const mtuRecheck = 100 * time.Millisecond

// checkSize validates frame against the device's MTU, or against
// maxSuperPayload for a super-frame. A frame too long for the cached MTU makes it ask the
// kernel (at most every mtuRecheck): an MTU raised at runtime (ip link
// set mtu) is then followed instead of black-holing larger frames.
func (d *Device) checkSize(frame []byte, off vnet.Header) (ether.Header, error) {
	if off.IsGSO() {
		return ether.Validate(frame, maxSuperPayload)
	}
	h, err := ether.Validate(frame, int(d.mtu.Load()))
	if !errors.Is(err, ether.ErrTooLong) {
		return h, err
	}
	now := time.Now().UnixNano()
	next := d.mtuNext.Load()
	if now < next || !d.mtuNext.CompareAndSwap(next, now+int64(mtuRecheck)) {
		return h, err
	}
	mtu, lerr := d.kernelMTU()
	if lerr != nil {
		d.log.Warn("cannot read the device's MTU", zap.Error(lerr))
		return h, err
	}
	if old := d.mtu.Swap(int64(mtu)); old != int64(mtu) {
		d.log.Info("following the device's MTU changed at runtime", zap.Int64("from", old), zap.Int("to", mtu))
	}
	return ether.Validate(frame, mtu)
}

// kernelMTU asks the kernel for the device's MTU.
func (d *Device) kernelMTU() (int, error) {
	a, err := d.linkAttrs()
	if err != nil {
		return 0, err
	}
	return a.MTU, nil
}

// KernelDrops returns the frames the kernel dropped at the device, from
// its link statistics (frameport.KernelDropper). A TAP's kernel side
// transmits what the daemon reads and receives what it writes, so in is
// the device's tx_dropped (its queue to the daemon was full) and out its
// rx_dropped (the stack dropped a frame the daemon wrote; Linux counts
// there frames of a protocol nothing listens for, too).
func (d *Device) KernelDrops() (in, out uint64, err error) {
	a, err := d.linkAttrs()
	if err != nil {
		return 0, 0, fmt.Errorf("TAP %s: link statistics: %w", d.name, err)
	}
	if a.Statistics == nil {
		return 0, 0, fmt.Errorf("TAP %s: the kernel sent no link statistics", d.name)
	}
	return a.Statistics.TxDropped, a.Statistics.RxDropped, nil
}

// linkAttrs asks the kernel for the device's link attributes.
func (d *Device) linkAttrs() (*netlink.LinkAttrs, error) {
	var h *netlink.Handle
	var err error
	if d.netns != "" {
		h, err = netnsutil.Handle(d.netns)
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return nil, err
	}
	defer h.Close()
	link, err := h.LinkByName(d.name)
	if err != nil {
		return nil, err
	}
	return link.Attrs(), nil
}

// Netns returns the name of the namespace the device lives in, "" for the
// creator's own.
func (d *Device) Netns() string { return d.netns }

// Reclaimed reports whether Create deleted a stale device of the same name.
func (d *Device) Reclaimed() bool { return d.reclaimed }

// Close stops accepting frames, lets the writer drain its queue, stops the
// reader (a pending read returns at once), then deletes the device and, if
// Create made it, the namespace. It waits for both goroutines and is
// idempotent; frames still undelivered in the inbound channel remain the
// consumer's to Release.
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		d.startOnce.Do(func() {}) // a later Start must not launch goroutines
		d.txMu.Lock()
		d.txClosed = true
		close(d.txq)
		d.txMu.Unlock()
		if !d.started.Load() {
			for f := range d.txq {
				d.refuseOut(f, CauseClosed, nil)
			}
		}
		d.writerWG.Wait() // drains the queue; bounded by TxQueueLen writes

		close(d.done)
		errs := []error{}
		d.fdMu.Lock()
		d.fd = -1
		err := d.file.Close()
		d.fdMu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("tap %s: closing queue: %w", d.name, err))
		}
		d.readerWG.Wait()
		if err := d.deleteLink(); err != nil {
			errs = append(errs, err)
		}
		if d.ownNetns {
			if err := netnsutil.Delete(d.netns); err != nil {
				errs = append(errs, fmt.Errorf("tap %s: %w", d.name, err))
			}
		}
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// Err returns the error that stopped the reader early (for example the
// device was deleted from outside), or nil.
func (d *Device) Err() error {
	if p := d.readErr.Load(); p != nil {
		return *p
	}
	return nil
}
