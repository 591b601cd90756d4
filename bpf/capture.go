//go:build linux

package bpf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/sys/unix"
)

// MaxSnaplen is the largest snap length the capture program copies
// (MAX_SNAP in capture.c).
const MaxSnaplen = 1536

// DefaultSnaplen copies the Ethernet, IP and TCP headers with options.
const DefaultSnaplen = 128

// Filter selects the frames to capture; every term that is set must hold.
// The zero Filter takes every frame.
type Filter struct {
	Host  netip.Addr // source or destination address
	Port  uint16     // source or destination TCP/UDP port, 0 for any
	Proto int        // IP protocol number, -1 for any
}

// AnyFilter takes every frame.
var AnyFilter = Filter{Proto: -1}

// ParseFilter reads filter terms, each "host ADDR", "port N" or
// "proto tcp|udp|icmp|icmp6|N" (a '=' may replace the space).
func ParseFilter(terms []string) (Filter, error) {
	f := AnyFilter
	for _, t := range terms {
		k, v, ok := strings.Cut(strings.TrimSpace(t), "=")
		if !ok {
			k, v, ok = strings.Cut(strings.TrimSpace(t), " ")
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return f, fmt.Errorf("filter %q: want host ADDR, port N or proto NAME", t)
		}
		switch k {
		case "host":
			a, err := netip.ParseAddr(v)
			if err != nil {
				return f, fmt.Errorf("filter %q: %v", t, err)
			}
			f.Host = a.Unmap()
		case "port":
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || n == 0 {
				return f, fmt.Errorf("filter %q: port must be 1..65535", t)
			}
			f.Port = uint16(n)
		case "proto":
			switch strings.ToLower(v) {
			case "tcp":
				f.Proto = 6
			case "udp":
				f.Proto = 17
			case "icmp":
				f.Proto = 1
			case "icmp6", "icmpv6":
				f.Proto = 58
			default:
				n, err := strconv.ParseUint(v, 10, 8)
				if err != nil {
					return f, fmt.Errorf("filter %q: protocol must be tcp, udp, icmp, icmp6 or 0..255", t)
				}
				f.Proto = int(n)
			}
		default:
			return f, fmt.Errorf("filter %q: unknown term %q (want host, port or proto)", t, k)
		}
	}
	return f, nil
}

var protoNames = map[int]string{6: "tcp", 17: "udp", 1: "icmp", 58: "icmp6"}

// String is the filter's terms in ParseFilter's syntax joined by " and ",
// "" for AnyFilter.
func (f Filter) String() string {
	var s []string
	if f.Host.IsValid() {
		s = append(s, "host "+f.Host.String())
	}
	if f.Port != 0 {
		s = append(s, "port "+strconv.Itoa(int(f.Port)))
	}
	if f.Proto >= 0 {
		name, ok := protoNames[f.Proto]
		if !ok {
			name = strconv.Itoa(f.Proto)
		}
		s = append(s, "proto "+name)
	}
	return strings.Join(s, " and ")
}

// CaptureConfig says where and what to capture.
type CaptureConfig struct {
	Netns     string // named network namespace of Iface, "" for the current one
	Iface     string
	Filter    Filter
	Snaplen   int    // 1..MaxSnaplen; 0 means DefaultSnaplen
	RingBytes int    // ring buffer size, rounded up to a power of two; 0 means 4 MiB
	Attach    Attach // "" means AttachAuto
}

// CaptureStats account for every frame the filter took: Matched =
// Captured + Dropped, and Captured = Written + Discarded.
type CaptureStats struct {
	Iface  string `json:"iface"`
	Attach Attach `json:"attach"`
	Filter string `json:"filter,omitempty"`
	// Matched counts frames that passed the filter; Captured those put in
	// the ring buffer, Dropped those it had no room for.
	Matched  uint64 `json:"matched"`
	Captured uint64 `json:"captured"`
	Dropped  uint64 `json:"dropped"`
	// Written counts frames written to the file, Ingress and Egress by
	// direction; Discarded those read after the --count limit.
	Written   uint64 `json:"written"`
	Ingress   uint64 `json:"ingress"`
	Egress    uint64 `json:"egress"`
	Discarded uint64 `json:"discarded"`
	// Bytes sums the written frames' original lengths; Truncated counts
	// those the snap length cut.
	Bytes     uint64  `json:"bytes"`
	Truncated uint64  `json:"truncated"`
	Snaplen   int     `json:"snaplen"`
	DurationS float64 `json:"duration_s"`
}

