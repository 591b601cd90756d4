package injection

import (
	"fmt"
	"strings"
)

// Injection interfaces (paper 002 §2): a NIC with one or several FIFO
// injection queues, each feeding its own injection port of the local
// switch, either over a physical channel of its own or as a virtual
// channel sharing one physical injection link. A selection policy puts
// each new packet in one queue. The policies are listed in selectTable
// (one file per policy: select_sh.go, select_shp.go, select_lpath.go,
// select_static.go); they are pure functions of a QueueView.

// QueueMode says how a NIC's injection queues reach the switch.
type QueueMode string

// The two injection-channel organisations of paper 002 §2 (Figure 2).
const (
	// Virtual: the queues share one physical injection link; the NIC
	// sends from one queue at a time (4_vir_inj).
	Virtual QueueMode = "virtual"
	// Physical: one injection link per queue (4_phy_inj).
	Physical QueueMode = "physical"
)

// QueuesConfig is the injection interface of every NIC.
type QueuesConfig struct {
	Count    int       `yaml:"count" json:"count" doc:"injection queues per NIC, each with its own injection port at the local switch (1 = a single FIFO, today's NIC; 4 = one per direction of a 2D torus)" paper:"002 §2"`
	Mode     QueueMode `yaml:"mode" json:"mode" doc:"virtual: the queues share one physical injection link, one packet at a time; physical: one injection link per queue" paper:"002 §2, §4.1"`
	Select   string    `yaml:"select" json:"select" doc:"queue selection policy for each new packet: sh (shortest), shp (shortest among the queues of its minimal outputs), lpath (longest path first), static (the output of its deterministic route)" paper:"002 §2"`
	Capacity int       `yaml:"capacity" json:"capacity,omitempty" doc:"packets each injection queue holds when there are several; when the queue the policy picks is full, the source stalls (its later packets wait behind that one) until the queue has room; 0 = unbounded" paper:"002 §2-3 (8 packets)"`
	// OneLane makes each injection port one FIFO up to the crossbar.
	OneLane bool `yaml:"one_lane" json:"one_lane,omitempty" doc:"every injection queue enters its switch port on one lane (the first), so the port's input buffer is one FIFO whose head blocks the packets behind it, as paper 002's injection ports (its size is that lane's: fabric.escape_vl_buffer under adaptive routing); false: the injection link spreads packets over the lanes like any channel, so even one queue has a FIFO per lane at the switch" paper:"002 §2-3"`
}

// DefaultQueuesConfig is one queue: the single-FIFO NIC.
func DefaultQueuesConfig() QueuesConfig {
	return QueuesConfig{Count: 1, Mode: Virtual, Select: "sh"}
}

// MaxQueues bounds the injection queues per NIC.
const MaxQueues = 8

// Validate checks the configuration on its own.
func (c QueuesConfig) Validate() error {
	if c.Count < 1 || c.Count > MaxQueues {
		return fmt.Errorf("nic.injection_queues.count %d: want 1..%d", c.Count, MaxQueues)
	}
	if c.Capacity < 0 {
		return fmt.Errorf("nic.injection_queues.capacity %d: want 0 (unbounded) or more packets", c.Capacity)
	}
	if c.Mode != Virtual && c.Mode != Physical {
		return fmt.Errorf("nic.injection_queues.mode %q: want virtual or physical", c.Mode)
	}
	if _, ok := LookupSelect(c.Select); !ok {
		return fmt.Errorf("nic.injection_queues.select %q: want one of %s", c.Select, selectNames())
	}
	return nil
}

// QueueView is what a selection policy may read when it places one new
// packet of one NIC: the queues' populations and which queues lead to the
// outputs the packet can take at the first switch. Queue q is the queue of
// the switch's network ports whose rank (their order among the switch's
// ports that do not lead to hosts) is q modulo the number of queues; on a
// k-ary n-cube the rank of the +d port is 2d and of the -d port 2d+1, so
// four queues on a 2D torus are +X, -X, +Y, -Y (paper 002 Figure 1(c)).
type QueueView interface {
	// Queues is the number of queues.
	Queues() int
	// Len is the number of packets waiting in queue q.
	Len(q int) int
	// Minimal appends the queues of the outputs at the first switch that
	// lie on a minimal path to the destination (pre-routing).
	Minimal(buf []int) []int
	// Deterministic is the queue of the output the deterministic
	// (escape) route takes at the first switch.
	Deterministic() int
	// Offsets appends the signed minimal hop counts per dimension from
	// the source's switch to the destination's; nil when the topology has
	// no coordinates.
	Offsets(buf []int) []int
}

// SelectInfo describes one selection policy of the table.
type SelectInfo struct {
	Name        string
	Description string
	Source      string
	// NeedsCoords is true when the policy reads Offsets.
	NeedsCoords bool
	// FlowOrder is true when every packet from one source to one
	// destination goes to the same queue, so the NIC keeps their order.
	FlowOrder bool
	// Pick returns the queue for the packet the view describes.
	Pick func(v QueueView) int
}

// selectTable lists the selection policies a configuration may name. To
// add one, write it in a file of its own and add a line here.
func selectTable() []SelectInfo {
	return []SelectInfo{
		{Name: "sh", Source: "paper 002 §2", Description: "shortest: the queue with the fewest packets (ties: lowest queue)", Pick: pickShortest},
		{Name: "shp", Source: "paper 002 §2", Description: "shortest with pre-routing: among the queues of the packet's minimal outputs at the first switch, the one with the fewest packets", Pick: pickShortestPrerouted},
		{Name: "lpath", Source: "paper 002 §2", NeedsCoords: true, FlowOrder: true, Description: "longest path first: the queue of the direction with the most hops to travel, whatever its population (static)", Pick: pickLongestPath},
		{Name: "static", Source: "paper 002 §2, §4.2 (static port selection)", FlowOrder: true, Description: "static port assignment: the queue of the output the packet's deterministic route takes at the first switch", Pick: pickStatic},
	}
}

// SelectPolicies returns the table of selection policies.
func SelectPolicies() []SelectInfo { return selectTable() }

// LookupSelect finds a selection policy by name.
func LookupSelect(name string) (SelectInfo, bool) {
	for _, s := range selectTable() {
		if s.Name == name {
			return s, true
		}
	}
	return SelectInfo{}, false
}

func selectNames() string {
	var s []string
	for _, p := range selectTable() {
		s = append(s, p.Name)
	}
	return strings.Join(s, ", ")
}

// DirectionQueue is the queue of direction (d, negative) of a k-ary
// n-cube among n queues: the rank 2d (+d) or 2d+1 (-d), modulo n.
func DirectionQueue(d int, negative bool, n int) int {
	r := 2 * d
	if negative {
		r++
	}
	return r % n
}

// CubeOffsets appends to buf the signed minimal hop counts from
// coordinates src to dst in a k-ary n-cube: with wraparound (a torus) the
// shorter way round, the positive direction when both are as short.
func CubeOffsets(src, dst, k []int, wrap bool, buf []int) []int {
	for d := range k {
		off := dst[d] - src[d]
		if wrap && k[d] > 0 {
			fwd := ((off % k[d]) + k[d]) % k[d]
			if fwd <= k[d]-fwd {
				off = fwd
			} else {
				off = fwd - k[d]
			}
		}
		buf = append(buf, off)
	}
	return buf
}

// IsZero reports whether the configuration is the single-queue NIC, in
// which case summaries omit it (json omitzero): outputs of runs without
// several queues stay as they were.
func (c QueuesConfig) IsZero() bool { return c.Count <= 1 && !c.OneLane && c.Capacity == 0 }
