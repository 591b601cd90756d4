package fabric

import (
	"fmt"
	"unsafe"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/units"
)

// The switching techniques of fabric.switching.
const (
	SwitchingVCT      = "vct"
	SwitchingWormhole = "wormhole"
)

// Defaults of the wormhole parameters (paper 001 §4.1: 16-flit messages,
// here of 256 bytes; lanes of a few flits, §3: "Channel buffers may allow
// data flits to continue flowing for some time, until they become full").
const (
	DefaultFlitBytes = 16
	DefaultLaneFlits = 4
	// MaxLaneFlits bounds fabric.lane_flits.
	MaxLaneFlits = 1 << 20
)

// Wormhole reports whether the fabric uses wormhole switching.
func (c Config) Wormhole() bool { return c.Switching == SwitchingWormhole }

// Flit returns the bytes per flit under wormhole switching (a
// configuration built in code may leave FlitBytes 0 for the default; a
// file or --set may not: the nonzero tag).
func (c Config) Flit() int {
	if c.FlitBytes <= 0 {
		return DefaultFlitBytes
	}
	return int(c.FlitBytes)
}

// Lane returns the flits of every lane buffer under wormhole switching
// (0 in a configuration built in code: the default).
func (c Config) Lane() int {
	if c.LaneFlits <= 0 {
		return DefaultLaneFlits
	}
	return c.LaneFlits
}

// Flits returns how many flits a packet of size bytes is under wormhole
// switching: its bytes in whole flits (the last one padded), at least one.
func (c Config) Flits(size int) int {
	fb := c.Flit()
	return max(1, (size+fb-1)/fb)
}

// validateSwitching checks fabric.switching and the wormhole parameters
// against the switch architecture arch.
func (c Config) validateSwitching(arch ArchInfo) error {
	switch c.Switching {
	case "", SwitchingVCT:
		return nil
	case SwitchingWormhole:
	default:
		return fmt.Errorf("fabric.switching %q: want vct or wormhole", c.Switching)
	}
	if arch.Name != "iq" {
		return fmt.Errorf("fabric.switching wormhole is defined for input-buffered switches with virtual channels whose crossbar feeds the link, not fabric.switch %s: set fabric.switch=iq", c.Switch)
	}
	if c.Allocator != "rr" {
		return fmt.Errorf("fabric.switching wormhole allocates lanes to waiting heads first come first served and multiplexes each link flit by flit in round-robin order; fabric.allocator %s is a packet crossbar allocator it does not use: set fabric.allocator=rr", c.Allocator)
	}
	if c.FlitBytes < 0 || c.FlitBytes > MaxBufferBytes {
		return fmt.Errorf("fabric.flit_bytes %v: want 1 byte to %v", c.FlitBytes, units.Bytes(MaxBufferBytes))
	}
	if c.LaneFlits < 0 || c.LaneFlits > MaxLaneFlits {
		return fmt.Errorf("fabric.lane_flits %d: want 1 to %d flits", c.LaneFlits, MaxLaneFlits)
	}
	if t, ok := SerializationTimeChecked(int64(c.Flit()), c.DataRate()); !ok || t <= 0 {
		return fmt.Errorf("fabric.flit_bytes %v: a flit must take between 1ps and %v on a fabric.link_rate %v link", c.Flit(), MaxDelay, c.LinkRate)
	}
	return nil
}

// wormholeCheck refuses, when the fabric is built, what wormhole switching
// cannot do with this router and these injection ports.
func (f *Fabric) wormholeCheck() error {
	if f.router.Bubble() > 0 {
		return fmt.Errorf("fabric.switching wormhole cannot use routing.escape bubble: bubble flow control is a virtual cut-through technique (paper 002 §3: a packet enters a ring only when the lane has room for whole packets), and wormhole lanes hold a few flits of one packet; use routing.escape dor (dateline lanes) or updown")
	}
	if f.cfg.InjectionPorts > 1 && f.cfg.InjectionShared {
		return fmt.Errorf("fabric.switching wormhole models physical injection channels only: make nic.injection_queues physical, or use fabric.switching vct for virtual ones")
	}
	return nil
}

// flitTime is the time one flit takes on a link.
func (f *Fabric) flitTime() des.Time { return serTime(int64(f.cfg.Flit()), f.dataRate) }

// wormholeLanes returns the capacity in flits of every lane of a switch
// input or NIC under wormhole switching.
func wormholeLanes(nVL int, cfg Config) []int32 {
	caps := make([]int32, nVL)
	for v := range caps {
		caps[v] = int32(cfg.Lane())
	}
	return caps
}

// wormholePortBytes is the wormhole state of one port pair (its input's
// lanes and its output's lane states), for the memory estimate.
func wormholePortBytes(nVL int) int64 {
	perLane := int64(unsafe.Sizeof(whLane{})) + 1 + 4 + 8 + 4 // whLane; whOut's state, from, nic, sent
	return int64(nVL)*perLane + int64(unsafe.Sizeof(whOut{}))
}