// Capture is a loaded and attached capture program.
type Capture struct {
	cfg   CaptureConfig
	objs  captureObjects
	hooks *hooks
	rd    *ringbuf.Reader
}

// OpenCapture loads the capture program and attaches it to the
// interface's ingress and egress. The caller must Close it.
func OpenCapture(cfg CaptureConfig) (*Capture, error) {
	if cfg.Snaplen == 0 {
		cfg.Snaplen = DefaultSnaplen
	}
	if cfg.Snaplen < 1 || cfg.Snaplen > MaxSnaplen {
		return nil, fmt.Errorf("snap length %d: must be 1..%d", cfg.Snaplen, MaxSnaplen)
	}
	if cfg.RingBytes == 0 {
		cfg.RingBytes = 4 << 20
	}
	if cfg.RingBytes < 4096 || cfg.RingBytes > 1<<30 {
		return nil, fmt.Errorf("ring buffer size %d: must be 4 KiB..1 GiB", cfg.RingBytes)
	}
	if cfg.Attach == "" {
		cfg.Attach = AttachAuto
	}
	spec, err := loadCapture()
	if err != nil {
		return nil, err
	}
	ring := 4096
	for ring < cfg.RingBytes {
		ring <<= 1
	}
	cfg.RingBytes = ring
	spec.Maps[captureMapEvents].MaxEntries = uint32(ring)
	f := cfg.Filter
	set := func(name string, v any) {
		if err == nil {
			err = spec.Variables[name].Set(v)
		}
	}
	set(captureVarSnaplen, uint32(cfg.Snaplen))
	if f.Host.IsValid() {
		var host [16]byte
		if f.Host.Is4() {
			a := f.Host.As4()
			copy(host[:], a[:])
			set(captureVarFilterFamily, uint8(4))
		} else {
			host = f.Host.As16()
			set(captureVarFilterFamily, uint8(6))
		}
		set(captureVarFilterHost, host)
	}
	set(captureVarFilterPort, f.Port)
	if f.Proto >= 0 {
		set(captureVarFilterProto, uint16(f.Proto))
	}
	if err != nil {
		return nil, fmt.Errorf("configuring the capture program: %w", err)
	}
	c := &Capture{cfg: cfg}
	if err := spec.LoadAndAssign(&c.objs, nil); err != nil {
		return nil, loadError("capture", err)
	}
	c.hooks, err = attachHooks(cfg.Netns, cfg.Iface, c.objs.CaptureIngress, c.objs.CaptureEgress, cfg.Attach)
	if err != nil {
		c.objs.Close()
		return nil, err
	}
	c.rd, err = ringbuf.NewReader(c.objs.Events)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("opening the ring buffer: %w", err)
	}
	return c, nil
}

// loadError explains the usual reasons a program does not load.
func loadError(what string, err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("loading the %s program: the kernel's verifier refused it: %v", what, ve)
	}
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("loading the %s program: %w (needs root or CAP_BPF and CAP_NET_ADMIN)", what, err)
	}
	return fmt.Errorf("loading the %s program: %w", what, err)
}

// Mode is how the programs were attached: AttachTCX or AttachTC.
func (c *Capture) Mode() Attach { return c.hooks.mode }

// Close detaches the programs and frees everything. It is safe to call
// more than once.
func (c *Capture) Close() error {
	var err error
	if c.hooks != nil {
		err = c.hooks.detach()
		c.hooks = nil
	}
	if c.rd != nil {
		c.rd.Close()
		c.rd = nil
	}
	c.objs.Close()
	return err
}

