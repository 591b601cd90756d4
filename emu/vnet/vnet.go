// Package vnet owns the offload metadata that crosses a TAP device opened
// with IFF_VNET_HDR: the virtio_net_hdr that precedes every frame (virtio
// 1.x specification §5.1.6 "Device Operation", struct virtio_net_hdr without
// num_buffers), and what to do with a frame whose offloads the receiver
// cannot take: complete a partial checksum (NEEDS_CSUM) and cut a TCP
// super-frame (GSO TCPv4/TCPv6) into MTU-sized segments with their IP and
// TCP headers and checksums rewritten (RFC 791, RFC 8200, RFC 9293 §3.1,
// checksum RFC 1071).
//
// The technique follows what wireguard-go (tun/offload_linux.go) and gVisor
// (pkg/tcpip/link/fdbased) do with the same kernel interface; the code here
// is written from the specifications. Parsing never panics: a header or
// frame that does not hold together yields an error naming what was wrong.
package vnet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// HeaderLen is the size of struct virtio_net_hdr as the TAP device is told
// to use it (TUNSETVNETHDRSZ; also the kernel's default).
const HeaderLen = 10

// Flags of virtio_net_hdr.flags.
const (
	FlagNeedsCsum = 1 // the checksum from CsumStart, stored at CsumStart+CsumOffset, is still to be completed
	FlagDataValid = 2 // the receiver may trust the checksums
)

// GSO types of virtio_net_hdr.gso_type.
const (
	GSONone  = 0
	GSOTCPv4 = 1
	GSOUDP   = 3
	GSOTCPv6 = 4
	GSOUDPL4 = 5
	GSOECN   = 0x80 // flag: the TCP stream set CWR/ECE
)

// Header is a decoded virtio_net_hdr. The zero Header is a plain frame
// with nothing left to do.
type Header struct {
	Flags      uint8
	GSOType    uint8
	HdrLen     uint16 // length of the headers to copy in front of every segment
	GSOSize    uint16 // payload bytes per segment
	CsumStart  uint16 // offset from the start of the frame where checksumming starts
	CsumOffset uint16 // offset from CsumStart where the checksum is stored
}

// IsGSO reports whether the frame is a super-frame the receiver must
// segment.
func (h Header) IsGSO() bool { return h.GSOType&^GSOECN != GSONone }

// Errors of Decode and Segment.
var (
	ErrShort       = errors.New("vnet: shorter than a virtio_net_hdr (10 bytes)")
	ErrUnsupported = errors.New("vnet: GSO type not supported (only TCPv4 and TCPv6)")
	ErrMalformed   = errors.New("vnet: frame does not match its virtio_net_hdr")
)

// Decode reads a virtio_net_hdr from b (little-endian: the device is set
// to TUNSETVNETLE).
func Decode(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrShort
	}
	h := Header{
		Flags:      b[0],
		GSOType:    b[1],
		HdrLen:     binary.LittleEndian.Uint16(b[2:]),
		GSOSize:    binary.LittleEndian.Uint16(b[4:]),
		CsumStart:  binary.LittleEndian.Uint16(b[6:]),
		CsumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
	return h, nil
}

// Encode writes h into b[:HeaderLen].
func (h Header) Encode(b []byte) {
	_ = b[HeaderLen-1]
	b[0], b[1] = h.Flags, h.GSOType
	binary.LittleEndian.PutUint16(b[2:], h.HdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.GSOSize)
	binary.LittleEndian.PutUint16(b[6:], h.CsumStart)
	binary.LittleEndian.PutUint16(b[8:], h.CsumOffset)
}

