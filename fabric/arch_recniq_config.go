package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/internal/units"
)

// RECNIQConfig holds the parameters of the recn-iq switch (paper 003
// ch. 3). The thresholds count packets, as the thesis does (a slot holds
// one packet, §3.3.1); the defaults are the thesis' evaluation setup
// (§4.2: Xon 2, Xoff 5, detection 4 packets, 4 KB input memories of 64
// packets of 64 bytes; the input memory itself is fabric.input_buffer).
// A zero field means its default.
type RECNIQConfig struct {
	MaxSAQs            int         `yaml:"max_saqs" json:"max_saqs" doc:"set-aside queues (and CAM lines) at each read port of a switch input memory (iq and cioq have one per input; pciq-K+recn-iq has K, so K x max_saqs per input), and as many CAM lines as an input has SAQs at each switch output port; with none free, congestion detected at the cold queue allocates nothing and its packets stay in the cold queue, as in a plain input-queued switch (counted as SAQ exhaustion)" paper:"003 §3.3.1, §4.1.5 (SAQ0-SAQ3), §4.2 (2, 4 and 8 evaluated); §2.9 (two or four per read port)"`
	DetectionThreshold int         `yaml:"detection_threshold" json:"detection_threshold" unit:"packets" doc:"packets in an input's cold queue at which congestion is detected; the output requested by the packet at the head of the cold queue is taken as the congested point and a SAQ is allocated for it" paper:"003 §3.3.2, §4.1.4, §4.2 (4 packets)"`
	XoffThreshold      int         `yaml:"xoff_threshold" json:"xoff_threshold" unit:"packets" doc:"packets in an input SAQ at which it sends Xoff upstream: the output port of the upstream switch takes a CAM line in Xoff for the congested point, and inputs that send it matching packets allocate SAQs in Xoff" paper:"003 §3.3.5, §4.1.6, §4.2 (5 packets)"`
	XonThreshold       int         `yaml:"xon_threshold" json:"xon_threshold" unit:"packets" doc:"packets below which an input SAQ that sent Xoff sends Xon; below xoff_threshold, for hysteresis" paper:"003 §3.3.6, §4.1.6, §4.2 (2 packets)"`
	ControlPacket      units.Bytes `yaml:"control_packet" json:"control_packet" unit:"bytes" doc:"wire size of an Xon or Xoff packet on the reverse channel; they share the link with data (ours: the thesis gives no value)" paper:"003 §3.3.5"`
}

// DefaultRECNIQConfig: the thesis' setup (§4.2) with 4 SAQs per port
// (the SAQ0-SAQ3 of its switch, §4.1.5).
func DefaultRECNIQConfig() RECNIQConfig {
	return RECNIQConfig{MaxSAQs: 4, DetectionThreshold: 4, XoffThreshold: 5, XonThreshold: 2, ControlPacket: 8}
}

// IsZero reports whether the configuration is all defaults, so that
// dumps and summaries of runs that do not change it stay as they were.
func (c RECNIQConfig) IsZero() bool {
	return c == RECNIQConfig{} || c == DefaultRECNIQConfig()
}

// resolved fills the zero fields with their defaults.
func (c RECNIQConfig) resolved() RECNIQConfig {
	d := DefaultRECNIQConfig()
	if c.MaxSAQs == 0 {
		c.MaxSAQs = d.MaxSAQs
	}
	if c.DetectionThreshold == 0 {
		c.DetectionThreshold = d.DetectionThreshold
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
	return c
}

// Validate checks the parameters after defaults are filled in.
func (c RECNIQConfig) Validate() error {
	c = c.resolved()
	switch {
	case c.MaxSAQs < 0 || c.MaxSAQs > 64:
		return fmt.Errorf("max_saqs %d: want 1 to 64", c.MaxSAQs)
	case c.DetectionThreshold < 0 || c.XoffThreshold < 0 || c.XonThreshold < 0 || c.ControlPacket < 0:
		return fmt.Errorf("thresholds and control_packet must not be negative")
	case c.XonThreshold >= c.XoffThreshold:
		return fmt.Errorf("xon_threshold %d must be below xoff_threshold %d (Xon/Xoff hysteresis, paper 003 §3.3.6)", c.XonThreshold, c.XoffThreshold)
	}
	return nil
}
