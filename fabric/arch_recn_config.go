package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/internal/units"
)

// RECNConfig holds the parameters of the recn switch (paper 000 §3, §4.1).
// The paper's simulator "accepts different thresholds for detecting and
// propagating congestion as well as the number of maximum SAQs allowed at
// each port" (§4.1) but prints only the SAQ count (8 per port, §4.3); the
// threshold defaults are ours, chosen for its 128 KB port memories and
// 64-byte packets, and are stated as such in their docs. A zero field of
// a configuration built in code means its default; an explicit 0 in a file
// or --set is refused (the nonzero tags), so zero never silently becomes
// the default.
type RECNConfig struct {
	MaxSAQs               int         `yaml:"max_saqs" json:"max_saqs" doc:"set-aside queues (and CAM lines) per switch input and per switch output port; when none is free a notification is refused and the packets stay in the normal queue (counted as SAQ exhaustion)" paper:"000 §4.3 (8 per port), §3.8" nonzero:"1 to 64 (leave the key out for the default, 8)"`
	DetectionThreshold    units.Bytes `yaml:"detection_threshold" json:"detection_threshold" unit:"bytes" doc:"occupancy of an output port's normal queue at which it detects congestion and becomes the root of a congestion tree (ours: the paper gives no value)" paper:"000 §3.3" nonzero:"a positive size (leave the key out for the default, 2KiB)"`
	NotificationThreshold units.Bytes `yaml:"notification_threshold" json:"notification_threshold" unit:"bytes" doc:"occupancy of a SAQ at which it notifies congestion upstream: an input SAQ to the output port feeding it, an output SAQ to the inputs that send to it (ours: the paper gives no value)" paper:"000 §3.4" nonzero:"a positive size (leave the key out for the default, 1KiB)"`
	XoffThreshold         units.Bytes `yaml:"xoff_threshold" json:"xoff_threshold" unit:"bytes" doc:"occupancy of a SAQ at which it sends Xoff to the SAQ feeding it (ours: the paper gives no value)" paper:"000 §3.7, §4.1" nonzero:"a positive size (leave the key out for the default, 2KiB)"`
	XonThreshold          units.Bytes `yaml:"xon_threshold" json:"xon_threshold" unit:"bytes" doc:"occupancy below which a SAQ that sent Xoff sends Xon; below xoff_threshold, for hysteresis (ours: the paper gives no value)" paper:"000 §3.7, §4.1" nonzero:"a positive size below xoff_threshold (leave the key out for the default, 1KiB)"`
	ControlPacket         units.Bytes `yaml:"control_packet" json:"control_packet" unit:"bytes" doc:"wire size of a RECN control packet (notification, token, Xon, Xoff); they share the link with data (ours: the paper gives no value)" paper:"000 §4.1" nonzero:"a positive size (leave the key out for the default, 8B)"`
	NICSAQs               int         `yaml:"nic_saqs" json:"nic_saqs" doc:"set-aside queues at each host's injection port: a SAQ at the first switch notifies the NIC as it would an upstream switch, the NIC sets its packets for that path aside, obeys Xon/Xoff per SAQ and keeps injecting the others; -1: none, notifications stop at the first switch" paper:"000 §4.1 (SAQs at the output side of the network interfaces)" nonzero:"1 to 64, or -1 for none (leave the key out for the default, 8)"`
	// NormalFirst makes the crossbar arbiter serve requests from the
	// normal queues before those from SAQs, as paper 000 §4.1 describes
	// its switch; off by default so that runs made before it keep their
	// results (docs/validation.md says what it changes).
	NormalFirst bool `yaml:"normal_first,omitempty" json:"normal_first,omitzero" doc:"crossbar requests from packets in normal queues win over requests from packets in SAQs (the paper's arbiter; with the rr allocator: a first pass over every input's normal queues, then one over the SAQs); off: the allocator treats all queues alike" paper:"000 §4.1"`
	// PortSeries adds the SAQs in use at the busiest input and output
	// port over time to the report (off by default: it lengthens every
	// recn summary).
	PortSeries bool        `yaml:"port_series,omitempty" json:"port_series,omitzero" doc:"report, per time bin, the most SAQs in use at any one switch input port and at any one output port (recn.saqs_per_input_over_time, recn.saqs_per_output_over_time; paper 000 Figs. 4 and 5)" paper:"000 §4.4"`
	NICMemory  units.Bytes `yaml:"nic_saq_memory" json:"nic_saq_memory" unit:"bytes" doc:"memory of a NIC's SAQs, bounding the packets a NIC sets aside; when the NIC's next packet belongs in a SAQ and does not fit, it waits at the head of the NIC's queue and holds up the packets behind it (ours: the paper's NI keeps every message in an admittance queue per destination, so a congested path never holds up the others; under recn fabemu's NIC has one injection queue, the normal queue, fed from admittance queues per destination with nic.model admittance and holding every message with fifo, and this memory is host memory, larger than a switch port's 128 KB)" paper:"000 §4.1" nonzero:"a positive size (leave the key out for the default, 1MiB)"`
}

