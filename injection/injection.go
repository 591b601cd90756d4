// Package injection owns the injection-control policies of a source NIC:
// the rule that decides, connection by connection, whether one more packet
// (new or resent) may enter the network now. It implements the policies of
// paper 004 §3.3 (Martínez et al., "In-Order Packet Delivery in
// Interconnection Networks using Adaptive Routing"):
//
//   - unlimited: a rejected packet is resent at once, new packets go as soon
//     as possible ("the easiest way is re-sending immediately the rejected
//     packet");
//   - li (ADAP-LI): two states per connection, unlimited injection (UI) and
//     limited injection (LI); after a NACK the connection injects only as
//     ACKs arrive, one packet per acknowledged packet, until every rejected
//     packet is acknowledged;
//   - lw (ADAP-LW): like li, but in the LI state the connection injects what
//     fits the free space the destination last advertised (static memory
//     only: with dynamic memory the space a connection can use is not known
//     in advance, §4.3).
//
// The package is pure: no fabric, no I/O, no clock. The NIC (package nic)
// owns the connections and tells each connection's State what happened
// (injections, ACKs, NACKs); the State answers MayInject. Policies that
// look at the NIC's surroundings (Trans-t, bubble-based restrictive
// injection) read them through the Local view, so they fit behind the same
// interface.
package injection

import (
	"fmt"
	"strings"
)

// Kind names an injection policy.
type Kind string

// The policies of paper 004 §3.3.
const (
	Unlimited Kind = "unlimited"
	LI        Kind = "li"
	LW        Kind = "lw"
)

// Kinds lists every policy name.
func Kinds() []Kind { return []Kind{Unlimited, LI, LW} }

// Config selects and parameterises the injection policy of every source
// connection.
type Config struct {
	Policy Kind `yaml:"policy" json:"policy" doc:"injection control after a NACK: unlimited (resend at once), li (ADAP-LI: UI/LI states, in LI one packet per acknowledged packet) or lw (ADAP-LW: in LI only what fits the destination's advertised free space; static reorder memory only); empty = li" paper:"004 §3.3"`
}

// DefaultConfig is ADAP-LI, the policy paper 004 §4.3 prefers ("Either
// Adap-LI or Adap-LW work fine, being Adap-LI preferable due to its easier
// implementation").
func DefaultConfig() Config { return Config{Policy: LI} }

// Resolved returns the policy kind with the empty default filled in.
func (c Config) Resolved() Kind {
	if c.Policy == "" {
		return LI
	}
	return Kind(strings.ToLower(string(c.Policy)))
}

// Validate checks the policy name.
func (c Config) Validate() error {
	switch c.Resolved() {
	case Unlimited, LI, LW:
		return nil
	}
	return fmt.Errorf("injection.policy %q: want unlimited, li or lw", c.Policy)
}

// ParseKind reads a policy name (case-insensitive).
func ParseKind(s string) (Kind, error) {
	c := Config{Policy: Kind(s)}
	if s == "" {
		return "", fmt.Errorf("injection policy: empty; want unlimited, li or lw")
	}
	if err := c.Validate(); err != nil {
		return "", err
	}
	return c.Resolved(), nil
}

// New returns the policy the config selects.
func New(c Config) (Policy, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return policy{kind: c.Resolved()}, nil
}

// Policy makes the per-connection state of one injection policy.
type Policy interface {
	// Kind names the policy.
	Kind() Kind
	// NewConn returns the state of a new connection, in the UI state.
	NewConn() State
}

// Local is what a source NIC knows about its own surroundings when it
// decides to inject. Every method reports known = false when the NIC
// cannot tell (the fabric does not expose it); a policy must then behave
// as if the answer did not restrict it. The policies of paper 004 need
// none of it; Trans-t needs the transmission-time ratio of the channels
// and bubble-based restrictive injection the free buffers of the
// injection channel, which is why they are here.
type Local interface {
	// Now is the simulated time in picoseconds.
	Now() int64
	// InjectionBusy reports whether the NIC's injection channel is
	// transmitting.
	InjectionBusy() (busy, known bool)
	// InjectionCredits returns the free credits (in credit blocks) of
	// virtual lane vl of the injection link.
	InjectionCredits(vl int) (blocks int, known bool)
	// FreeBuffers returns how many whole packets of the largest size the
	// first switch's input buffer on the injection link can still take
	// (restrictive injection reserves a bubble there).
	FreeBuffers() (packets int, known bool)
	// ChannelRatio returns the fraction of recent time the channel ch
	// spent transmitting (Trans-t).
	ChannelRatio(ch int) (ratio float64, known bool)
	// QueuedPackets is the number of packets waiting at this NIC to be
	// injected, over all connections.
	QueuedPackets() int
}

// Candidate is the packet a connection would inject next, and the
// connection's status as its NIC sees it.
type Candidate struct {
	// Size is the packet's size in the destination's rearrangement
	// buffer, in bytes.
	Size int
	// Resend is true for a packet rejected earlier.
	Resend bool
	// HeadOfLine is true when the packet is a resend of the connection's
	// oldest unacknowledged packet. Every packet before it was delivered,
	// so the destination expects exactly this one: it is accepted whatever
	// the buffer holds, and its delivery produces the ACK the LI state
	// waits for.
	HeadOfLine bool
	// InFlight and InFlightBytes count the connection's packets injected
	// whose ACK or NACK has not come back yet.
	InFlight      int
	InFlightBytes int64
}

