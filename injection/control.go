package injection

import (
	"fmt"
	"strconv"
	"strings"
)

// Injection control (papers 001 and 002) is a second, NIC-level gate,
// apart from the per-connection delivery policies above: those decide what
// a connection does after a NACK (paper 004), this decides when any new
// data packet may enter the network at all, whatever the delivery mode
// ("message throttling", paper 001 §1). The NIC asks its Gate before it
// starts each data packet; control packets (ACK, NACK) are not gated.
//
// The gates are listed in controlTable (one file per gate: transt.go,
// selftuned.go, bubble.go; No-Lim is a line of the table). No-Lim makes no gate at all, so a NIC without
// injection control pays nothing for it.

// ControlKind names an injection-control gate.
type ControlKind string

// The gates of paper 001 §4.2.
const (
	NoLim     ControlKind = "no-lim"
	TransT    ControlKind = "trans-t"
	SelfTuned ControlKind = "self-tuned"
)

// ControlInfo describes one gate of the table.
type ControlInfo struct {
	Kind        ControlKind
	Description string
	Source      string // paper and section
	// Global is true when the gate needs knowledge no NIC has locally.
	Global bool
	// Syntax is how a configuration names it, when it takes a parameter
	// after a colon (bubble:LEVEL); param checks that parameter.
	Syntax string
	param  func(string) error
	// new returns the controller for a network of the given NICs, nil
	// for no gate.
	new func(c ControlConfig, nics int) Control
}

// controlTable lists the gates a configuration may name. To add one,
// write it in a file of its own and add a line here.
func controlTable() []ControlInfo {
	return []ControlInfo{
		{Kind: NoLim, Source: "paper 001 §4.2", Description: "no injection control: new packets enter as soon as the injection link can take them",
			new: func(ControlConfig, int) Control { return nil }},
		{Kind: TransT, Source: "paper 001 §3", Description: "Trans-t: channels of the local switch whose transmission-time ratio exceeded u1 are congested for u2; injection channels are halved (some useful channels congested) or closed (all) for u3, one reopens for u4 against starvation",
			new: newTransT},
		{Kind: SelfTuned, Source: "paper 001 §4.2 (Thottethodi et al., HPCA 2001)", Global: true, Description: "Self-Tuned: every NIC stops injecting while the network's full buffers exceed a threshold tuned by hill climbing on delivered throughput; global knowledge by design",
			new: newSelfTuned},
		{Kind: Bubble, Syntax: "bubble:LEVEL", Source: "paper 002 §5.1", Description: "restrictive injection: the switch grants a packet from an injection port an output lane only with room for a bubble of packets there; LEVEL 2-esc (2 packets on the escape lane, the standard adaptive bubble router; bubble alone means this), 2-all (2 on every lane), 4-all or 6-all; enforced at the switch, no NIC gate",
			param: func(s string) error { _, err := ParseRestrictLevel(s); return err }, new: newRestrictive},
	}
}

// ControlPolicies returns the table of injection-control gates.
func ControlPolicies() []ControlInfo { return controlTable() }

// ControlKinds lists the gate names in table order.
func ControlKinds() []ControlKind {
	var ks []ControlKind
	for _, c := range controlTable() {
		ks = append(ks, c.Kind)
	}
	return ks
}

// lookupControl finds a gate by name; a gate that takes a parameter is
// named NAME or NAME:PARAM.
func lookupControl(k ControlKind) (ControlInfo, bool) {
	name, param, hasParam := strings.Cut(string(k), ":")
	for _, c := range controlTable() {
		if string(c.Kind) != name {
			continue
		}
		if hasParam && (c.param == nil || param == "" || c.param(param) != nil) {
			return ControlInfo{}, false
		}
		return c, true
	}
	return ControlInfo{}, false
}

