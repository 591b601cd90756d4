package fabric

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/units"
)

// Config is the physical fabric: links, switch buffers and timing. The
// defaults are the InfiniBand subnet model of paper 004 §4.1.
type Config struct {
	LinkRate        units.BitRate `yaml:"link_rate" json:"link_rate" unit:"bit/s" doc:"signalling rate of every link (1X InfiniBand: 2.5Gbps)" paper:"004 §4.1"`
	LineCoding      string        `yaml:"line_coding" json:"line_coding" doc:"line code: 8b10b (80% efficient), 64b66b or none" paper:"004 §4.1"`
	LinkLength      float64       `yaml:"link_length_m" json:"link_length_m" unit:"m" doc:"cable length" paper:"004 §4.1"`
	PropagationPerM des.Time      `yaml:"propagation_per_m" json:"propagation_per_m" unit:"time/m" doc:"propagation delay per metre of cable (copper: 5ns)" paper:"004 §4.1"`
	RoutingDelay    des.Time      `yaml:"routing_delay" json:"routing_delay" unit:"time" doc:"switch routing time: forwarding table, arbiter and crossbar set-up" paper:"004 §4.1"`
	InputBuffer     units.Bytes   `yaml:"input_buffer" json:"input_buffer" unit:"bytes" doc:"input buffer per switch port, shared out to the virtual lanes" paper:"004 §4.1"`
	OutputBuffer    units.Bytes   `yaml:"output_buffer" json:"output_buffer" unit:"bytes" doc:"output buffer per switch port, for architectures that have one (every one but iq, recn-iq, pciq-2, pciq-4, pciq-2+recn-iq and pciq-4+recn-iq, which ignore it); hc has one per row of sub-switches at every output" paper:"004 §4.1"`
	EscapeVLBuffer  units.Bytes   `yaml:"escape_vl_buffer" json:"escape_vl_buffer" unit:"bytes" doc:"buffer of each escape lane in adaptive mode; 0 = one largest packet (paper: the escape queue holds one MTU packet, the adaptive queue the rest)" paper:"004 §4.1"`
	NICBuffer       units.Bytes   `yaml:"nic_buffer" json:"nic_buffer" unit:"bytes" doc:"reception buffer of a NIC per virtual lane (it is drained at once, so it only has to cover the credit round trip)"`
	CreditBlock     units.Bytes   `yaml:"credit_block" json:"credit_block" unit:"bytes" doc:"flow-control credit granularity (InfiniBand: 64 bytes)" paper:"004 §4.1"`
	CreditPacket    units.Bytes   `yaml:"credit_packet" json:"credit_packet" unit:"bytes" doc:"wire size of a flow-control (credit) packet; it shares the link with data"`
	Switch          string        `yaml:"switch" json:"switch" doc:"switch architecture: cioq (paper 004 §4.1), iq (the crossbar feeds the link), the queue schemes of paper 000 §4.3 (1q, 4q, voqsw, voqnet), recn (paper 000 §3) or recn-iq (paper 003 ch. 3), both deterministic routing only; the list with descriptions ends fabemu config explain"`
	Allocator       string        `yaml:"allocator" json:"allocator" doc:"crossbar allocator: rr (inputs and their lanes in round-robin order, first fit), islip(N) (N request-grant-accept iterations, McKeown's iSLIP), pim(N) (N iterations of parallel iterative matching, random grant and accept), random (inputs and their lanes in a random order, first fit, paper 002 §3) or hrr (hierarchical round robin, paper 003 §2.2.4)"`
	VOQMemory       string        `yaml:"voq_memory" json:"voq_memory,omitempty" doc:"memory of the VOQ schemes voqsw, 4q and voqnet: shared (the queues of an input share the lane's memory and credits) or partitioned (every queue an equal share of the port memory, credits per queue, and the scheme's queues at the outputs too); empty: partitioned for voqnet, shared for voqsw and 4q; other architectures ignore it" paper:"000 §4.1"`
	FourQChoice     string        `yaml:"four_q_choice" json:"four_q_choice,omitempty" doc:"how 4q picks a packet's queue: flow (the queue its destination's packets wait in, else the least occupied; flows stay in order; the empty default) or occupancy (the least occupied only, the paper's rule; a flow's packets may pass each other)" paper:"000 §4.3"`
	CrossbarSpeedup float64       `yaml:"crossbar_speedup" json:"crossbar_speedup" doc:"crossbar bandwidth per port as a multiple of the link's data rate"`
	DeadlockTimeout des.Time      `yaml:"deadlock_timeout" json:"deadlock_timeout" unit:"time" doc:"stop with a report when no packet has moved for this long while packets are in the fabric"`
	// Switching, FlitBytes and LaneFlits choose wormhole switching
	// (wormhole.go) instead of packet-level virtual cut-through.
	Switching string      `yaml:"switching,omitempty" json:"switching,omitempty" doc:"switching technique: vct (virtual cut-through: a packet moves only when it fits whole downstream; the empty default) or wormhole (flits, lanes of a few flits owned by one packet from head to tail, links multiplexed flit by flit among lanes; fabric.switch iq only)" paper:"001 §3, §4.1"`
	FlitBytes units.Bytes `yaml:"flit_bytes,omitempty" json:"flit_bytes,omitempty" unit:"bytes" doc:"wormhole: bytes per flit, the unit of credits and of link multiplexing (16 bytes makes paper 001's 16-flit messages 256 bytes); vct ignores it" paper:"001 §4.1" nonzero:"1 byte to 1GiB (leave the key out for the default, 16B)"`
	LaneFlits int         `yaml:"lane_flits,omitempty" json:"lane_flits,omitempty" unit:"flits" doc:"wormhole: buffer of every virtual channel (lane) at a switch input or NIC, in flits; may be smaller than a packet; vct ignores it and uses input_buffer" paper:"001 §3" nonzero:"1 to 1048576 flits (leave the key out for the default, 4)"`
	// RECN holds the parameters of the recn switch (arch_recn.go); other
	// architectures ignore it.
	RECN RECNConfig `yaml:"recn,omitempty" json:"recn,omitzero"`
	// RECNIQ holds the parameters of the recn-iq switch (arch_recniq.go);
	// other architectures ignore it.
	RECNIQ RECNIQConfig `yaml:"recn_iq,omitempty" json:"recn_iq,omitzero"`
	// InjectionPorts is the number of injection ports per host (paper
	// 002 §2; 0 or 1: one) and InjectionShared makes them virtual
	// channels of one link. The session sets both from
	// nic.injection_queues; they are not configured here.
	InjectionPorts  int  `yaml:"-" json:"-"`
	InjectionShared bool `yaml:"-" json:"-"`
	// InjectionOneLane sends every injected packet on lane 0, so each
	// injection port's input buffer is one FIFO (nic.injection_queues.one_lane).
	InjectionOneLane bool `yaml:"-" json:"-"`
	// Deadlock is deadlock detection and recovery (deadlock.go), off by
	// default; TFAR (routing.escape none) needs recovery.
	Deadlock DeadlockConfig `yaml:"deadlock,omitempty" json:"deadlock,omitzero"`
	// Seed is the run's seed (run.seed), from which randomised
	// allocators (pim, random) derive a stream per switch. The session sets it.
	Seed uint64 `yaml:"-" json:"-"`
}

