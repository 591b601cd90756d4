// Package route owns routing: which (output port, virtual lane) pairs a
// packet may take at a switch. A Router returns the legal candidates, each
// marked escape or adaptive; a separate selection policy (Select) picks one
// from local state. Adding a routing algorithm never touches the switch.
//
// The escape sub-network follows Duato's methodology as used by paper 004
// §4.1 (one escape and one adaptive channel, up*/down* escape on regular and
// irregular networks): the escape function alone is connected and its
// channel dependency graph is acyclic, which CheckEscape verifies at build
// time; adaptive virtual lanes may take any minimal output, and a packet may
// fall back to the escape lane at any hop. Deterministic mode offers only
// the escape candidate, so packets of one source-destination pair follow
// one path and arrive in order.
//
// Selection (Select) takes the adaptive candidate with the most room; with
// the same-ring selection of paper 002 §3 the router first ranks adaptive
// outputs in the dimension the packet arrives on above those of another
// profitable dimension (Candidate.Pref).
//
// Escape functions: up*/down* (any topology; spanning tree by BFS from a
// root), dimension order with dateline virtual lanes (tori and meshes),
// dimension order with bubble flow control on tori (one escape lane, no
// dateline; ring entries need room for two packets, paper 002 §3), and
// destination-selected minimal paths on bidirectional multistage networks
// (every minimal path there is up*-then-down*).
package route

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/topo"
)

// Mode chooses between deterministic and adaptive routing.
type Mode string

const (
	Deterministic Mode = "deterministic"
	Adaptive      Mode = "adaptive"
)

// Config is the routing configuration.
type Config struct {
	Mode        Mode   `yaml:"mode" json:"mode" doc:"deterministic (escape function only; in order by construction) or adaptive (minimal adaptive lanes with a Duato escape lane)"`
	Escape      string `yaml:"escape" json:"escape" doc:"escape routing function: auto, updown, dor, bubble or min; auto picks dor on tori and meshes, min on multistage networks, updown elsewhere; none is True Fully Adaptive Routing (TFAR: any lane of any minimal output, no escape sub-network; adaptive mode only, adaptive_vls lanes per channel), which relies on fabric.deadlock.recovery software" paper:"004 §4.1; 002 §3 (bubble); 001 §4 (none: TFAR)"`
	AdaptiveVLs int    `yaml:"adaptive_vls" json:"adaptive_vls" doc:"virtual lanes for adaptive routing in adaptive mode (escape lanes come on top)" paper:"004 §4.1"`
	UpDownRoot  int    `yaml:"updown_root" json:"updown_root" doc:"root switch of the up*/down* spanning tree (BFS from it)"`
	Dateline    bool   `yaml:"dateline" json:"dateline" doc:"use two dateline escape lanes per torus dimension; false builds a cyclic escape function (for deadlock tests only)"`
	Check       string `yaml:"check" json:"check" doc:"escape channel dependency check: auto (exhaustive up to 20M route evaluations, else skipped with a note), full, off"`
	// Selection orders the adaptive candidates; empty is most-room.
	Selection string `yaml:"selection,omitempty" json:"selection,omitempty" doc:"selection among adaptive candidates: most-room (the one with most room, paper 004 §4.1; the default) or same-ring (on tori and meshes an adaptive lane in the dimension the packet arrives on first, then one in another profitable dimension, the escape last: the adaptive bubble router of paper 002 §3)" paper:"004 §4.1; 002 §3"`
}

// Selection policies (Config.Selection).
const (
	MostRoom = "most-room"
	SameRing = "same-ring"
)

// DefaultConfig is deterministic routing with the family's escape function.
func DefaultConfig() Config {
	return Config{Mode: Deterministic, Escape: "auto", AdaptiveVLs: 1, Dateline: true, Check: "auto"}
}

