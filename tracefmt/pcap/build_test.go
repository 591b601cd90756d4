package pcap

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Test captures are built here, byte by byte where gopacket's writers
// cannot (big-endian pcap, pcapng with several timestamp resolutions).

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
	ip4A = net.IP{10, 0, 0, 1}
	ip4B = net.IP{10, 0, 0, 2}
	ip6A = net.ParseIP("fd00::1")
	ip6B = net.ParseIP("fd00::2")
)

// seg describes a TCP or UDP packet to build.
type seg struct {
	v6               bool
	udp              bool
	sport, dport     uint16
	seq, ack         uint32
	syn, fin, ackSet bool
	payload          int
}

// ipPacket serialises an IP packet (no link header) for s.
func ipPacket(t testing.TB, s seg) []byte {
	t.Helper()
	var net gopacket.SerializableLayer
	var l4 gopacket.SerializableLayer
	tcp := &layers.TCP{SrcPort: layers.TCPPort(s.sport), DstPort: layers.TCPPort(s.dport), Seq: s.seq, Ack: s.ack,
		SYN: s.syn, FIN: s.fin, ACK: s.ackSet, Window: 65535}
	udp := &layers.UDP{SrcPort: layers.UDPPort(s.sport), DstPort: layers.UDPPort(s.dport)}
	proto := layers.IPProtocolTCP
	l4 = tcp
	if s.udp {
		proto, l4 = layers.IPProtocolUDP, udp
	}
	if s.v6 {
		ip := &layers.IPv6{Version: 6, NextHeader: proto, HopLimit: 64, SrcIP: ip6A, DstIP: ip6B}
		tcp.SetNetworkLayerForChecksum(ip)
		udp.SetNetworkLayerForChecksum(ip)
		net = ip
	} else {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: ip4A, DstIP: ip4B}
		tcp.SetNetworkLayerForChecksum(ip)
		udp.SetNetworkLayerForChecksum(ip)
		net = ip
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, net, l4, gopacket.Payload(make([]byte, s.payload))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ethFrame puts an IP packet in an Ethernet frame A -> B, with an 802.1Q
// tag when vlan is not 0.
func ethFrame(t testing.TB, s seg, vlan uint16) []byte {
	t.Helper()
	et := layers.EthernetTypeIPv4
	if s.v6 {
		et = layers.EthernetTypeIPv6
	}
	var hdr []byte
	hdr = append(hdr, macB...)
	hdr = append(hdr, macA...)
	if vlan != 0 {
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(layers.EthernetTypeDot1Q))
		hdr = binary.BigEndian.AppendUint16(hdr, vlan)
	}
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(et))
	return append(hdr, ipPacket(t, s)...)
}

// sllFrame is a Linux cooked capture v1 header (16 bytes) with source A.
func sllFrame(t testing.TB, s seg) []byte {
	et := layers.EthernetTypeIPv4
	if s.v6 {
		et = layers.EthernetTypeIPv6
	}
	h := []byte{0, 4, 0, 1, 0, 6} // sent by us, ARPHRD_ETHER, 6-byte address
	h = append(h, macA...)
	h = append(h, 0, 0)
	h = binary.BigEndian.AppendUint16(h, uint16(et))
	return append(h, ipPacket(t, s)...)
}

// sll2Frame is a Linux cooked capture v2 header (20 bytes) with source A.
func sll2Frame(t testing.TB, s seg) []byte {
	et := layers.EthernetTypeIPv4
	if s.v6 {
		et = layers.EthernetTypeIPv6
	}
	h := binary.BigEndian.AppendUint16(nil, uint16(et))
	h = append(h, 0, 0)                     // reserved
	h = binary.BigEndian.AppendUint32(h, 3) // interface index
	h = binary.BigEndian.AppendUint16(h, 1) // ARPHRD_ETHER
	h = append(h, 4, 6)                     // sent by us, 6-byte address
	h = append(h, macA...)
	h = append(h, 0, 0)
	return append(h, ipPacket(t, s)...)
}

