// Package pcap owns packet captures as load: it reads libpcap files
// (micro- and nanosecond timestamps, either byte order) and pcapng files
// (several interfaces, each with its own link type and timestamp
// resolution), plain or gzip/bzip2-compressed, one packet at a time in
// constant memory, decodes each frame's endpoints (MACs, IPv4/IPv6
// addresses, protocol, ports, TCP sequence numbers and flags) and
// summarises a capture: packets, bytes, rate, flows, truncated frames, and
// the TCP retransmissions and reordering already in it (RFC 4737 on TCP
// sequence numbers).
//
// Reading is gopacket's pure-Go pcapgo (the maintained
// github.com/gopacket/gopacket, which the design names); decoding is its
// layers package. A guard in front of pcapgo bounds every declared length
// before anything is allocated for it and locates every error by record
// and byte offset.
//
// Supported link types: Ethernet, Linux cooked capture v1 and v2 (SLL,
// SLL2) and raw IP (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6). A packet
// of any other link type is refused with an error naming the file, the
// record and the link type.
package pcap

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/fabemu/fabemu/tracefmt"
)

// Interface describes one capture interface: the whole file for pcap, an
// Interface Description Block for pcapng.
type Interface struct {
	ID       int             `json:"id"`
	Name     string          `json:"name,omitempty"`
	LinkType layers.LinkType `json:"-"`
	// Resolution is the timestamp unit in seconds (1e-6, 1e-9, 2^-k).
	Resolution float64 `json:"resolution_s"`
	// Snaplen is the interface's snap length (0: not limited).
	Snaplen uint32 `json:"snaplen"`
}

// Reader reads a capture one packet at a time. It is not safe for
// concurrent use.
type Reader struct {
	name   string
	format tracefmt.Format
	g      *guard
	pc     *pcapgo.Reader
	ng     *pcapgo.NgReader
	closer io.Closer
	file   *os.File

	section int // pcapng sections begun, to refresh the interface cache
	ifaces  []Interface
	ifSect  int
	n       int64
	err     error
	pkt     Packet
	dec     decoder
}

// Open opens a capture file, decompressing gzip or bzip2 by magic.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// NewReader reads a capture from src; name is used in error messages. The
// format (pcap or pcapng) is told by the magic number.
func NewReader(src io.Reader, name string) (*Reader, error) {
	br, closer, err := tracefmt.Decompress(src, name)
	if err != nil {
		return nil, err
	}
	head, _ := br.Peek(4)
	r := &Reader{name: name, closer: closer, format: tracefmt.Sniff(head)}
	switch r.format {
	case tracefmt.Pcap:
		r.g = &guard{r: br, name: name}
		r.pc, err = pcapgo.NewReader(r.g)
		if err == nil {
			res := 1e-6
			if r.pc.Resolution() == gopacket.TimestampResolutionNanosecond {
				res = 1e-9
			}
			r.ifaces = []Interface{{ID: 0, LinkType: r.pc.LinkType(), Resolution: res, Snaplen: r.pc.Snaplen()}}
		}
	case tracefmt.Pcapng:
		r.g = &guard{r: br, name: name, ng: true}
		r.ng, err = pcapgo.NewNgReader(r.g, pcapgo.NgReaderOptions{
			WantMixedLinkType:  true,
			SectionEndCallback: func([]pcapgo.NgInterface, pcapgo.NgSectionInfo) { r.section++ },
		})
	default:
		err = &tracefmt.ParseError{File: name, Msg: fmt.Sprintf("not a packet capture (no pcap or pcapng magic; first bytes % x)", head)}
	}
	if err != nil {
		closer.Close()
		return nil, r.wrap(err)
	}
	r.dec.init()
	return r, nil
}

// wrap turns an error of pcapgo into a *tracefmt.ParseError naming the
// file, the record and its byte offset; the guard's errors already are.
func (r *Reader) wrap(err error) error {
	var pe *tracefmt.ParseError
	if errors.As(err, &pe) || err == io.EOF {
		return err
	}
	if r.g == nil || !r.g.started {
		return &tracefmt.ParseError{File: r.name, Msg: err.Error()}
	}
	return r.g.fail("%v", err)
}

