package fabric

import (
	"fmt"
	"strings"

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
		RECN:            DefaultRECNConfig(),
		RECNIQ:          DefaultRECNIQConfig(),
	}
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
	if c.LinkLength < 0 {
		return fmt.Errorf("fabric.link_length_m %g: must not be negative", c.LinkLength)
	}
	if c.PropagationPerM < 0 || c.RoutingDelay < 0 {
		return fmt.Errorf("fabric: propagation_per_m and routing_delay must not be negative")
	}
	if c.CreditBlock <= 0 {
		return fmt.Errorf("fabric.credit_block %v: must be positive", c.CreditBlock)
	}
	if c.InputBuffer <= 0 {
		return fmt.Errorf("fabric.input_buffer %v: must be positive", c.InputBuffer)
	}
	if c.OutputBuffer < 0 || c.EscapeVLBuffer < 0 {
		return fmt.Errorf("fabric: output_buffer and escape_vl_buffer must not be negative")
	}
	if c.NICBuffer <= 0 {
		return fmt.Errorf("fabric.nic_buffer %v: must be positive", c.NICBuffer)
	}
	if c.CreditPacket <= 0 {
		return fmt.Errorf("fabric.credit_packet %v: must be positive", c.CreditPacket)
	}
	if c.CrossbarSpeedup <= 0 {
		return fmt.Errorf("fabric.crossbar_speedup %g: must be positive", c.CrossbarSpeedup)
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
	if c.DeadlockTimeout <= 0 {
		return fmt.Errorf("fabric.deadlock_timeout %v: must be positive", c.DeadlockTimeout)
	}
	if arch.Name == "recn" {
		if err := c.RECN.Validate(); err != nil {
			return fmt.Errorf("fabric.recn.%w", err)
		}
	}
	if strings.HasSuffix(arch.Name, "recn-iq") {
		if err := c.RECNIQ.Validate(); err != nil {
			return fmt.Errorf("fabric.recn_iq.%w", err)
		}
	}
	return nil
}