// counters reads the kernel's per-CPU counters.
func (c *Capture) counters() (matched, captured, dropped uint64, err error) {
	if matched, err = sumPerCPU(c.objs.Counters, 0); err != nil {
		return
	}
	if captured, err = sumPerCPU(c.objs.Counters, 1); err != nil {
		return
	}
	dropped, err = sumPerCPU(c.objs.Counters, 2)
	return
}

// eventHeader is the fixed part of struct event in capture.c.
const eventHeader = 24

// monoToWall converts CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns) to
// wall-clock time, by the offset between the two clocks now.
func monoToWall() func(uint64) time.Time {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	off := time.Now().UnixNano() - ts.Nano()
	return func(mono uint64) time.Time { return time.Unix(0, int64(mono)+off) }
}

// Frame is one frame the capture program copied into the ring buffer.
type Frame struct {
	// Time is when the program saw the frame (wall clock).
	Time time.Time
	// OrigLen is the frame's length on the wire; Data its head, at most
	// the snap length, valid only until the callback returns.
	OrigLen int
	Data    []byte
	// Egress is set for a frame the interface sent, clear for one it
	// received.
	Egress bool
}

// Counts are the kernel's counters of the capture program: Matched =
// Captured + Dropped (frames the ring buffer had no room for).
type Counts struct {
	Matched  uint64 `json:"matched"`
	Captured uint64 `json:"captured"`
	Dropped  uint64 `json:"dropped"`
}

// Counts reads the kernel's counters; it may be called from any goroutine
// while the capture is open.
func (c *Capture) Counts() (Counts, error) {
	var n Counts
	var err error
	n.Matched, n.Captured, n.Dropped, err = c.counters()
	return n, err
}

// Config is the capture's configuration, with the defaults filled in.
func (c *Capture) Config() CaptureConfig { return c.cfg }