// Format is tracefmt.Pcap or tracefmt.Pcapng.
func (r *Reader) Format() tracefmt.Format { return r.format }

// Name is the name given to Open or NewReader.
func (r *Reader) Name() string { return r.name }

// Interfaces lists the interfaces met so far (for pcapng, those of the
// current section).
func (r *Reader) Interfaces() []Interface {
	if r.ng != nil {
		r.refreshIfaces()
	}
	return r.ifaces
}

func (r *Reader) refreshIfaces() {
	if r.ifSect == r.section && len(r.ifaces) == r.ng.NInterfaces() {
		return
	}
	r.ifaces, r.ifSect = r.ifaces[:0], r.section
	for i := range r.ng.NInterfaces() {
		ni, err := r.ng.Interface(i)
		if err != nil {
			break
		}
		res := ni.TimestampResolution
		unit := math.Pow10(-int(res.Exponent()))
		if res.Binary() {
			unit = math.Ldexp(1, -int(res.Exponent()))
		}
		r.ifaces = append(r.ifaces, Interface{ID: i, Name: ni.Name, LinkType: ni.LinkType, Resolution: unit, Snaplen: ni.SnapLength})
	}
}

// Close releases the file and the decompressor.
func (r *Reader) Close() error {
	err := r.closer.Close()
	if r.file != nil {
		if cerr := r.file.Close(); err == nil {
			err = cerr
		}
		r.file = nil
	}
	return err
}

// Next returns the next packet, or io.EOF after the last one. The Packet
// and its Data are valid until the next call. Malformed input gives a
// *tracefmt.ParseError naming the file, the record and its byte offset;
// after an error Next keeps returning it.
func (r *Reader) Next() (*Packet, error) {
	if r.err != nil {
		return nil, r.err
	}
	var (
		data []byte
		ci   gopacket.CaptureInfo
		err  error
	)
	if r.pc != nil {
		data, ci, err = r.pc.ZeroCopyReadPacketData()
	} else {
		data, ci, _, err = r.ng.ZeroCopyReadPacketDataWithOptions()
	}
	if err != nil {
		r.err = r.wrap(err)
		return nil, r.err
	}
	r.n++
	lt := r.ifaces
	var link layers.LinkType
	if r.pc != nil {
		link = lt[0].LinkType
	} else {
		r.refreshIfaces()
		if ci.InterfaceIndex < 0 || ci.InterfaceIndex >= len(r.ifaces) {
			r.err = r.g.fail("interface %d is not described in its section", ci.InterfaceIndex)
			return nil, r.err
		}
		link = r.ifaces[ci.InterfaceIndex].LinkType
	}
	if !Supported(link) {
		r.err = r.g.fail("link type %d (%s) is not supported (want Ethernet, Linux SLL or SLL2, raw IPv4/IPv6)", uint16(link), LinkName(link))
		return nil, r.err
	}
	p := &r.pkt
	*p = Packet{
		Record:    r.n,
		Time:      ci.Timestamp,
		CapLen:    ci.CaptureLength,
		OrigLen:   ci.Length,
		Interface: ci.InterfaceIndex,
		LinkType:  link,
		Data:      data,
	}
	r.dec.decode(p)
	return p, nil
}

// LinkName names a link type for people: gopacket's name, or for the raw
// IP types it has no name for, "IPv4" and "IPv6".
func LinkName(lt layers.LinkType) string {
	switch lt {
	case layers.LinkTypeIPv4:
		return "IPv4"
	case layers.LinkTypeIPv6:
		return "IPv6"
	}
	return lt.String()
}

// Supported reports whether frames of link type lt can be decoded.
func Supported(lt layers.LinkType) bool {
	switch lt {
	case layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2,
		layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		return true
	}
	return false
}