// Ack is one ACK as the source sees it.
type Ack struct {
	// Packets is how many packets the (cumulative) ACK newly acknowledges.
	Packets int
	// Rejected is how many of them had been rejected at least once.
	Rejected int
	// Room is the free rearrangement space for this connection that the
	// destination advertised with the ACK, in bytes; RoomKnown is false
	// when the destination cannot say (unlimited memory).
	Room      int64
	RoomKnown bool
	// InFlightBytes is the connection's in-flight bytes after the ACK.
	InFlightBytes int64
}

// Nack is one NACK as the source sees it.
type Nack struct {
	// First is true when the packet had not been rejected before.
	First bool
	// Room and RoomKnown: as in Ack.
	Room      int64
	RoomKnown bool
	// InFlightBytes is the connection's in-flight bytes after the NACK.
	InFlightBytes int64
}

// State is one connection's injection state.
type State interface {
	// MayInject answers: may the connection inject the candidate now?
	MayInject(c Candidate, l Local) bool
	// Injected records that the candidate was injected.
	Injected(c Candidate)
	// Acked records an ACK that acknowledged at least one packet.
	Acked(a Ack)
	// Nacked records a NACK.
	Nacked(n Nack)
	// Limited reports whether the connection is in the LI state.
	Limited() bool
}

type policy struct{ kind Kind }

func (p policy) Kind() Kind { return p.kind }

func (p policy) NewConn() State {
	switch p.kind {
	case Unlimited:
		return &unlimited{}
	case LW:
		return &limited{window: true}
	}
	return &limited{}
}

// unlimited resends at once and never limits (paper 004 §3.3, first
// paragraph).
type unlimited struct{}

func (*unlimited) MayInject(Candidate, Local) bool { return true }
func (*unlimited) Injected(Candidate)              {}
func (*unlimited) Acked(Ack)                       {}
func (*unlimited) Nacked(Nack)                     {}
func (*unlimited) Limited() bool                   { return false }

// limited is ADAP-LI, or ADAP-LW when window is set (paper 004 §3.3).
type limited struct {
	window bool
	// rejected counts the connection's packets rejected at least once and
	// not yet acknowledged; the connection is in LI while it is positive
	// ("When there are one or more outstanding packets that have been
	// rejected at least once, then the connection switches to the LI
	// state", §3.3).
	rejected int
	// allowance is, in LI, how many packets (li) or bytes (lw) may still
	// be injected.
	allowance int64
}

func (s *limited) Limited() bool { return s.rejected > 0 }

func (s *limited) MayInject(c Candidate, _ Local) bool {
	if s.rejected == 0 || c.HeadOfLine {
		// UI: "all newly generated packets are injected into the network
		// as soon as possible". The head-of-line resend is exempt from LI
		// (a liveness rule the paper leaves implicit): it is certain to be
		// accepted, and when the only packets that could produce an ACK
		// are waiting to be resent, no ACK would ever come otherwise.
		return true
	}
	if s.window {
		return s.allowance >= int64(c.Size)
	}
	return s.allowance > 0
}

func (s *limited) Injected(c Candidate) {
	if s.rejected == 0 {
		return
	}
	if s.window {
		s.allowance = max(0, s.allowance-int64(c.Size))
	} else if s.allowance > 0 {
		s.allowance--
	}
}

func (s *limited) Acked(a Ack) {
	s.rejected = max(0, s.rejected-a.Rejected)
	if s.rejected == 0 {
		// "the connection status is switched to the UI state when all the
		// pending rejected packets are acknowledged" (§3.3); unused
		// allowance does not carry over.
		s.allowance = 0
		return
	}
	if s.window {
		s.advertise(a.Room, a.RoomKnown, a.InFlightBytes)
		return
	}
	// "In the LI state, a packet is injected or re-injected only when an
	// <ACK sn> packet for this connection has been received. Indeed, in
	// this situation, a number of packets up to the number of acknowledged
	// packets may be injected" (§3.3).
	s.allowance += int64(a.Packets)
}

func (s *limited) Nacked(n Nack) {
	if n.First {
		if s.rejected == 0 {
			s.allowance = 0 // entering LI
		}
		s.rejected++
	}
	if s.window && s.rejected > 0 {
		s.advertise(n.Room, n.RoomKnown, n.InFlightBytes)
	}
}

// advertise sets the LW window from the destination's free space: "the
// source node will just inject the number of packets that fit at
// destination buffer" (§3.3). Bytes still in flight will take their share
// of that space, so the window is the advertised room minus them (as TCP's
// usable window is the receiver window minus the data in flight).
func (s *limited) advertise(room int64, known bool, inFlight int64) {
	if !known {
		s.allowance = 1 << 62
		return
	}
	s.allowance = max(0, room-inFlight)
}