// DefaultConfig is the IBA model of paper 004 §4.1: 1X links (2.5 Gb/s,
// 8b/10b), 20 m copper at 5 ns/m, 100 ns routing, 8 KB input and output
// buffers, 64-byte credits.
func DefaultConfig() Config {
	return Config{
		LinkRate:        2_500_000_000,
		LineCoding:      "8b10b",
		LinkLength:      20,
		PropagationPerM: 5 * des.Nanosecond,
		RoutingDelay:    100 * des.Nanosecond,
		InputBuffer:     8 * 1024,
		OutputBuffer:    8 * 1024,
		NICBuffer:       8 * 1024,
		CreditBlock:     64,
		CreditPacket:    8,
		Switch:          "cioq",
		Allocator:       "rr",
		CrossbarSpeedup: 1,
		DeadlockTimeout: 1 * des.Millisecond,
		FlitBytes:       DefaultFlitBytes,
		LaneFlits:       DefaultLaneFlits,
		RECN:            DefaultRECNConfig(),
		RECNIQ:          DefaultRECNIQConfig(),
		Deadlock:        DefaultDeadlockConfig(),
	}
}

// MarshalJSON writes the configuration as its fields' tags say, except
// that under virtual cut-through fabric.flit_bytes and fabric.lane_flits
// are left out while they hold their defaults: vct ignores them, and the
// JSON summaries (and sweep configuration hashes) of runs that never
// switch wormhole stay as they were before DefaultConfig held them.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // the fields and tags without this method
	p := plain(c)
	if !c.Wormhole() {
		if p.FlitBytes == DefaultFlitBytes {
			p.FlitBytes = 0
		}
		if p.LaneFlits == DefaultLaneFlits {
			p.LaneFlits = 0
		}
	}
	return json.Marshal(p)
}

