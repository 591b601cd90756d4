package fabric

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/units"
)

// RECNIQConfig holds the parameters of the recn-iq switch (paper 003
// ch. 3). The thresholds count packets, as the thesis does (a slot holds
// one packet, §3.3.1); the defaults are the thesis' evaluation setup
// (§4.2: Xon 2, Xoff 5, detection 4 packets, 4 KB input memories of 64
// packets of 64 bytes; the input memory itself is fabric.input_buffer).
// A zero field of a configuration built in code means its default; an
// explicit 0 in a file or --set is refused (the nonzero tags).
type RECNIQConfig struct {
	MaxSAQs            int         `yaml:"max_saqs" json:"max_saqs" doc:"set-aside queues (and CAM lines) at each read port of a switch input memory (iq and cioq have one per input; pciq-K+recn-iq has K, so K x max_saqs per input), and as many CAM lines as an input has SAQs at each switch output port; with none free, congestion detected at the cold queue allocates nothing and its packets stay in the cold queue, as in a plain input-queued switch (counted as SAQ exhaustion)" paper:"003 §3.3.1, §4.1.5 (SAQ0-SAQ3), §4.2 (2, 4 and 8 evaluated); §2.9 (two or four per read port)" nonzero:"1 to 64 (leave the key out for the default, 4)"`
	DetectionThreshold int         `yaml:"detection_threshold" json:"detection_threshold" unit:"packets" doc:"packets in an input's cold queue at which congestion is detected; the output requested by the packet at the head of the cold queue is taken as the congested point and a SAQ is allocated for it" paper:"003 §3.3.2, §4.1.4, §4.2 (4 packets)" nonzero:"a positive packet count (leave the key out for the default, 4)"`
	XoffThreshold      int         `yaml:"xoff_threshold" json:"xoff_threshold" unit:"packets" doc:"packets in an input SAQ at which it sends Xoff upstream: the output port of the upstream switch takes a CAM line in Xoff for the congested point, and inputs that send it matching packets allocate SAQs in Xoff" paper:"003 §3.3.5, §4.1.6, §4.2 (5 packets)" nonzero:"a positive packet count (leave the key out for the default, 5)"`
	XonThreshold       int         `yaml:"xon_threshold" json:"xon_threshold" unit:"packets" doc:"packets below which an input SAQ that sent Xoff sends Xon; below xoff_threshold, for hysteresis" paper:"003 §3.3.6, §4.1.6, §4.2 (2 packets)" nonzero:"a positive packet count below xoff_threshold (leave the key out for the default, 2)"`
	ControlPacket      units.Bytes `yaml:"control_packet" json:"control_packet" unit:"bytes" doc:"wire size of an Xon or Xoff packet on the reverse channel; they share the link with data (ours: the thesis gives no value)" paper:"003 §3.3.5" nonzero:"a positive size (leave the key out for the default, 8B)"`
	// Post-processing unit timing (§4.1.5, §4.2.3).
	PostProcessing      string   `yaml:"post_processing" json:"post_processing" doc:"timing of the post-processing unit: timed (a packet that becomes the head of a cold queue or SAQ waits post_processing_delay before the allocator sees it, and again after every move into another SAQ: the RFS bit of §4.1.5), bypass (the enhanced RECN-IQ of §4.2.3: no wait while the input has no SAQ allocated and its cold queue is below detection_threshold), or instant (post-processing takes no time)" paper:"003 §4.1.5, §4.2.3"`
	PostProcessingDelay des.Time `yaml:"post_processing_delay" json:"post_processing_delay" unit:"time" doc:"time the post-processing unit takes to process one head packet (post_processing timed or bypass)" paper:"003 §4.2.3 (10 nanoseconds)" nonzero:"a positive time; post_processing instant for none (leave the key out for the default, 10ns)"`
	// Detection: when the congestion detection unit compares the cold
	// queue with its threshold (§4.1.4).
	Detection string `yaml:"detection" json:"detection" doc:"when congestion detection looks at a cold queue: cycle (whenever the cold queue holds detection_threshold packets, as the thesis' detection unit compares it every cycle: also when its head changes or a SAQ of the input is freed), or events (only when a packet arrives at the cold queue and when its head leaves through the crossbar)" paper:"003 §3.3.2, §4.1.4"`
	// NIC side (§3.3.7 step 6: the congestion information "eventually
	// reaches the sources"; the SAQs at the sources are paper 000 §4.1's).
	NICSAQs   int         `yaml:"nic_saqs" json:"nic_saqs" doc:"set-aside queues at each host's injection port: an input SAQ of the first switch past xoff_threshold sends Xoff to the host as to an upstream switch; the NIC allocates a SAQ in Xoff for the path, sets aside the packets of its queue whose turns match it, obeys Xon/Xoff per SAQ and keeps injecting the others; -1: none, hosts are never sent Xoff and the congestion information stops at the first switch" paper:"003 §3.3.5-§3.3.7; 000 §4.1 (SAQs at the network interfaces)" nonzero:"1 to 64, or -1 for none (leave the key out for the default, 4)"`
	NICMemory units.Bytes `yaml:"nic_saq_memory" json:"nic_saq_memory" unit:"bytes" doc:"memory of a NIC's SAQs; when the NIC's next packet belongs in a SAQ and does not fit, it waits at the head of the NIC's queue and holds up the packets behind it (ours, as fabric.recn.nic_saq_memory: the thesis gives no NIC memory)" paper:"000 §4.1" nonzero:"a positive size (leave the key out for the default, 1MiB)"`
}