// Validate checks the configuration on its own.
func (c Config) Validate() error {
	switch c.Mode {
	case Deterministic, Adaptive:
	default:
		return fmt.Errorf("routing mode %q: want deterministic or adaptive", c.Mode)
	}
	if _, ok := lookupEscape(c.Escape); !ok && c.Escape != "auto" && c.Escape != EscapeNone {
		return fmt.Errorf("escape routing %q: want auto, %s, or none (TFAR)", c.Escape, escapeNames())
	}
	if c.Escape == EscapeNone && c.Mode != Adaptive {
		return fmt.Errorf("routing.escape none (TFAR) routes every packet adaptively: it needs routing.mode adaptive, not %q (deterministic routing uses only an escape function)", c.Mode)
	}
	if c.Mode == Adaptive && c.AdaptiveVLs < 1 {
		return fmt.Errorf("adaptive_vls = %d: adaptive routing needs at least 1", c.AdaptiveVLs)
	}
	if c.AdaptiveVLs < 0 || c.AdaptiveVLs > 14 {
		return fmt.Errorf("adaptive_vls = %d: want 0..14 (InfiniBand has at most 15 data lanes)", c.AdaptiveVLs)
	}
	switch c.Check {
	case "auto", "full", "off":
	default:
		return fmt.Errorf("check %q: want auto, full or off", c.Check)
	}
	switch c.Selection {
	case "", MostRoom, SameRing:
	default:
		return fmt.Errorf("selection %q: want %s or %s", c.Selection, MostRoom, SameRing)
	}
	return nil
}

// Candidate is one legal next hop: an output port and a virtual lane.
type Candidate struct {
	Port   int32
	VL     int32
	Escape bool
	// Bubble, when above 1, is how many whole packets (this one included)
	// the output lane must have room for before the packet may take it:
	// 2 where a packet enters a ring protected by bubble flow control
	// (paper 002 §3), more where the switch restricts injection (paper
	// 002 §5.1). 0 is plain virtual cut-through: room for the packet.
	Bubble int8
	// Pref ranks adaptive candidates for selection: a lower one wins over
	// any higher one that can take the packet, most room decides among
	// equals. 0 everywhere but under the same-ring selection, where an
	// output in another dimension than the packet's input has 1.
	Pref int8
}

// escaper is an escape routing function. It returns the single escape
// output (port, VL) at switch s for a packet to host dstHost on switch dst
// that arrived on inPort (the host only chooses among equal paths, as a
// per-destination forwarding table does); inVL is the lane it arrived on and inEscape whether that lane is
// an escape lane (false for packets from a host or an adaptive lane, which
// enter the escape sub-network afresh).
type escaper interface {
	name() string
	vls() int
	next(s, inPort, inVL int, inEscape bool, dst, dstHost int) (port, vl int)
}

// Router answers routing queries for one topology. It is immutable after
// New and safe to share.
type Router struct {
	t        *topo.Topology
	mode     Mode
	esc      escaper
	escVLs   int
	adVLs    int
	hostSw   []int32
	hostPort []int32
	dist     *distTable // minimal paths on general graphs
	cubeMin  *cube      // minimal paths on tori and meshes
	// rings is set when the escape function's rings are protected by
	// bubble flow control (bubble.go): ring entries need room for two
	// packets.
	rings bubbleRings
	// sameRing: adaptive outputs in the input's dimension come first
	// (Config.Selection same-ring, paper 002 §3).
	sameRing bool
	// tfar: no escape function at all (routing.escape none, tfar.go);
	// esc is nil and every lane is adaptive.
	tfar bool

	// checked: the dependency check was not turned off (routing.check).
	checked bool

	// CheckNote says what the escape check did ("acyclic: 1,234 channels",
	// or why it was skipped).
	CheckNote string
}

// minimal appends the output ports of s on minimal paths to switch dst.
// Direct calls (not a function value) let the caller's buffer stay on its
// stack.
func (r *Router) minimal(s, dst int, buf []int32) []int32 {
	if r.cubeMin != nil {
		return r.cubeMin.minimal(s, dst, buf)
	}
	return r.dist.minimal(s, dst, buf)
}