// Efficiency returns the fraction of the signalling rate that carries data
// under the line coding.
func (c Config) Efficiency() (num, den int64, err error) {
	switch c.LineCoding {
	case "8b10b":
		return 8, 10, nil
	case "64b66b":
		return 64, 66, nil
	case "none", "":
		return 1, 1, nil
	}
	return 0, 0, fmt.Errorf("line_coding %q: want 8b10b, 64b66b or none", c.LineCoding)
}

// DataRate returns the bits per second that carry packet bytes.
func (c Config) DataRate() int64 {
	n, d, _ := c.Efficiency()
	return int64(c.LinkRate) * n / d
}

// SerializationTime returns how long bytes take on a link: bytes x 8 /
// (rate x coding efficiency), rounded up to a picosecond.
func (c Config) SerializationTime(bytes int) des.Time {
	return serTime(int64(bytes), c.DataRate())
}

func serTime(bytes, bitsPerSecond int64) des.Time {
	num := bytes * 8 * int64(des.Second)
	return des.Time((num + bitsPerSecond - 1) / bitsPerSecond)
}

// The limits every quantity of the model is checked against when the
// configuration is validated, so that no arithmetic in picoseconds,
// bytes or credit blocks can overflow during a run:
const (
	// MaxDelay is the longest single delay the model schedules
	// (serialization of a packet, propagation, routing, the deadlock
	// watchdog): an hour. Event times are at most the run's end plus a
	// few such delays, far below the 2^63 ps (106 days) of des.Time.
	MaxDelay = 3600 * des.Second
	// MaxBufferBytes is the largest buffer or packet size: buffers are
	// counted in int32 credit blocks and packets in int32 bytes.
	MaxBufferBytes = 1 << 30
	// MaxDataRate is the fastest link: a byte must take at least half a
	// picosecond, the time unit, or serialization times round to
	// nothing (8 Tbit/s of data; 800 Gb/s Ethernet is a tenth of it).
	MaxDataRate = 8_000_000_000_000
	// MaxCrossbarSpeedup bounds fabric.crossbar_speedup.
	MaxCrossbarSpeedup = 1000.0
)

// SerializationTimeChecked is serTime for configuration checks: the time
// bytes take at bitsPerSecond, or ok false when it exceeds MaxDelay (or
// the rate is not positive), computed without overflow.
func SerializationTimeChecked(bytes, bitsPerSecond int64) (des.Time, bool) {
	if bytes < 0 || bitsPerSecond <= 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(bytes)*8, uint64(des.Second))
	if hi >= uint64(bitsPerSecond) {
		return 0, false
	}
	q, r := bits.Div64(hi, lo, uint64(bitsPerSecond))
	if r != 0 {
		q++
	}
	if q > uint64(MaxDelay) {
		return 0, false
	}
	return des.Time(q), true
}

