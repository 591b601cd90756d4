package pcap

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// MAC is a 48-bit link-layer address.
type MAC [6]byte

// String reads "aa:bb:cc:dd:ee:ff".
func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// TCPFlags are the TCP header flags, FIN in the lowest bit.
type TCPFlags uint16

// The TCP flags.
const (
	FIN TCPFlags = 1 << iota
	SYN
	RST
	PSH
	ACK
	URG
	ECE
	CWR
	NS
)

// String lists the set flags, "SYN|ACK".
func (f TCPFlags) String() string {
	names := [...]string{"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR", "NS"}
	s := ""
	for i, n := range names {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	return s
}

// Packet is one captured frame and what could be decoded of it. Fields
// the capture does not carry (a MAC in a raw IP capture, ports behind a
// snap length or in a non-first fragment) are zero with their Has flag
// clear.
type Packet struct {
	// Record is the 1-based packet number in the file.
	Record int64
	// Time is the capture timestamp (UTC), at the interface's resolution.
	Time time.Time
	// CapLen is the number of bytes captured; OrigLen the frame's length
	// on the wire. CapLen < OrigLen means the snap length cut the frame.
	CapLen, OrigLen int
	// Interface is the capture interface (pcapng: index in its section).
	Interface int
	LinkType  layers.LinkType
	// Data is the captured bytes, valid until the next Reader.Next.
	Data []byte

	// SrcMAC and DstMAC: Ethernet carries both; a Linux cooked capture
	// only the source (when it is 6 bytes long).
	SrcMAC, DstMAC       MAC
	HasSrcMAC, HasDstMAC bool
	// VLAN is the 802.1Q VLAN id of the outermost tag, 0 when untagged.
	VLAN uint16
	// EtherType is the network protocol (IPv4, IPv6, ARP, ...).
	EtherType layers.EthernetType

	// IPVersion is 4 or 6 when an IP header was decoded, else 0.
	IPVersion    uint8
	SrcIP, DstIP netip.Addr
	Proto        layers.IPProtocol
	// Fragment is set for an IPv4 fragment (ports are then not decoded).
	Fragment bool

	// HasPorts is set when a TCP or UDP header was decoded.
	HasPorts         bool
	SrcPort, DstPort uint16
	// TCP: sequence and acknowledgement numbers and flags.
	Seq, Ack uint32
	Flags    TCPFlags
	// Payload is the transport payload length by the headers' lengths (TCP
	// or UDP), so it is right for frames the snap length cut.
	Payload int

	// DecodeError tells why decoding stopped before the transport header
	// when it did ("" when every header present was decoded).
	DecodeError string
}

// Truncated reports whether the snap length cut the frame.
func (p *Packet) Truncated() bool { return p.CapLen < p.OrigLen }

// IsTCP reports whether a TCP header was decoded.
func (p *Packet) IsTCP() bool { return p.HasPorts && p.Proto == layers.IPProtocolTCP }

// decoder holds gopacket's preallocated layers and one parser per link
// type, so that decoding allocates nothing per packet.
type decoder struct {
	eth     layers.Ethernet
	sll     layers.LinuxSLL
	sll2    layers.LinuxSLL2
	dot1q   layers.Dot1Q
	ip4     layers.IPv4
	ip6     layers.IPv6
	tcp     layers.TCP
	udp     layers.UDP
	parsers map[gopacket.LayerType]*gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
}

func (d *decoder) init() {
	d.parsers = map[gopacket.LayerType]*gopacket.DecodingLayerParser{}
	for _, first := range []gopacket.LayerType{layers.LayerTypeEthernet, layers.LayerTypeLinuxSLL,
		layers.LayerTypeLinuxSLL2, layers.LayerTypeIPv4, layers.LayerTypeIPv6} {
		p := gopacket.NewDecodingLayerParser(first, &d.eth, &d.sll, &d.sll2, &d.dot1q, &d.ip4, &d.ip6, &d.tcp, &d.udp)
		p.IgnoreUnsupported = true
		d.parsers[first] = p
	}
	d.decoded = make([]gopacket.LayerType, 0, 8)
}

func (d *decoder) decode(p *Packet) {
	var first gopacket.LayerType
	switch p.LinkType {
	case layers.LinkTypeEthernet:
		first = layers.LayerTypeEthernet
	case layers.LinkTypeLinuxSLL:
		first = layers.LayerTypeLinuxSLL
	case layers.LinkTypeLinuxSLL2:
		first = layers.LayerTypeLinuxSLL2
	case layers.LinkTypeIPv4:
		first = layers.LayerTypeIPv4
	case layers.LinkTypeIPv6:
		first = layers.LayerTypeIPv6
	case layers.LinkTypeRaw:
		if len(p.Data) == 0 {
			p.DecodeError = "empty frame"
			return
		}
		switch p.Data[0] >> 4 {
		case 4:
			first = layers.LayerTypeIPv4
		case 6:
			first = layers.LayerTypeIPv6
		default:
			p.DecodeError = fmt.Sprintf("raw frame with IP version %d", p.Data[0]>>4)
			return
		}
	default:
		return
	}
	err := d.parsers[first].DecodeLayers(p.Data, &d.decoded)
	var l4len = -1 // transport length by the IP header, -1 unknown
	for _, lt := range d.decoded {
		switch lt {
		case layers.LayerTypeEthernet:
			copy(p.SrcMAC[:], d.eth.SrcMAC)
			copy(p.DstMAC[:], d.eth.DstMAC)
			p.HasSrcMAC, p.HasDstMAC = true, true
			p.EtherType = d.eth.EthernetType
		case layers.LayerTypeLinuxSLL:
			if len(d.sll.Addr) == 6 {
				copy(p.SrcMAC[:], d.sll.Addr)
				p.HasSrcMAC = true
			}
			p.EtherType = d.sll.EthernetType
		case layers.LayerTypeLinuxSLL2:
			if len(d.sll2.Addr) == 6 {
				copy(p.SrcMAC[:], d.sll2.Addr)
				p.HasSrcMAC = true
			}
			p.EtherType = d.sll2.ProtocolType
		case layers.LayerTypeDot1Q:
			if p.VLAN == 0 {
				p.VLAN = d.dot1q.VLANIdentifier
			}
			p.EtherType = d.dot1q.Type
		case layers.LayerTypeIPv4:
			p.IPVersion = 4
			p.SrcIP = addr4(d.ip4.SrcIP)
			p.DstIP = addr4(d.ip4.DstIP)
			p.Proto = d.ip4.Protocol
			p.Fragment = d.ip4.Flags&layers.IPv4MoreFragments != 0 || d.ip4.FragOffset != 0
			if d.ip4.Length != 0 { // 0: segmentation offload, length unknown
				l4len = int(d.ip4.Length) - int(d.ip4.IHL)*4
			}
			if first == layers.LayerTypeIPv4 {
				p.EtherType = layers.EthernetTypeIPv4
			}
		case layers.LayerTypeIPv6:
			p.IPVersion = 6
			p.SrcIP = addr16(d.ip6.SrcIP)
			p.DstIP = addr16(d.ip6.DstIP)
			p.Proto = d.ip6.NextHeader
			if d.ip6.HopByHop != nil {
				p.Proto = d.ip6.HopByHop.NextHeader
			}
			if d.ip6.Length != 0 { // 0: jumbogram or offload
				l4len = int(d.ip6.Length) - (len(d.ip6.Contents) - 40)
			}
			if first == layers.LayerTypeIPv6 {
				p.EtherType = layers.EthernetTypeIPv6
			}
		case layers.LayerTypeTCP:
			p.HasPorts = true
			p.SrcPort, p.DstPort = uint16(d.tcp.SrcPort), uint16(d.tcp.DstPort)
			p.Seq, p.Ack = d.tcp.Seq, d.tcp.Ack
			p.Flags = tcpFlags(&d.tcp)
			hdr := int(d.tcp.DataOffset) * 4
			if l4len >= 0 {
				p.Payload = max(l4len-hdr, 0)
			} else {
				p.Payload = len(d.tcp.Payload)
			}
		case layers.LayerTypeUDP:
			p.HasPorts = true
			p.SrcPort, p.DstPort = uint16(d.udp.SrcPort), uint16(d.udp.DstPort)
			if d.udp.Length >= 8 {
				p.Payload = int(d.udp.Length) - 8
			} else {
				p.Payload = len(d.udp.Payload)
			}
		}
	}
	if err != nil {
		p.DecodeError = err.Error()
	} else if p.IPVersion != 0 && !p.Fragment && !p.HasPorts &&
		(p.Proto == layers.IPProtocolTCP || p.Proto == layers.IPProtocolUDP) {
		p.DecodeError = "transport header not captured"
	}
}

func addr4(b []byte) netip.Addr {
	if len(b) != 4 {
		return netip.Addr{}
	}
	return netip.AddrFrom4([4]byte(b))
}

func addr16(b []byte) netip.Addr {
	if len(b) != 16 {
		return netip.Addr{}
	}
	return netip.AddrFrom16([16]byte(b))
}

func tcpFlags(t *layers.TCP) TCPFlags {
	var f TCPFlags
	for i, set := range []bool{t.FIN, t.SYN, t.RST, t.PSH, t.ACK, t.URG, t.ECE, t.CWR, t.NS} {
		if set {
			f |= 1 << i
		}
	}
	return f
}

// Decoder decodes frames that did not come from a file (a live capture's
// ring buffer) into Packets, with the same rules as Reader. It allocates
// nothing per frame; one Decoder serves one goroutine.
type Decoder struct{ d decoder }

// NewDecoder returns a decoder.
func NewDecoder() *Decoder {
	d := &Decoder{}
	d.d.init()
	return d
}

// Decode fills p's decoded fields from p.LinkType and p.Data (p.CapLen,
// p.OrigLen, p.Time and p.Record are the caller's). Link types Reader
// refuses are left undecoded.
func (d *Decoder) Decode(p *Packet) { d.d.decode(p) }
