//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/cilium/ebpf"
	"github.com/gopacket/gopacket/layers"
)

// OrderConfig says where to measure order.
type OrderConfig struct {
	Netns    string // named network namespace of Iface, "" for the current one
	Iface    string
	MaxFlows int    // flow table size (LRU); 0 means 16384
	Attach   Attach // "" means AttachAuto
}

// FlowOrder is the kernel's view of one TCP flow direction, by RFC 4737 on
// byte sequence numbers (see order.c for the exact rule).
type FlowOrder struct {
	// Flow is "TCP SRC:PORT > DST:PORT", as fabemu's pcap statistics
	// name flows; Direction the hook that first saw it.
	Flow      string `json:"flow"`
	Direction string `json:"direction"`
	// Packets and Bytes count every packet of the flow; DataSegments
	// those carrying sequence space.
	Packets      uint64 `json:"packets"`
	Bytes        uint64 `json:"bytes"`
	DataSegments uint64 `json:"data_segments"`
	// Received counts the segments that were not retransmissions (RFC
	// 4737's L); Reordered the late first copies (§3), ReorderedRatio
	// their share of Received (§4.1).
	Received        uint64  `json:"received"`
	Retransmissions uint64  `json:"retransmissions"`
	Reordered       uint64  `json:"reordered"`
	ReorderedRatio  float64 `json:"reordered_ratio"`
	// MaxByteOffset is the largest byte offset (§4.4) of a reordered
	// segment: the bytes received above it when it arrived.
	MaxByteOffset uint32 `json:"max_byte_offset"`
	// SequenceDiscontinuities counts in-order segments that skipped bytes;
	// ForgottenGaps gaps dropped when the per-flow slots were full.
	SequenceDiscontinuities uint64  `json:"sequence_discontinuities"`
	ForgottenGaps           uint64  `json:"forgotten_gaps"`
	DurationS               float64 `json:"duration_s"`
}

// Order is a loaded and attached order meter.
type Order struct {
	cfg   OrderConfig
	mode  Attach
	objs  orderObjects
	hooks *hooks
}

// OpenOrder loads the order meter and attaches it to the interface's
// ingress and egress. The caller must Close it.
func OpenOrder(cfg OrderConfig) (*Order, error) {
	if cfg.MaxFlows == 0 {
		cfg.MaxFlows = 16384
	}
	if cfg.MaxFlows < 1 || cfg.MaxFlows > 1<<20 {
		return nil, fmt.Errorf("flow table size %d: must be 1..%d", cfg.MaxFlows, 1<<20)
	}
	if cfg.Attach == "" {
		cfg.Attach = AttachAuto
	}
	spec, err := loadOrder()
	if err != nil {
		return nil, err
	}
	spec.Maps["flows"].MaxEntries = uint32(cfg.MaxFlows)
	o := &Order{cfg: cfg}
	if err := spec.LoadAndAssign(&o.objs, nil); err != nil {
		return nil, loadError("order", err)
	}
	o.hooks, err = attachHooks(cfg.Netns, cfg.Iface, o.objs.OrderIngress, o.objs.OrderEgress, cfg.Attach)
	if err != nil {
		o.objs.Close()
		return nil, err
	}
	o.mode = o.hooks.mode
	return o, nil
}

// Mode is how the programs were attached: AttachTCX or AttachTC.
func (o *Order) Mode() Attach { return o.mode }

// Detach stops measuring; the flow table stays readable until Close.
func (o *Order) Detach() error {
	if o.hooks == nil {
		return nil
	}
	err := o.hooks.detach()
	o.hooks = nil
	return err
}

// Close detaches the programs and frees everything. It is safe to call
// more than once.
func (o *Order) Close() error {
	err := o.Detach()
	o.objs.Close()
	return err
}

// Counters returns the TCP packets the meter saw and those of flows it
// could not give state to.
func (o *Order) Counters() (tcp, noState uint64, err error) {
	if tcp, err = sumPerCPU(o.objs.Ocounters, 0); err != nil {
		return
	}
	noState, err = sumPerCPU(o.objs.Ocounters, 1)
	return
}

// Flows reads the flow table, the flows with the most data segments
// first (then by name, so the order is stable).
func (o *Order) Flows() ([]FlowOrder, error) {
	var (
		k   orderFlowKey
		v   orderFlowState
		out []FlowOrder
	)
	it := o.objs.Flows.Iterate()
	for it.Next(&k, &v) {
		out = append(out, flowOrder(&k, &v))
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return out, fmt.Errorf("reading the flow table: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].DataSegments != out[j].DataSegments {
			return out[i].DataSegments > out[j].DataSegments
		}
		return out[i].Flow < out[j].Flow
	})
	return out, nil
}

func flowOrder(k *orderFlowKey, v *orderFlowState) FlowOrder {
	addr := func(b [16]byte) netip.Addr {
		if k.Family == 4 {
			return netip.AddrFrom4([4]byte(b[:4]))
		}
		return netip.AddrFrom16(b)
	}
	src := netip.AddrPortFrom(addr(k.Saddr), k.Sport)
	dst := netip.AddrPortFrom(addr(k.Daddr), k.Dport)
	f := FlowOrder{
		Flow:                    fmt.Sprintf("%s %s > %s", layers.IPProtocol(k.Proto), src, dst),
		Direction:               "ingress",
		Packets:                 v.Packets,
		Bytes:                   v.Bytes,
		DataSegments:            v.Segments,
		Received:                v.Segments - v.Retrans,
		Retransmissions:         v.Retrans,
		Reordered:               v.Reordered,
		MaxByteOffset:           v.MaxByteOffset,
		SequenceDiscontinuities: v.Discs,
		ForgottenGaps:           v.Forgotten,
		DurationS:               float64(v.LastNs-v.FirstNs) / 1e9,
	}
	if v.Dir == 1 {
		f.Direction = "egress"
	}
	if f.Received > 0 {
		f.ReorderedRatio = float64(f.Reordered) / float64(f.Received)
	}
	return f
}