func controlNames() string {
	var s []string
	for _, c := range controlTable() {
		n := string(c.Kind)
		if c.Syntax != "" {
			n = c.Syntax
		}
		s = append(s, n)
	}
	return strings.Join(s, ", ")
}

// IsControlKind reports whether s names an injection-control gate
// (case-insensitive), so that one --injection shorthand can set either the
// delivery policy or the gate: the two tables share no name.
func IsControlKind(s string) bool {
	_, ok := lookupControl(ControlKind(strings.ToLower(s)))
	return ok
}

// ControlConfig selects and parameterises the NIC's injection control.
type ControlConfig struct {
	Policy ControlKind `yaml:"policy" json:"policy" doc:"injection control of every NIC, for every delivery mode: no-lim (none), trans-t (local transmission times), self-tuned (global full-buffer count) or bubble:LEVEL (restrictive injection at the switch's injection ports: 2-esc, 2-all, 4-all, 6-all packets of room); empty = no-lim" paper:"001 §3-4.2; 002 §5.1"`
	// Trans-t (paper 001 §3, §4.2).
	U1 float64 `yaml:"u1" json:"u1" doc:"Trans-t: threshold on the ratio of actual to minimum transmission time above which a channel is marked congested; 0 = paper 001 Table 1's value for the topology and lanes per channel, or the lanes per channel when the topology is not in the table (the paper's starting point)" paper:"001 §3, §4.2, Table 1"`
	U2 float64 `yaml:"u2" json:"u2" unit:"cycles" doc:"Trans-t: how long a marked channel stays congested" paper:"001 §3, §4.2 (8 cycles)"`
	U3 float64 `yaml:"u3" json:"u3" unit:"cycles" doc:"Trans-t: how long injection stays halved (some useful channels congested) or closed (all congested)" paper:"001 §3, §4.2 (16 cycles)"`
	U4 float64 `yaml:"u4" json:"u4" unit:"cycles" doc:"Trans-t: how long one injection channel stays open after a closure, whatever the network's state (starvation guarantee); also the step of reopening" paper:"001 §3, §4.2 (8 cycles)"`
	// Channels is the number of injection channels the NIC has.
	Channels int `yaml:"channels" json:"channels" doc:"injection channels of a NIC; with k of them open the NIC injects at k/channels of its link's rate (closing channels reduces the injection bandwidth, paper 001 §3 footnote 2)" paper:"001 §4.1 (four)"`
	// FlitBytes sets the clock cycle the intervals are counted in.
	FlitBytes int `yaml:"flit_bytes" json:"flit_bytes" unit:"bytes" doc:"bytes of one flit: a cycle (the unit of u2..u4 and of Self-Tuned's periods) is one flit's time on a link; 16 makes the presets' 256-byte messages the paper's 16-flit ones" paper:"001 §4.1"`
	// Self-Tuned (paper 001 §4.2 after Thottethodi et al.).
	GatherPeriod float64 `yaml:"gather_period" json:"gather_period" unit:"cycles" doc:"Self-Tuned: how often the global count of full buffers is gathered and the throttle decided (the sideband network's period)" paper:"001 §4.2; Thottethodi et al. HPCA 2001"`
	TunePeriod   float64 `yaml:"tune_period" json:"tune_period" unit:"cycles" doc:"Self-Tuned: how often the threshold is tuned by hill climbing on delivered throughput" paper:"001 §4.2; Thottethodi et al. HPCA 2001"`
	Threshold    float64 `yaml:"threshold" json:"threshold" doc:"Self-Tuned: initial threshold, as a fraction of the network's lane buffers that are full" paper:"001 §4.2; Thottethodi et al. HPCA 2001"`
}

// DefaultControlConfig is No-Lim with paper 001's Trans-t intervals (u2,
// u3, u4 = 8, 16, 8 cycles, §4.2), four injection channels (§4.1) and
// 16-byte flits, and Self-Tuned's periods.
func DefaultControlConfig() ControlConfig {
	return ControlConfig{Policy: NoLim, U2: 8, U3: 16, U4: 8, Channels: 4, FlitBytes: 16,
		GatherPeriod: 32, TunePeriod: 192, Threshold: 0.05}
}