// consume reads the ring buffer and hands each frame to handle until ctx
// is done or handle returns false; then it detaches the programs and
// hands over what they left in the ring, until every record the kernel
// counted as captured has been handed over (programs that were running
// during the detach may still commit a few) or a second passed. It
// returns the kernel's final counters, the records handed over, the
// detach error and the read error.
func (c *Capture) consume(ctx context.Context, handle func(Frame) bool) (n Counts, handed uint64, derr, rerr error) {
	wall := monoToWall()
	var rec ringbuf.Record
	more := true
	give := func() {
		raw := rec.RawSample
		if len(raw) < eventHeader {
			return
		}
		ts := binary.NativeEndian.Uint64(raw[0:])
		orig := binary.NativeEndian.Uint32(raw[12:])
		capLen := binary.NativeEndian.Uint32(raw[16:])
		dir := binary.NativeEndian.Uint32(raw[20:]) & 1
		data := raw[eventHeader:]
		if int(capLen) < len(data) {
			data = data[:capLen]
		}
		handed++
		if !handle(Frame{Time: wall(ts), OrigLen: int(orig), Data: data, Egress: dir == 1}) {
			more = false
		}
	}
	for ctx.Err() == nil && more {
		c.rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
		err := c.rd.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			rerr = fmt.Errorf("reading the ring buffer: %w", err)
			break
		}
		give()
	}
	derr = c.hooks.detach()
	deadline := time.Now().Add(time.Second)
	for {
		c.rd.SetDeadline(time.Now())
		for c.rd.ReadInto(&rec) == nil {
			give()
		}
		var err error
		if n, err = c.Counts(); err != nil {
			if rerr == nil {
				rerr = fmt.Errorf("reading the capture counters: %w", err)
			}
			return
		}
		if handed >= n.Captured || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stream hands every captured frame to fn, on the calling goroutine, until
// ctx is done; then it detaches the programs and hands over what they
// left in the ring buffer. The accounting counts the frames handed over as
// Written (fn decides what becomes of them).
func (c *Capture) Stream(ctx context.Context, fn func(Frame)) (*CaptureStats, error) {
	start := time.Now()
	st := &CaptureStats{Iface: c.cfg.Iface, Attach: c.hooks.mode, Filter: c.cfg.Filter.String(), Snaplen: c.cfg.Snaplen}
	n, _, derr, rerr := c.consume(ctx, func(f Frame) bool {
		st.Written++
		st.Bytes += uint64(f.OrigLen)
		if len(f.Data) < f.OrigLen {
			st.Truncated++
		}
		if f.Egress {
			st.Egress++
		} else {
			st.Ingress++
		}
		fn(f)
		return true
	})
	st.Matched, st.Captured, st.Dropped = n.Matched, n.Captured, n.Dropped
	st.DurationS = time.Since(start).Seconds()
	if rerr != nil {
		return st, rerr
	}
	return st, derr
}

// WritePcapng writes captured frames to out as pcapng until ctx is done
// or, when count > 0, count frames are written. It then detaches the
// programs, drains the ring buffer and returns the accounting, with one
// pcapng interface per direction (named after the interface, described
// as ingress or egress, each packet also flagged inbound or outbound).
func (c *Capture) WritePcapng(ctx context.Context, out io.Writer, count uint64) (*CaptureStats, error) {
	start := time.Now()
	st := &CaptureStats{Iface: c.cfg.Iface, Attach: c.hooks.mode, Filter: c.cfg.Filter.String(), Snaplen: c.cfg.Snaplen}
	mkIface := func(dir string) pcapgo.NgInterface {
		return pcapgo.NgInterface{
			Name:                c.cfg.Iface,
			Description:         fmt.Sprintf("%s %s (eBPF %s)", c.cfg.Iface, dir, c.hooks.mode),
			Filter:              c.cfg.Filter.String(),
			OS:                  "Linux",
			LinkType:            layers.LinkTypeEthernet,
			SnapLength:          uint32(c.cfg.Snaplen),
			TimestampResolution: 9,
		}
	}
	w, err := pcapgo.NewNgWriterInterface(out, mkIface("ingress"), pcapgo.NgWriterOptions{
		SectionInfo: pcapgo.NgSectionInfo{Application: "fabemu capture", OS: "Linux"}})
	if err != nil {
		return nil, err
	}
	egressID, err := w.AddInterface(mkIface("egress"))
	if err != nil {
		return nil, err
	}
	flags := [2]pcapgo.NgEpbFlags{{Direction: pcapgo.NgEpbFlagDirectionInbound}, {Direction: pcapgo.NgEpbFlagDirectionOutbound}}
	var werr error
	n, _, derr, rerr := c.consume(ctx, func(f Frame) bool {
		if count > 0 && st.Written >= count || werr != nil {
			st.Discarded++
			return false
		}
		dir := 0
		if f.Egress {
			dir = 1
		}
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: f.OrigLen, InterfaceIndex: dir * egressID}
		if werr = w.WritePacketWithOptions(ci, f.Data, pcapgo.NgPacketOptions{Flags: &flags[dir]}); werr != nil {
			st.Discarded++
			return false
		}
		st.Written++
		st.Bytes += uint64(f.OrigLen)
		if len(f.Data) < f.OrigLen {
			st.Truncated++
		}
		if f.Egress {
			st.Egress++
		} else {
			st.Ingress++
		}
		return count == 0 || st.Written < count
	})
	st.Matched, st.Captured, st.Dropped = n.Matched, n.Captured, n.Dropped
	if werr == nil {
		werr = rerr
	}
	st.DurationS = time.Since(start).Seconds()
	end := time.Now()
	for id, n := range []uint64{st.Ingress, st.Egress} {
		_ = w.WriteInterfaceStats(id, pcapgo.NgInterfaceStatistics{
			LastUpdate: end, StartTime: start, EndTime: end,
			PacketsReceived: n, PacketsDropped: pcapgo.NgNoValue64,
			Comment: fmt.Sprintf("ring buffer drops on both directions: %d", st.Dropped),
		})
	}
	if err := w.Flush(); err != nil && werr == nil {
		werr = err
	}
	if werr == nil {
		werr = derr
	}
	return st, werr
}
