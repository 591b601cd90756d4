package nic

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/injection"
	"github.com/fabemu/fabemu/internal/units"
	"github.com/fabemu/fabemu/reorder"
)

// DeliveryMode says how packets are delivered to the destination host
// (DESIGN "The NIC and end-to-end control").
type DeliveryMode string

// The delivery modes.
const (
	// DeliveryAuto follows routing.mode: deterministic routing gives
	// DeliveryDeterministic, adaptive routing DeliveryAdaptiveOOO.
	DeliveryAuto DeliveryMode = ""
	// DeliveryDeterministic forces deterministic routing (the escape
	// function only): in order by construction.
	DeliveryDeterministic DeliveryMode = "deterministic"
	// DeliveryAdaptiveOOO forces adaptive routing and delivers packets as
	// they arrive, measuring their disorder (paper 004 "Adap-OOO").
	DeliveryAdaptiveOOO DeliveryMode = "adaptive-ooo"
	// DeliveryAdaptiveInOrder forces adaptive routing and restores order
	// at the destination with rearrangement buffers, ACK/NACK end-to-end
	// control and an injection policy (paper 004 §3).
	DeliveryAdaptiveInOrder DeliveryMode = "adaptive-inorder"
)

// ParseDeliveryMode reads a delivery mode name.
func ParseDeliveryMode(s string) (DeliveryMode, error) {
	switch m := DeliveryMode(s); m {
	case DeliveryDeterministic, DeliveryAdaptiveOOO, DeliveryAdaptiveInOrder:
		return m, nil
	}
	return "", fmt.Errorf("delivery mode %q: want deterministic, adaptive-ooo or adaptive-inorder", s)
}

// IBAckBytes is the wire size of an InfiniBand ACK: a header-only packet
// of LRH 8 + BTH 12 + AETH 4 + ICRC 4 + VCRC 2 bytes. A NACK is the same
// packet with a NAK code in the AETH.
const IBAckBytes = 30

// DefaultReorder is the rearrangement memory used when none is given:
// dynamic 256 KiB per NIC with at most 128 KiB per connection, the
// setting of paper 004 §4.4 that comes within a few percent of Adap-OOO
// with a sixteenth of the memory of static 32 KiB buffers.
const DefaultReorder = "dynamic:256KiB,cap=128KiB"

// DeliveryConfig is the end-to-end delivery control of the NICs (paper
// 004 §3). Zero values mean the documented defaults.
type DeliveryConfig struct {
	Mode      DeliveryMode     `yaml:"mode" json:"mode" doc:"deterministic (escape routing only, in order by construction), adaptive-ooo (adaptive routing, deliver on arrival, measure disorder) or adaptive-inorder (adaptive routing + rearrangement buffers + ACK/NACK + injection policy); forces routing.mode; empty = follow routing.mode" paper:"004 §3, §4.3"`
	Reorder   string           `yaml:"reorder" json:"reorder" doc:"rearrangement memory per destination NIC in adaptive-inorder: static:<per conn>, dynamic:<pool>,cap=<per conn> or unlimited (e.g. static:2KiB, static:32KiB, dynamic:256KiB,cap=128KiB, dynamic:4MiB,cap=1MiB); empty = dynamic:256KiB,cap=128KiB" paper:"004 §3.2, §4.3-4.4"`
	Injection injection.Config `yaml:"injection" json:"injection"`
	PSNBits   uint             `yaml:"psn_bits" json:"psn_bits" unit:"bits" doc:"width of the packet sequence numbers; they wrap and are compared with serial arithmetic; left out, 24 (InfiniBand)" nonzero:"2 to 32 bits (leave the key out for the default, 24)"`
	AckBytes  units.Bytes      `yaml:"ack_bytes" json:"ack_bytes" unit:"bytes" doc:"wire size of an <ACK sn> packet; left out, 30 (InfiniBand header-only packet: LRH 8 + BTH 12 + AETH 4 + ICRC 4 + VCRC 2)" paper:"004 §3.1" nonzero:"1 to 4096 bytes (leave the key out for the default, 30B)"`
	NackBytes units.Bytes      `yaml:"nack_bytes" json:"nack_bytes" unit:"bytes" doc:"wire size of a <NACK sn> packet; left out, 30 (as an ACK, with a NAK code in the AETH)" paper:"004 §3.1" nonzero:"1 to 4096 bytes (leave the key out for the default, 30B)"`
	// Order metering (RFC 4737 / RFC 5236).
	OrderStreams int `yaml:"order_streams" json:"order_streams" unit:"streams" doc:"source-destination streams whose order is metered (the first ones to deliver a packet); left out, 1024; -1 = none" nonzero:"a positive stream count, or -1 for none (leave the key out for the default, 1024)"`
	OrderWindow  int `yaml:"order_window" json:"order_window" unit:"packets" doc:"RFC 4737 history window of each stream meter (exact extents up to this lateness), 1 to 1048576; left out, 256" nonzero:"1 to 1048576 packets (leave the key out for the default, 256)"`
}