// Resolved returns the gate kind with the empty default filled in.
func (c ControlConfig) Resolved() ControlKind {
	if c.Policy == "" {
		return NoLim
	}
	return ControlKind(strings.ToLower(string(c.Policy)))
}

// Validate checks the gate name and its parameters.
func (c ControlConfig) Validate() error {
	if _, ok := lookupControl(c.Resolved()); !ok {
		if name, param, ok := strings.Cut(string(c.Resolved()), ":"); ok && ControlKind(name) == Bubble {
			return fmt.Errorf("nic.injection_control.policy %q: restrictive injection level %q: want %s", c.Policy, param, restrictLevelNames())
		}
		return fmt.Errorf("nic.injection_control.policy %q: want %s", c.Policy, controlNames())
	}
	switch {
	case c.U1 < 0:
		return fmt.Errorf("nic.injection_control.u1 %g: must not be negative (0 = paper 001 Table 1)", c.U1)
	case c.U2 <= 0 || c.U3 <= 0 || c.U4 <= 0:
		return fmt.Errorf("nic.injection_control.u2/u3/u4 %g/%g/%g: must be positive cycles", c.U2, c.U3, c.U4)
	case c.Channels < 1 || c.Channels > 64:
		return fmt.Errorf("nic.injection_control.channels %d: want 1..64", c.Channels)
	case c.FlitBytes < 1:
		return fmt.Errorf("nic.injection_control.flit_bytes %d: must be positive", c.FlitBytes)
	case c.GatherPeriod <= 0 || c.TunePeriod <= 0:
		return fmt.Errorf("nic.injection_control.gather_period/tune_period: must be positive cycles")
	case !(c.Threshold > 0 && c.Threshold <= 1):
		return fmt.Errorf("nic.injection_control.threshold %g: want a fraction in (0, 1]", c.Threshold)
	}
	return nil
}

// ParseControlKind reads a gate name (case-insensitive).
func ParseControlKind(s string) (ControlKind, error) {
	if !IsControlKind(s) {
		if name, param, ok := strings.Cut(strings.ToLower(s), ":"); ok && ControlKind(name) == Bubble {
			return "", fmt.Errorf("injection control %q: restrictive injection level %q: want %s", s, param, restrictLevelNames())
		}
		return "", fmt.Errorf("injection control %q: want %s", s, controlNames())
	}
	return ControlKind(strings.ToLower(s)), nil
}

// NewControl returns the controller the config selects for a network of
// nics NICs, or nil when there is no gate (No-Lim).
func NewControl(c ControlConfig, nics int) (Control, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	info, _ := lookupControl(c.Resolved())
	return info.new(c, nics), nil
}

// Control makes the gate of each NIC.
type Control interface {
	Kind() ControlKind
	// Measure is the transmission-time threshold the switches must mark
	// channels at (View.ChannelMarked), or 0 when the gate needs no
	// marking. The NIC tells the fabric before traffic flows.
	Measure(v View) float64
	// Gate returns NIC h's gate.
	Gate(h int) Gate
}

// Gate is one NIC's injection control.
type Gate interface {
	// Admit answers whether the NIC may start a new data packet of size
	// bytes for host dst now. When it may not, retry is the time (in
	// picoseconds, after now) at which the answer may change; the NIC
	// asks again then.
	Admit(dst, size int, v View) (ok bool, retry int64)
	// Injected records that a data packet of size bytes started at time
	// at (picoseconds).
	Injected(size int, at int64, v View)
	// Open returns how many injection channels are open now, for reports.
	Open() int
}