// CheckPacket checks the quantities derived from the largest packet
// (maxPacket wire bytes) that Validate cannot see: its serialization time
// on a link and through the crossbar, and that the buffers hold it in
// whole credit blocks. fabric.New calls it; a model's Validate calls it
// with the NIC's largest packet so that the error comes before anything
// is built.
func (c Config) CheckPacket(maxPacket int) error {
	if maxPacket <= 0 || maxPacket > MaxBufferBytes {
		return fmt.Errorf("largest packet %d bytes: want 1..%d", maxPacket, MaxBufferBytes)
	}
	rate := c.DataRate()
	if t, ok := SerializationTimeChecked(int64(maxPacket), rate); !ok {
		return fmt.Errorf("fabric.link_rate %v: a %d-byte packet would take more than %v to serialize", c.LinkRate, maxPacket, MaxDelay)
	} else if t <= 0 {
		return fmt.Errorf("fabric.link_rate %v: too fast to time a packet in picoseconds", c.LinkRate)
	}
	xbar := float64(rate) * c.CrossbarSpeedup
	if xbar < 1 {
		return fmt.Errorf("fabric.crossbar_speedup %g: the crossbar would move less than 1 bit/s", c.CrossbarSpeedup)
	}
	xt, ok := SerializationTimeChecked(int64(maxPacket), int64(xbar))
	if !ok {
		return fmt.Errorf("fabric.crossbar_speedup %g: a %d-byte packet would take more than %v to cross the crossbar", c.CrossbarSpeedup, maxPacket, MaxDelay)
	}
	// The watchdog reports a deadlock when no packet moved for
	// deadlock_timeout; one hop of the largest packet (crossbar, link,
	// cable, routing, and the credit coming back) must fit in it, or a
	// moving fabric is reported deadlocked.
	lt, _ := SerializationTimeChecked(int64(maxPacket), rate)
	ct, _ := SerializationTimeChecked(int64(c.CreditPacket), rate)
	if hop := xt + lt + 2*c.PropagationDelay() + c.RoutingDelay + ct; c.DeadlockTimeout < 2*hop {
		return fmt.Errorf("fabric.deadlock_timeout %v: shorter than two hops of a %d-byte packet (%v each at fabric.link_rate %v); the watchdog would call a moving fabric deadlocked: check fabric.link_rate (a plain number is bit/s) or raise the timeout", c.DeadlockTimeout, maxPacket, hop, c.LinkRate)
	}
	if int64(c.CreditPacket) > int64(maxPacket) {
		return fmt.Errorf("fabric.credit_packet %v: a flow-control packet larger than the largest data packet (%d bytes)", c.CreditPacket, maxPacket)
	}
	return nil
}

// PropagationDelay returns the time a bit takes to cross one cable.
func (c Config) PropagationDelay() des.Time {
	return des.Time(c.LinkLength*float64(c.PropagationPerM) + 0.5)
}