// checksum adds b to the one's-complement sum s (RFC 1071), unfolded.
func checksum(b []byte, s uint64) uint64 {
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		s += v >> 32
		s += v & 0xffffffff
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

func fold(s uint64) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// CompleteChecksum finishes a NEEDS_CSUM frame in place: the field at
// CsumStart+CsumOffset holds the pseudo-header sum, and the one's
// complement of the sum from CsumStart to the end goes there. Frames
// without the flag are left alone.
func CompleteChecksum(frame []byte, h Header) error {
	if h.Flags&FlagNeedsCsum == 0 {
		return nil
	}
	start, off := int(h.CsumStart), int(h.CsumStart)+int(h.CsumOffset)
	if start >= len(frame) || off+2 > len(frame) {
		return fmt.Errorf("%w: checksum at %d+%d outside a %d-byte frame", ErrMalformed, h.CsumStart, h.CsumOffset, len(frame))
	}
	c := ^fold(checksum(frame[start:], 0))
	binary.BigEndian.PutUint16(frame[off:], c)
	return nil
}

// layout is where a TCP super-frame's headers lie.
type layout struct {
	ip, tcp, payload int // offsets of the IP header, TCP header, payload
	v6               bool
}

func parseTCP(frame []byte, h Header) (layout, error) {
	var l layout
	switch h.GSOType &^ GSOECN {
	case GSOTCPv4:
	case GSOTCPv6:
		l.v6 = true
	default:
		return l, fmt.Errorf("%w: gso_type %d", ErrUnsupported, h.GSOType)
	}
	if h.GSOSize == 0 {
		return l, fmt.Errorf("%w: gso_size 0", ErrMalformed)
	}
	// The L3 header follows the Ethernet header and any VLAN tags; the L4
	// header starts at CsumStart (the kernel always sets it for TSO).
	l.ip = 14
	for l.ip+4 <= len(frame) {
		et := binary.BigEndian.Uint16(frame[l.ip-2:])
		if et != 0x8100 && et != 0x88a8 && et != 0x9100 {
			break
		}
		l.ip += 4
	}
	if l.ip > len(frame) {
		return l, fmt.Errorf("%w: frame of %d bytes ends in its Ethernet header", ErrMalformed, len(frame))
	}
	l.tcp = int(h.CsumStart)
	if l.tcp < l.ip+20 || l.tcp+20 > len(frame) {
		return l, fmt.Errorf("%w: TCP header at %d in a %d-byte frame (IP header at %d)", ErrMalformed, l.tcp, len(frame), l.ip)
	}
	if v := frame[l.ip] >> 4; (v == 6) != l.v6 || (v != 4 && v != 6) {
		return l, fmt.Errorf("%w: IP version %d for gso_type %d", ErrMalformed, v, h.GSOType)
	}
	if !l.v6 && int(frame[l.ip]&0xf)*4 != l.tcp-l.ip {
		return l, fmt.Errorf("%w: IPv4 header length %d, TCP header at offset %d", ErrMalformed, int(frame[l.ip]&0xf)*4, l.tcp-l.ip)
	}
	doff := int(frame[l.tcp+12]>>4) * 4
	l.payload = l.tcp + doff
	if doff < 20 || l.payload > len(frame) {
		return l, fmt.Errorf("%w: TCP data offset %d in a %d-byte frame", ErrMalformed, doff, len(frame))
	}
	return l, nil
}

// Segment cuts the TCP super-frame frame described by h into segments of
// at most h.GSOSize payload bytes, each a complete Ethernet frame with its
// IP length, IPv4 identification and header checksum, TCP sequence number,
// flags and checksum rewritten, and calls emit with each (the slice is only
// valid during the call). A frame that is not a super-frame is emitted
// once, its checksum completed if it needs one.
func Segment(frame []byte, h Header, buf []byte, emit func([]byte) error) error {
	if !h.IsGSO() {
		if h.Flags&FlagNeedsCsum != 0 {
			buf = append(buf[:0], frame...)
			if err := CompleteChecksum(buf, h); err != nil {
				return err
			}
			return emit(buf)
		}
		return emit(frame)
	}
	l, err := parseTCP(frame, h)
	if err != nil {
		return err
	}
	hdr := frame[:l.payload]
	data := frame[l.payload:]
	mss := int(h.GSOSize)
	seq := binary.BigEndian.Uint32(frame[l.tcp+4:])
	flags := frame[l.tcp+13]
	var id uint16
	if !l.v6 {
		id = binary.BigEndian.Uint16(frame[l.ip+4:])
	}
	n := 0
	for off := 0; off < len(data) || (off == 0 && len(data) == 0); off += mss {
		end := min(off+mss, len(data))
		buf = append(append(buf[:0], hdr...), data[off:end]...)
		ip, tcp := buf[l.ip:], buf[l.tcp:]
		segLen := len(buf) - l.ip
		if l.v6 {
			binary.BigEndian.PutUint16(ip[4:], uint16(len(buf)-l.ip-40))
		} else {
			binary.BigEndian.PutUint16(ip[2:], uint16(segLen))
			binary.BigEndian.PutUint16(ip[4:], id+uint16(n))
			ip[10], ip[11] = 0, 0
			binary.BigEndian.PutUint16(ip[10:], ^fold(checksum(ip[:l.tcp-l.ip], 0)))
		}
		binary.BigEndian.PutUint32(tcp[4:], seq+uint32(off))
		f := flags
		if end < len(data) {
			f &^= 0x01 | 0x08 // FIN and PSH only on the last segment
		}
		if off > 0 {
			f &^= 0x80 // CWR only on the first
		}
		tcp[13] = f
		tcp[16], tcp[17] = 0, 0
		tcpLen := len(buf) - l.tcp
		var s uint64
		if l.v6 {
			s = checksum(ip[8:40], 0) // source and destination
		} else {
			s = checksum(ip[12:20], 0)
		}
		s += uint64(tcpLen) + 6 // upper-layer length and next header / protocol (TCP)
		binary.BigEndian.PutUint16(tcp[16:], ^fold(checksum(tcp[:tcpLen], s)))
		if err := emit(buf); err != nil {
			return err
		}
		n++
		if len(data) == 0 {
			break
		}
	}
	return nil
}