// frame is one record to write.
type frame struct {
	iface   int
	ts      uint64 // in the interface's units since the epoch
	data    []byte
	origLen int // 0: len(data)
}

// pcapFile builds a libpcap file.
func pcapFile(order endian, nano bool, snaplen uint32, link layers.LinkType, frames []frame) []byte {
	magic := uint32(0xA1B2C3D4)
	div := uint64(1e6)
	if nano {
		magic, div = 0xA1B23C4D, 1e9
	}
	b := order.AppendUint32(nil, magic)
	b = order.AppendUint16(b, 2)
	b = order.AppendUint16(b, 4)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, snaplen)
	b = order.AppendUint32(b, uint32(link))
	for _, f := range frames {
		orig := f.origLen
		if orig == 0 {
			orig = len(f.data)
		}
		b = order.AppendUint32(b, uint32(f.ts/div))
		b = order.AppendUint32(b, uint32(f.ts%div))
		b = order.AppendUint32(b, uint32(len(f.data)))
		b = order.AppendUint32(b, uint32(orig))
		b = append(b, f.data...)
	}
	return b
}

// ngIface describes a pcapng interface: link type and if_tsresol byte.
type ngIface struct {
	link    layers.LinkType
	tsresol byte // 0: option absent (microseconds)
	name    string
	snaplen uint32
}

func ngBlock(order endian, typ uint32, body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	n := uint32(12 + len(body))
	b := order.AppendUint32(nil, typ)
	b = order.AppendUint32(b, n)
	b = append(b, body...)
	return order.AppendUint32(b, n)
}

func ngOption(order endian, code uint16, v []byte) []byte {
	b := order.AppendUint16(nil, code)
	b = order.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// pcapngFile builds a pcapng file with one section.
func pcapngFile(order endian, ifaces []ngIface, frames []frame) []byte {
	shb := order.AppendUint32(nil, 0x1A2B3C4D)
	shb = order.AppendUint16(shb, 1)
	shb = order.AppendUint16(shb, 0)
	shb = order.AppendUint64(shb, ^uint64(0)) // section length unknown
	b := ngBlock(order, ngSHB, shb)
	for _, in := range ifaces {
		body := order.AppendUint16(nil, uint16(in.link))
		body = order.AppendUint16(body, 0)
		body = order.AppendUint32(body, in.snaplen)
		if in.name != "" {
			body = append(body, ngOption(order, 2, []byte(in.name))...)
		}
		if in.tsresol != 0 {
			body = append(body, ngOption(order, 9, []byte{in.tsresol})...)
		}
		body = append(body, 0, 0, 0, 0) // opt_endofopt
		b = append(b, ngBlock(order, ngIDB, body)...)
	}
	for _, f := range frames {
		orig := f.origLen
		if orig == 0 {
			orig = len(f.data)
		}
		body := order.AppendUint32(nil, uint32(f.iface))
		body = order.AppendUint32(body, uint32(f.ts>>32))
		body = order.AppendUint32(body, uint32(f.ts))
		body = order.AppendUint32(body, uint32(len(f.data)))
		body = order.AppendUint32(body, uint32(orig))
		body = append(body, f.data...)
		b = append(b, ngBlock(order, ngEPB, body)...)
	}
	return b
}

// readAll reads every packet of data, copying the decoded fields.
func readAll(t testing.TB, name string, data []byte) ([]Packet, *Reader, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), name)
	if err != nil {
		return nil, nil, err
	}
	var out []Packet
	for {
		p, err := r.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return out, r, nil
			}
			return out, r, err
		}
		c := *p
		c.Data = append([]byte(nil), p.Data...)
		out = append(out, c)
	}
}

// at is a fixed capture time: 2026-11-23 10:00:00.123456789 UTC.
var at = time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.UTC)

// endian is a byte order that can also append.
type endian interface {
	binary.ByteOrder
	binary.AppendByteOrder
}