// Validate checks the configuration on its own.
func (c Config) Validate() error {
	if c.LinkRate <= 0 {
		return fmt.Errorf("fabric.link_rate %v: must be positive", c.LinkRate)
	}
	if _, _, err := c.Efficiency(); err != nil {
		return fmt.Errorf("fabric.%w", err)
	}
	if c.DataRate() > MaxDataRate {
		return fmt.Errorf("fabric.link_rate %v: at most %v of data (a byte must take at least half a picosecond, the time unit)", c.LinkRate, units.BitRate(MaxDataRate))
	}
	if math.IsNaN(c.LinkLength) || c.LinkLength < 0 || math.IsInf(c.LinkLength, 0) {
		return fmt.Errorf("fabric.link_length_m %g: want a finite length, not negative", c.LinkLength)
	}
	for _, d := range []struct {
		key string
		v   des.Time
	}{{"propagation_per_m", c.PropagationPerM}, {"routing_delay", c.RoutingDelay}, {"deadlock_timeout", c.DeadlockTimeout}} {
		if d.v < 0 || d.v > MaxDelay {
			return fmt.Errorf("fabric.%s %v: want 0..%v", d.key, d.v, MaxDelay)
		}
	}
	if c.LinkLength*float64(c.PropagationPerM) > float64(MaxDelay) {
		return fmt.Errorf("fabric.link_length_m %g: at %v per metre the propagation delay exceeds %v", c.LinkLength, c.PropagationPerM, MaxDelay)
	}
	for _, b := range []struct {
		key      string
		v        units.Bytes
		positive bool
	}{{"input_buffer", c.InputBuffer, true}, {"output_buffer", c.OutputBuffer, false}, {"escape_vl_buffer", c.EscapeVLBuffer, false},
		{"nic_buffer", c.NICBuffer, true}, {"credit_block", c.CreditBlock, true}, {"credit_packet", c.CreditPacket, true}} {
		switch {
		case b.positive && b.v <= 0:
			return fmt.Errorf("fabric.%s %v: must be positive", b.key, b.v)
		case b.v < 0:
			return fmt.Errorf("fabric.%s %v: must not be negative", b.key, b.v)
		case b.v > MaxBufferBytes:
			return fmt.Errorf("fabric.%s %v: at most %v (buffers are counted in 32-bit credit blocks)", b.key, b.v, units.Bytes(MaxBufferBytes))
		}
	}
	if c.CreditBlock > c.InputBuffer || c.CreditBlock > c.NICBuffer {
		return fmt.Errorf("fabric.credit_block %v: larger than the input buffer %v or the NIC buffer %v it counts", c.CreditBlock, c.InputBuffer, c.NICBuffer)
	}
	if math.IsNaN(c.CrossbarSpeedup) || c.CrossbarSpeedup <= 0 || c.CrossbarSpeedup > MaxCrossbarSpeedup {
		return fmt.Errorf("fabric.crossbar_speedup %g: want more than 0, at most %g", c.CrossbarSpeedup, MaxCrossbarSpeedup)
	}
	if c.DeadlockTimeout == 0 {
		return fmt.Errorf("fabric.deadlock_timeout %v: must be positive", c.DeadlockTimeout)
	}
	arch, err := lookupArch(c.Switch)
	if err != nil {
		return fmt.Errorf("fabric.switch: %w", err)
	}
	if arch.outputBuffered && c.OutputBuffer <= 0 {
		return fmt.Errorf("fabric.output_buffer %v: the %s switch needs an output buffer (fabric.switch=iq is the input-queued switch without one)", c.OutputBuffer, c.Switch)
	}
	if _, err := voqMemory(c); err != nil {
		return err
	}
	if c.FourQChoice != "" && c.FourQChoice != "flow" && c.FourQChoice != "occupancy" {
		return fmt.Errorf("fabric.four_q_choice %q: want flow or occupancy", c.FourQChoice)
	}
	if _, err := parseAllocator(c.Allocator); err != nil {
		return fmt.Errorf("fabric.allocator: %w", err)
	}
	if err := c.Deadlock.Validate(); err != nil {
		return fmt.Errorf("fabric.%w", err)
	}
	if err := c.validateSwitching(arch); err != nil {
		return err
	}
	// The RECN and RECN-IQ sections are checked whatever the switch: a
	// value they refuse is refused even where the section is not read
	// (fabric.recn_iq.post_processing=bogus on a cioq fabric).
	if err := c.RECN.Validate(); err != nil {
		return fmt.Errorf("fabric.recn.%w", err)
	}
	if err := c.RECNIQ.Validate(); err != nil {
		return fmt.Errorf("fabric.recn_iq.%w", err)
	}
	return nil
}