// PortGate is a Gate whose injection channels are real injection ports
// of the router (paper 001 §4.1: "Each node has four injection/ejection
// channels"; nic.injection_queues with mode physical): with k of them
// open, ports 0..k-1 may start packets and the others wait, instead of
// one link paced at k/N of its rate.
type PortGate interface {
	Gate
	// UsePorts tells the gate that its NIC has n injection ports, as many
	// as its channels.
	UsePorts(n int)
	// AdmitPort is Admit for a packet at the head of injection port q.
	AdmitPort(q, dst, size int, v View) (ok bool, retry int64)
}

// View is what a NIC and its switch could know, read-only (fabric
// measures it; nic passes it on). Channels are the local switch's ports.
type View interface {
	// Now is the simulated time in picoseconds.
	Now() int64
	// Serialization is the time bytes take on a link, in picoseconds.
	Serialization(bytes int) int64
	// Lanes is the number of virtual lanes per channel.
	Lanes() int
	// InjectionCredits returns the free credits (blocks) of lane vl of
	// the injection link.
	InjectionCredits(vl int) int
	// LocalFreeBlocks returns the free blocks of lane vl over the local
	// switch's input buffers.
	LocalFreeBlocks(vl int) int
	// UsefulChannels appends to buf the local switch's ports on a minimal
	// path to host dst (paper 001 §3, footnote 1).
	UsefulChannels(dst int, buf []int) []int
	// ChannelRatio returns the ratio of actual to minimum transmission
	// time last measured on the local switch's port ch, and when.
	ChannelRatio(ch int) (ratio float64, at int64, ok bool)
	// ChannelMarked returns the last time that ratio exceeded the
	// threshold Control.Measure asked for.
	ChannelMarked(ch int) (at int64, ok bool)
	// GlobalFullBuffers is global knowledge (Self-Tuned only): the lane
	// buffers of the whole network that cannot take another packet, and
	// how many there are.
	GlobalFullBuffers() (full, total int)
	// GlobalDelivered is global knowledge (Self-Tuned only): the packets
	// delivered so far over the whole network.
	GlobalDelivered() uint64
}

// u1Table is paper 001 Table 1: the best u1 per topology and virtual
// channels per physical channel.
var u1Table = []struct {
	dims  string
	lanes int
	u1    float64
}{
	{"8x8x8", 3, 4}, {"8x8x8", 4, 5},
	{"16x16", 3, 2.5}, {"16x16", 4, 3.75},
	{"16x16x16", 3, 2.25}, {"16x16x16", 4, 3.5},
	{"32x32", 3, 2}, {"32x32", 4, 3.25},
}

// DefaultU1 returns paper 001 Table 1's u1 for a k-ary n-cube of the given
// radices and lanes per channel; inTable is false when the pair is not in
// the table, and u1 is then the lanes per channel, the paper's starting
// point ("we used a value equal to the number of virtual channels per
// physical channel as the starting point", §4.2).
func DefaultU1(k []int, lanes int) (u1 float64, inTable bool) {
	ds := make([]string, len(k))
	for i, x := range k {
		ds[i] = strconv.Itoa(x)
	}
	dims := strings.Join(ds, "x")
	for _, e := range u1Table {
		if e.dims == dims && e.lanes == lanes {
			return e.u1, true
		}
	}
	return float64(lanes), false
}

// U1TableKeys lists the topologies of paper 001 Table 1 (for messages).
func U1TableKeys() string {
	var s []string
	for _, e := range u1Table {
		s = append(s, fmt.Sprintf("%s/%d lanes", e.dims, e.lanes))
	}
	return strings.Join(s, ", ")
}

// cycle is the length of one clock cycle in picoseconds: one flit on a
// link.
func (c ControlConfig) cycle(v View) int64 { return max(1, v.Serialization(c.FlitBytes)) }

// IsZero reports whether the configuration selects no gate (No-Lim), in
// which case the other parameters do not matter: run summaries (JSON) then
// leave the section out.
func (c ControlConfig) IsZero() bool { return c.Resolved() == NoLim }
