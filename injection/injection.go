// Package injection owns the injection-control policies of a source NIC,
// in two tables. The NIC-level gates (control.go: no-lim, trans-t,
// self-tuned, papers 001 and 002) limit when any new data packet may enter
// the network, whatever the delivery mode; they read what a NIC and its
// switch could know through View. The per-connection delivery policies
// (this file) decide, connection by connection, whether one more packet
// (new or resent) may enter the network now after NACKs in
// adaptive-inorder delivery. The delivery policies are those of
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
// The policies are listed by name in one table (table, in this file), one
// file per policy (unlimited.go, limited.go); a configuration names one.
//
// The package is pure: no fabric, no I/O, no clock. The NIC (package nic)
// owns the connections and tells each connection's State what happened
// (injections, ACKs, NACKs); the State answers MayInject. The NIC asks
// its Gate (control.go) before every data packet, in every delivery mode.
//
// A third table holds the injection-queue selection policies of paper 002
// §2 (queues.go: sh, shp, lpath, static), which place each new packet in
// one of a NIC's injection queues.
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

// Kinds lists every policy name, in the order of the table.
func Kinds() []Kind {
	var ks []Kind
	for _, p := range table() {
		ks = append(ks, p.Kind)
	}
	return ks
}

// Info describes one policy of the table.
type Info struct {
	Kind        Kind
	Description string
	Source      string // paper and section
	// newConn returns the state of a new connection, in the UI state.
	newConn func() State
}

// table lists the policies a configuration may name. To add a policy,
// write its State in a file of its own and add a line here.
func table() []Info {
	return []Info{
		{Kind: Unlimited, Source: "paper 004 §3.3", Description: "a rejected packet is resent at once; new packets go as soon as possible",
			newConn: func() State { return &unlimited{} }},
		{Kind: LI, Source: "paper 004 §3.3", Description: "ADAP-LI: after a NACK the connection injects one packet per acknowledged packet until every rejected packet is acknowledged",
			newConn: func() State { return &limited{} }},
		{Kind: LW, Source: "paper 004 §3.3", Description: "ADAP-LW: after a NACK the connection injects what fits the free space the destination advertised (static reorder memory only)",
			newConn: func() State { return &limited{window: true} }},
	}
}

// Policies returns the table of policies.
func Policies() []Info { return table() }

func lookup(k Kind) (Info, bool) {
	for _, p := range table() {
		if p.Kind == k {
			return p, true
		}
	}
	return Info{}, false
}

func names() string {
	ks := Kinds()
	var b strings.Builder
	for i, k := range ks {
		switch {
		case i == 0:
		case i == len(ks)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(k))
	}
	return b.String()
}

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
	if _, ok := lookup(c.Resolved()); ok {
		return nil
	}
	return fmt.Errorf("injection.policy %q: want %s", c.Policy, names())
}

// ParseKind reads a policy name (case-insensitive).
func ParseKind(s string) (Kind, error) {
	c := Config{Policy: Kind(s)}
	if s == "" {
		return "", fmt.Errorf("injection policy: empty; want %s", names())
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
	info, _ := lookup(c.Resolved())
	return policy{info}, nil
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
// none of it. The NIC-level gates (Trans-t, Self-Tuned) read the fuller
// View of control.go instead; a per-connection policy that needs the
// channels' state may use these.
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
	// ChannelRatio returns the ratio of actual to minimum transmission
	// time last measured on port ch of the NIC's switch (paper 001 §3;
	// known only while the fabric measures it, see View).
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

type policy struct{ info Info }

func (p policy) Kind() Kind     { return p.info.Kind }
func (p policy) NewConn() State { return p.info.newConn() }