// Values of RECNIQConfig.PostProcessing and RECNIQConfig.Detection.
const (
	PPTimed        = "timed"
	PPBypass       = "bypass"
	PPInstant      = "instant"
	DetectPerCycle = "cycle"
	DetectAtEvents = "events"
)

// DefaultRECNIQConfig: the thesis' setup (§4.2) with 4 SAQs per port
// (the SAQ0-SAQ3 of its switch, §4.1.5), a post-processing unit of 10 ns
// per packet (§4.2.3), detection every cycle (§4.1.4) and, so that the
// congestion information reaches the sources (§3.3.7), 4 SAQs at every
// NIC with 1 MiB of memory (ours: the thesis gives no NIC figures).
func DefaultRECNIQConfig() RECNIQConfig {
	return RECNIQConfig{MaxSAQs: 4, DetectionThreshold: 4, XoffThreshold: 5, XonThreshold: 2, ControlPacket: 8,
		PostProcessing: PPTimed, PostProcessingDelay: 10 * des.Nanosecond, Detection: DetectPerCycle,
		NICSAQs: 4, NICMemory: 1 << 20}
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
	if c.PostProcessing == "" {
		c.PostProcessing = d.PostProcessing
	}
	if c.PostProcessingDelay == 0 {
		c.PostProcessingDelay = d.PostProcessingDelay
	}
	if c.Detection == "" {
		c.Detection = d.Detection
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
func (c RECNIQConfig) Validate() error {
	c = c.resolved()
	for _, f := range []struct {
		key string
		v   int
	}{{"detection_threshold", c.DetectionThreshold}, {"xoff_threshold", c.XoffThreshold}, {"xon_threshold", c.XonThreshold}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d: must not be negative", f.key, f.v)
		}
	}
	switch {
	case c.MaxSAQs < 0 || c.MaxSAQs > 64:
		return fmt.Errorf("max_saqs %d: want 1 to 64", c.MaxSAQs)
	case c.ControlPacket < 0:
		return fmt.Errorf("control_packet %v: must not be negative", c.ControlPacket)
	case c.XonThreshold >= c.XoffThreshold:
		return fmt.Errorf("xon_threshold %d must be below xoff_threshold %d (Xon/Xoff hysteresis, paper 003 §3.3.6)", c.XonThreshold, c.XoffThreshold)
	case c.PostProcessing != PPTimed && c.PostProcessing != PPBypass && c.PostProcessing != PPInstant:
		return fmt.Errorf("post_processing %q: want timed, bypass or instant", c.PostProcessing)
	case c.PostProcessingDelay < 0:
		return fmt.Errorf("post_processing_delay %v must not be negative", c.PostProcessingDelay)
	case c.Detection != DetectPerCycle && c.Detection != DetectAtEvents:
		return fmt.Errorf("detection %q: want cycle or events", c.Detection)
	case c.NICSAQs < -1 || c.NICSAQs > 64:
		return fmt.Errorf("nic_saqs %d: want 1 to 64, or -1 for none", c.NICSAQs)
	case c.NICMemory < 0:
		return fmt.Errorf("nic_saq_memory must not be negative")
	}
	return nil
}

// SwitchInputDelay is the time a packet spends at every switch input at
// zero load besides the routing delay: with RECN-IQ's input stage
// (recn-iq, pciq-K+recn-iq, cioq+recn-iq) its post-processing delay with
// post_processing timed (paper 003 §4.2.3), 0 otherwise. The zero-load
// latency of the conformance suite adds it per switch.
func (c Config) SwitchInputDelay() des.Time {
	if !strings.HasSuffix(c.Switch, "recn-iq") {
		return 0
	}
	r := c.RECNIQ.resolved()
	if r.PostProcessing != PPTimed {
		return 0
	}
	return r.PostProcessingDelay
}