// DefaultDeliveryConfig follows routing.mode, with the defaults of every
// other field spelled out.
func DefaultDeliveryConfig() DeliveryConfig {
	return DeliveryConfig{Reorder: DefaultReorder, Injection: injection.DefaultConfig(),
		PSNBits: reorder.DefaultPSNBits, AckBytes: IBAckBytes, NackBytes: IBAckBytes,
		OrderStreams: 1024, OrderWindow: 256}
}

// resolved fills the zero values with their defaults.
func (d DeliveryConfig) resolved() DeliveryConfig {
	if d.Reorder == "" {
		d.Reorder = DefaultReorder
	}
	if d.Injection.Policy == "" {
		d.Injection.Policy = injection.LI
	}
	if d.PSNBits == 0 {
		d.PSNBits = reorder.DefaultPSNBits
	}
	if d.AckBytes == 0 {
		d.AckBytes = IBAckBytes
	}
	if d.NackBytes == 0 {
		d.NackBytes = IBAckBytes
	}
	if d.OrderStreams == 0 {
		d.OrderStreams = 1024
	}
	if d.OrderWindow == 0 {
		d.OrderWindow = 256
	}
	return d
}

// Memory parses the rearrangement memory spec.
func (d DeliveryConfig) Memory() (reorder.MemorySpec, error) {
	return reorder.ParseMemorySpec(d.resolved().Reorder)
}

// Validate checks the delivery configuration.
func (d DeliveryConfig) Validate() error {
	if d.Mode != DeliveryAuto {
		if _, err := ParseDeliveryMode(string(d.Mode)); err != nil {
			return fmt.Errorf("nic.delivery.mode: %w", err)
		}
	}
	r := d.resolved()
	spec, err := reorder.ParseMemorySpec(r.Reorder)
	if err != nil {
		return fmt.Errorf("nic.delivery.reorder: %w", err)
	}
	if err := r.Injection.Validate(); err != nil {
		return fmt.Errorf("nic.delivery.%w", err)
	}
	if r.Injection.Resolved() == injection.LW && spec.Kind == reorder.Dynamic && d.Mode == DeliveryAdaptiveInOrder {
		return fmt.Errorf("nic.delivery.injection.policy lw needs static reorder memory, not %s: the window is the free space of the connection's own buffer, which dynamic memory does not fix in advance (paper 004 §4.3: ADAP-LW \"can not be applied when using dynamic memory allocation\"); use li", spec)
	}
	if err := (reorder.Space{Bits: r.PSNBits}).Validate(); err != nil {
		return fmt.Errorf("nic.delivery.psn_bits: %w", err)
	}
	if r.AckBytes < 1 || r.AckBytes > 4096 || r.NackBytes < 1 || r.NackBytes > 4096 {
		return fmt.Errorf("nic.delivery.ack_bytes %v / nack_bytes %v: want 1..4096", r.AckBytes, r.NackBytes)
	}
	if r.OrderStreams < -1 || r.OrderWindow < 1 || r.OrderWindow > reorder.MaxHistoryWindow {
		return fmt.Errorf("nic.delivery.order_streams %d / order_window %d: want streams >= -1 and window 1..%d", r.OrderStreams, r.OrderWindow, reorder.MaxHistoryWindow)
	}
	return nil
}

// Effective returns the delivery mode and the routing mode a run uses:
// deterministic delivery forces deterministic routing, the adaptive modes
// force adaptive routing, and the empty mode follows the routing mode.
func (d DeliveryConfig) Effective(rm route.Mode) (DeliveryMode, route.Mode) {
	switch d.Mode {
	case DeliveryDeterministic:
		return d.Mode, route.Deterministic
	case DeliveryAdaptiveOOO, DeliveryAdaptiveInOrder:
		return d.Mode, route.Adaptive
	}
	if rm == route.Adaptive {
		return DeliveryAdaptiveOOO, rm
	}
	return DeliveryDeterministic, rm
}
