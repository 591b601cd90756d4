// Package ether parses and classifies the Ethernet frames that cross the
// daemon's boundary (TAP devices, captures).
//
// It owns the Ethernet II header layout (IEEE 802.3 clause 3.1.1 without
// preamble and FCS, as TAP devices deliver frames), 802.1Q / 802.1ad VLAN tags,
// destination classification (unicast, multicast, broadcast) and size
// validation against an MTU. Parsing never allocates and never panics: every
// input either yields a Header or one of the sentinel errors below.
package ether

import (
	"encoding/binary"
	"errors"
)

// Sizes in bytes.
const (
	// HeaderLen is the untagged Ethernet II header: destination MAC, source
	// MAC, EtherType.
	HeaderLen = 14
	// TagLen is one 802.1Q or 802.1ad tag (TPID + TCI).
	TagLen = 4
	// MaxTags is how many stacked VLAN tags Parse walks (802.1ad Q-in-Q).
	MaxTags = 2
	// MaxHeaderLen is the longest header Parse produces.
	MaxHeaderLen = HeaderLen + MaxTags*TagLen
)

// Tag protocol identifiers that Parse treats as VLAN tags.
const (
	TPID8021Q      = 0x8100 // IEEE 802.1Q customer tag
	TPID8021AD     = 0x88a8 // IEEE 802.1ad service tag
	TPIDQinQLegacy = 0x9100 // pre-standard Q-in-Q
)

// Errors returned by Parse and Validate. They are values (compare with
// errors.Is) so the receive path can classify them without allocating.
var (
	ErrTooShort = errors.New("ether: frame shorter than its Ethernet header (14 bytes plus 4 per VLAN tag)")
	ErrTooLong  = errors.New("ether: frame payload longer than the MTU")
	ErrBadMTU   = errors.New("ether: MTU must be positive")
)

// MAC is a 48-bit IEEE 802 MAC address.
type MAC [6]byte

// BroadcastMAC is the all-ones destination address.
var BroadcastMAC = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// IsBroadcast reports whether m is ff:ff:ff:ff:ff:ff.
func (m MAC) IsBroadcast() bool { return m == BroadcastMAC }

// IsMulticast reports whether the individual/group bit (the least
// significant bit of the first octet, IEEE 802 §8.2) is set. Broadcast is a
// multicast address by this definition.
func (m MAC) IsMulticast() bool { return m[0]&0x01 != 0 }

// IsLocal reports whether the universal/local bit is set (a locally
// administered address, as the daemon assigns to TAP devices).
func (m MAC) IsLocal() bool { return m[0]&0x02 != 0 }

// String formats m as six colon-separated lower-case hex octets.
func (m MAC) String() string {
	const hexDigits = "0123456789abcdef"
	buf := make([]byte, 0, 17)
	for i, b := range m {
		if i > 0 {
			buf = append(buf, ':')
		}
		buf = append(buf, hexDigits[b>>4], hexDigits[b&0x0f])
	}
	return string(buf)
}

// Class is how a frame's destination is delivered.
type Class uint8

// Destination classes.
const (
	Unicast   Class = iota // one station owns the destination MAC
	Multicast              // group address other than broadcast (e.g. IPv6 neighbour discovery)
	Broadcast              // ff:ff:ff:ff:ff:ff (e.g. ARP requests)
)

// String names the class.
func (c Class) String() string {
	switch c {
	case Unicast:
		return "unicast"
	case Multicast:
		return "multicast"
	case Broadcast:
		return "broadcast"
	}
	return "class(?)"
}

// Classify returns the delivery class of destination address dst.
func Classify(dst MAC) Class {
	switch {
	case dst.IsBroadcast():
		return Broadcast
	case dst.IsMulticast():
		return Multicast
	}
	return Unicast
}

// Header is a parsed Ethernet header.
type Header struct {
	Dst, Src MAC
	// EtherType is the type after any VLAN tags. Values below 0x0600 are an
	// IEEE 802.3 length field (LLC frame), not a type. If more than MaxTags
	// tags are stacked, it is the TPID of the first unparsed tag.
	EtherType uint16
	// Tags is the number of VLAN tags parsed (0..MaxTags).
	Tags int
	// VLAN is the 12-bit VLAN identifier of the outermost tag, 0 if untagged.
	VLAN uint16
	// Len is the header length in bytes including tags: the payload offset.
	Len int
}

// Class returns the delivery class of the frame's destination.
func (h *Header) Class() Class { return Classify(h.Dst) }

func isTPID(t uint16) bool {
	return t == TPID8021Q || t == TPID8021AD || t == TPIDQinQLegacy
}

// Parse reads the Ethernet header of frame (no preamble, no FCS). It returns
// ErrTooShort if frame cannot hold the header and the tags it announces.
func Parse(frame []byte) (Header, error) {
	var h Header
	if len(frame) < HeaderLen {
		return h, ErrTooShort
	}
	copy(h.Dst[:], frame[0:6])
	copy(h.Src[:], frame[6:12])
	off := 12
	et := binary.BigEndian.Uint16(frame[off:])
	for isTPID(et) && h.Tags < MaxTags {
		// A tag is TPID(2) TCI(2) followed by the next type field (2).
		if len(frame) < off+TagLen+2 {
			return Header{}, ErrTooShort
		}
		if h.Tags == 0 {
			h.VLAN = binary.BigEndian.Uint16(frame[off+2:]) & 0x0fff
		}
		h.Tags++
		off += TagLen
		et = binary.BigEndian.Uint16(frame[off:])
	}
	h.EtherType = et
	h.Len = off + 2
	return h, nil
}

// MaxFrameLen is the longest frame Validate accepts for mtu: the MTU (the
// largest payload) plus the longest header.
func MaxFrameLen(mtu int) int { return mtu + MaxHeaderLen }

// Validate parses frame and checks that its payload fits mtu (payload =
// frame length minus header and tags, as Linux counts MTU).
func Validate(frame []byte, mtu int) (Header, error) {
	if mtu <= 0 {
		return Header{}, ErrBadMTU
	}
	h, err := Parse(frame)
	if err != nil {
		return h, err
	}
	if len(frame)-h.Len > mtu {
		return h, ErrTooLong
	}
	return h, nil
}