// New builds a router and, unless disabled, checks the escape channel
// dependency graph. A cyclic escape function is refused with the cycle
// named.
func New(t *topo.Topology, c Config) (*Router, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := &Router{t: t, mode: c.Mode}
	r.hostSw = make([]int32, t.NumHosts())
	r.hostPort = make([]int32, t.NumHosts())
	for h, host := range t.Hosts {
		r.hostSw[h] = int32(host.At.Switch)
		r.hostPort[h] = int32(host.At.Port)
	}
	esc := c.Escape
	if esc == "auto" {
		switch t.Kind {
		case topo.KindTorus, topo.KindMesh:
			esc = "dor"
		case topo.KindMIN:
			esc = "min"
		default:
			esc = "updown"
		}
	}
	isCube := t.Kind == topo.KindTorus || t.Kind == topo.KindMesh
	if isCube {
		r.cubeMin = newCube(t, true)
	} else {
		r.dist = newDistTable(t)
	}
	if esc == EscapeNone {
		r.tfar = true
	} else {
		info, _ := lookupEscape(esc)
		e, err := info.build(t, c)
		if err != nil {
			return nil, err
		}
		r.esc = e
		r.escVLs = r.esc.vls()
		r.rings, _ = e.(bubbleRings)
	}
	if c.Mode == Adaptive {
		r.adVLs = c.AdaptiveVLs
	}
	if c.Selection == SameRing {
		if !isCube {
			return nil, fmt.Errorf("selection %s needs a torus or a mesh (its rings are dimensions), topology %q is %s", SameRing, t.Name, t.Kind)
		}
		r.sameRing = true
	}
	if r.NumVLs() > 15 {
		return nil, fmt.Errorf("%d escape + %d adaptive lanes exceed the 15 data lanes of InfiniBand", r.escVLs, r.adVLs)
	}
	r.checked = c.Check != "off"
	switch {
	case c.Check == "off":
		r.CheckNote = "escape check disabled by configuration"
		if r.tfar {
			r.CheckNote = "no escape sub-network (TFAR); dependency check disabled by configuration; " + tfarRecovery
		}
	case r.tfar && c.Check == "auto" && r.tfarCheckCost() > 20_000_000:
		r.CheckNote = fmt.Sprintf("no escape sub-network (TFAR, %d lanes per channel): dependency graph not built (%d route evaluations exceed the auto limit of 20M); on tori and meshes it is cyclic; %s", r.adVLs, r.tfarCheckCost(), tfarRecovery)
	case r.tfar:
		r.checkTFAR()
	case c.Check == "auto" && r.checkCost() > 20_000_000:
		r.CheckNote = fmt.Sprintf("escape check skipped: %d route evaluations exceed the auto limit of 20M; %s is deadlock-free by construction", r.checkCost(), r.esc.name())
	default:
		if err := r.CheckEscape(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Checked reports whether the configuration lets the router check its
// dependency graph (routing.check not off).
func (r *Router) Checked() bool { return r.checked }

// Mode returns the routing mode.
func (r *Router) Mode() Mode { return r.mode }

// Bubble returns how many packets a ring's next buffer must have room for
// when a packet enters the ring (bubble flow control, paper 002 §3), or 0
// when the escape function has no bubble.
func (r *Router) Bubble() int {
	if r.rings == nil {
		return 0
	}
	return bubblePackets
}

// EscapeName names the escape function in use.
func (r *Router) EscapeName() string {
	if r.tfar {
		return "none (TFAR: any lane of any minimal output; deadlock recovery)"
	}
	return r.esc.name()
}

// NumVLs returns the number of virtual lanes every link carries: escape
// lanes first (0..EscapeVLs-1), then adaptive lanes.
func (r *Router) NumVLs() int { return r.escVLs + r.adVLs }

// EscapeVLs returns the number of escape lanes.
func (r *Router) EscapeVLs() int { return r.escVLs }

// IsEscape reports whether lane vl is an escape lane.
func (r *Router) IsEscape(vl int) bool { return vl < r.escVLs }

// HostSwitch returns the switch host h is attached to and the port.
func (r *Router) HostSwitch(h int) (sw, port int) { return int(r.hostSw[h]), int(r.hostPort[h]) }

// InjectionCandidates appends the lanes a host may use on its injection
// link: the escape lane 0 and, in adaptive mode, every adaptive lane. The
// port is always 0 (the host's only port).
func (r *Router) InjectionCandidates(buf []Candidate) []Candidate {
	buf = buf[:0]
	if r.tfar { // every lane is adaptive
		for a := 0; a < r.adVLs; a++ {
			buf = append(buf, Candidate{Port: 0, VL: int32(a)})
		}
		return buf
	}
	for a := 0; a < r.adVLs; a++ {
		buf = append(buf, Candidate{Port: 0, VL: int32(r.escVLs + a)})
	}
	return append(buf, Candidate{Port: 0, VL: 0, Escape: true})
}

// Candidates appends to buf the legal next hops at switch s for a packet to
// host dst that arrived on (inPort, inVL): the adaptive candidates first
// (every minimal output on every adaptive lane), then the escape candidate.
// At the destination switch the only candidate is the host's port on the
// packet's current lane (ejection channels are sinks and cannot deadlock).
func (r *Router) Candidates(s, inPort, inVL, dst int, buf []Candidate) []Candidate {
	buf = buf[:0]
	dsw := int(r.hostSw[dst])
	if dsw == s {
		return append(buf, Candidate{Port: r.hostPort[dst], VL: int32(inVL), Escape: inVL < r.escVLs})
	}
	if r.tfar {
		return r.tfarCandidates(s, dsw, buf)
	}
	inEscape := inVL < r.escVLs
	if _, fromSwitch := r.t.Peer(s, inPort); !fromSwitch {
		inEscape = false // injected by a host: enters the escape network afresh
	}
	ep, ev := r.esc.next(s, inPort, inVL, inEscape, dsw, dst)
	if r.adVLs > 0 {
		var ports [16]int32
		inDim := -2 // no port's dimension: every output ranks the same
		if r.sameRing {
			inDim = r.cubeMin.dimOf(inPort) // -1 from a host: likewise
		}
		for _, p := range r.minimal(s, dsw, ports[:0]) {
			var pref int8
			if inDim >= 0 && r.cubeMin.dimOf(int(p)) != inDim {
				pref = 1
			}
			for a := 0; a < r.adVLs; a++ {
				buf = append(buf, Candidate{Port: p, VL: int32(r.escVLs + a), Pref: pref})
			}
		}
	}
	c := Candidate{Port: int32(ep), VL: int32(ev), Escape: true}
	if r.rings != nil && r.rings.ringEntry(inPort, inEscape, ep) {
		c.Bubble = bubblePackets
	}
	return append(buf, c)
}

// State is the local switch state selection looks at: whether output
// (port, vl) can take the packet being routed now, and how much room it
// has (bytes or credits; only the order matters); and, for candidates with
// a Bubble, whether the output has room for that many packets of the
// packet's size (asked only then).
type State interface {
	Room(port, vl int32) (ok bool, free int)
	Bubble(port, vl int32, packets int) bool
}

// Select is the selection function of paper 004 §4.1: "the output port is
// selected at arbitration time by considering the status of the requested
// output ports and the number of credits available". room reports whether
// the (port, lane) can take the packet now and how many bytes it has free.
// Among adaptive candidates that can take it, those of the lowest Pref
// (the same-ring selection of paper 002 §3; all 0 otherwise) and among
// them the one with the most room win (ties go to the earlier candidate);
// the escape candidate is used only
// when no adaptive one can. A candidate with a Bubble above 1 can take the
// packet only when its output has room for that many packets (bubble flow
// control, paper 002 §3 and §5.1). It returns -1 when nothing can take the
// packet. An interface rather than a closure keeps the per-packet path free of
// allocation.
func Select(cands []Candidate, st State) int {
	best, bestFree, bestPref := -1, -1, int8(0)
	for i, c := range cands {
		if c.Escape || best >= 0 && c.Pref > bestPref {
			continue
		}
		if ok, free := st.Room(c.Port, c.VL); ok && (free > bestFree || best >= 0 && c.Pref < bestPref) {
			if c.Bubble > 1 && !st.Bubble(c.Port, c.VL, int(c.Bubble)) {
				continue
			}
			best, bestFree, bestPref = i, free, c.Pref
		}
	}
	if best >= 0 {
		return best
	}
	for i, c := range cands {
		if c.Escape {
			if ok, _ := st.Room(c.Port, c.VL); ok {
				if c.Bubble > 1 && !st.Bubble(c.Port, c.VL, int(c.Bubble)) {
					continue
				}
				return i
			}
		}
	}
	return -1
}