// DefaultRECNConfig: 8 SAQs per switch port and per NIC (paper 000 §4.3,
// §4.1), thresholds of a few 64-byte packets, and 1 MiB of SAQ memory at
// each NIC (ours, see NICMemory).
func DefaultRECNConfig() RECNConfig {
	return RECNConfig{MaxSAQs: 8, DetectionThreshold: 2048, NotificationThreshold: 1024,
		XoffThreshold: 2048, XonThreshold: 1024, ControlPacket: 8, NICSAQs: 8, NICMemory: 1 << 20}
}

// IsZero reports whether the configuration is all defaults, so that
// dumps and summaries of runs that do not change it stay as they were.
func (c RECNConfig) IsZero() bool {
	return c == RECNConfig{} || c == DefaultRECNConfig()
}

// resolved fills the zero fields with their defaults.
func (c RECNConfig) resolved() RECNConfig {
	d := DefaultRECNConfig()
	if c.MaxSAQs == 0 {
		c.MaxSAQs = d.MaxSAQs
	}
	if c.DetectionThreshold == 0 {
		c.DetectionThreshold = d.DetectionThreshold
	}
	if c.NotificationThreshold == 0 {
		c.NotificationThreshold = d.NotificationThreshold
	}
	if c.XoffThreshold == 0 {
		c.XoffThreshold = d.XoffThreshold
	}
	if c.XonThreshold == 0 {
		c.XonThreshold = d.XonThreshold
	}
	if c.ControlPacket == 0 {
		c.ControlPacket = d.ControlPacket
	}
	if c.NICSAQs == 0 {
		c.NICSAQs = d.NICSAQs
	}
	if c.NICMemory == 0 {
		c.NICMemory = d.NICMemory
	}
	return c
}

// Validate checks the parameters after defaults are filled in.
func (c RECNConfig) Validate() error {
	c = c.resolved()
	for _, f := range []struct {
		key string
		v   units.Bytes
	}{{"detection_threshold", c.DetectionThreshold}, {"notification_threshold", c.NotificationThreshold}, {"xoff_threshold", c.XoffThreshold},
		{"xon_threshold", c.XonThreshold}, {"control_packet", c.ControlPacket}, {"nic_saq_memory", c.NICMemory}} {
		if f.v < 0 {
			return fmt.Errorf("%s %v: must not be negative", f.key, f.v)
		}
	}
	switch {
	case c.MaxSAQs < 0 || c.MaxSAQs > 64:
		return fmt.Errorf("max_saqs %d: want 1 to 64 (the paper's hardware has 64 CAM lines per port, §3.8)", c.MaxSAQs)
	case c.NICSAQs < -1 || c.NICSAQs > 64:
		return fmt.Errorf("nic_saqs %d: want 1 to 64, or -1 for none", c.NICSAQs)
	case c.XonThreshold >= c.XoffThreshold:
		return fmt.Errorf("xon_threshold %v must be below xoff_threshold %v (Xon/Xoff hysteresis, paper 000 §4.1)", c.XonThreshold, c.XoffThreshold)
	}
	return nil
}
