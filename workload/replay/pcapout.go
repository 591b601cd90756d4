package replay

// What leaves the fabric, as pcapng: one interface per host ("host N"),
// a packet per frame (capture replay) or per message (block-trace replay)
// when it is delivered to its host, stamped with the simulated time, and
// the fabric's metadata in the packet comment (docs/capture.md).

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/tracefmt"
)

// PcapOut is where a replay writes what left the fabric.
type PcapOut struct {
	// W receives the pcapng stream; Name names it in errors.
	W    io.Writer
	Name string
}

// msgMeta is what the fabric did to one message's packets, gathered as
// they reach the destination NIC.
type msgMeta struct {
	packets int
	late    int    // packets that reached the NIC after one numbered later on their host pair
	maxHops int16  // switches traversed, the most of any packet
	lanes   uint64 // virtual lanes of the last link, as a bit set
}

// pcapOut writes the delivered frames as pcapng.
type pcapOut struct {
	dst    io.Writer
	w      *pcapgo.NgWriter
	name   string
	link   layers.LinkType // of interfaces 0..hosts-1
	extra  map[[2]int]int  // (host, other link type) -> interface
	meta   map[*nic.Message]*msgMeta
	pool   []*msgMeta
	high   map[uint64]uint64 // host pair -> highest sequence number seen + 1
	buf    []byte
	cmt    []byte
	frames int64
	err    error
}

func newPcapOut(o PcapOut, link layers.LinkType) *pcapOut {
	return &pcapOut{dst: o.W, name: o.Name, link: link, extra: map[[2]int]int{},
		meta: map[*nic.Message]*msgMeta{}, high: map[uint64]uint64{}}
}

// start writes the section header and one interface per host.
func (p *pcapOut) start(hosts int) error {
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "fabemu replay"}}
	w, err := pcapgo.NewNgWriterInterface(p.dst, p.iface(0, p.link), opts)
	if err != nil {
		return p.wrap(err)
	}
	for h := 1; h < hosts; h++ {
		if _, err := w.AddInterface(p.iface(h, p.link)); err != nil {
			return p.wrap(err)
		}
	}
	p.w = w
	return nil
}

func (p *pcapOut) iface(h int, link layers.LinkType) pcapgo.NgInterface {
	name := "host " + strconv.Itoa(h)
	if link != p.link {
		name += " (" + link.String() + ")"
	}
	return pcapgo.NgInterface{Name: name, LinkType: link, TimestampResolution: 9,
		Description: "frames delivered to fabric host " + strconv.Itoa(h)}
}

// ifaceOf returns the interface of host h for frames of link type lt,
// describing a new one the first time a host receives another link type.
func (p *pcapOut) ifaceOf(h int, lt layers.LinkType) (int, error) {
	if lt == p.link {
		return h, nil
	}
	k := [2]int{h, int(lt)}
	if id, ok := p.extra[k]; ok {
		return id, nil
	}
	id, err := p.w.AddInterface(p.iface(h, lt))
	if err != nil {
		return 0, err
	}
	p.extra[k] = id
	return id, nil
}

// arrive notes a data packet of a message reaching its destination NIC.
func (p *pcapOut) arrive(pk *fabric.Packet, at des.Time) {
	m, ok := pk.Ref.(*nic.Message)
	if !ok {
		return
	}
	mm := p.meta[m]
	if mm == nil {
		if n := len(p.pool); n > 0 {
			mm = p.pool[n-1]
			p.pool = p.pool[:n-1]
		} else {
			mm = &msgMeta{}
		}
		p.meta[m] = mm
	}
	mm.packets++
	mm.maxHops = max(mm.maxHops, pk.Hops)
	if pk.VL >= 0 && pk.VL < 64 {
		mm.lanes |= 1 << uint(pk.VL)
	}
	k := uint64(uint32(pk.Src))<<32 | uint64(uint32(pk.Dst))
	if hi := p.high[k]; pk.Seq+1 < hi {
		mm.late++
	} else {
		p.high[k] = pk.Seq + 1
	}
}

// take returns and forgets a message's metadata.
func (p *pcapOut) take(m *nic.Message) msgMeta {
	mm := p.meta[m]
	if mm == nil {
		return msgMeta{}
	}
	delete(p.meta, m)
	v := *mm
	*mm = msgMeta{}
	p.pool = append(p.pool, mm)
	return v
}

// comment writes the fabric's metadata of a delivered message.
func (p *pcapOut) comment(m *nic.Message, at des.Time, mm msgMeta, extra string) string {
	b := p.cmt[:0]
	b = fmt.Appendf(b, "fabemu: host %d > host %d, latency %s, hops %d, vl ", m.Src, m.Dst,
		strconv.FormatFloat((at-m.Gen).Nanoseconds(), 'f', -1, 64)+" ns", mm.maxHops)
	first := true
	for vl := 0; vl < 64; vl++ {
		if mm.lanes&(1<<uint(vl)) != 0 {
			if !first {
				b = append(b, '+')
			}
			b = strconv.AppendInt(b, int64(vl), 10)
			first = false
		}
	}
	if first {
		b = append(b, '-')
	}
	b = fmt.Appendf(b, ", %d packets, %d reordered at the NIC", mm.packets, mm.late)
	b = append(b, extra...)
	p.cmt = b
	return string(b)
}

// write writes one delivered frame on its destination host's interface.
func (p *pcapOut) write(host int, lt layers.LinkType, at des.Time, data []byte, orig int, cmt string) {
	if p.err != nil {
		return
	}
	id, err := p.ifaceOf(host, lt)
	if err == nil {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(at/des.Nanosecond)).UTC(),
			CaptureLength: len(data), Length: max(orig, len(data)), InterfaceIndex: id}
		err = p.w.WritePacketWithOptions(ci, data, pcapgo.NgPacketOptions{Comments: []string{cmt}})
	}
	if err != nil {
		p.err = p.wrap(err)
		return
	}
	p.frames++
}

// frame writes a delivered copy of a captured frame: its captured bytes.
func (p *pcapOut) frame(m *nic.Message, at des.Time, data []byte, orig int, link uint16, reordered bool) {
	mm := p.take(m)
	extra := ", frame in order in its flow"
	if reordered {
		extra = ", frame reordered in its flow"
	}
	p.write(m.Dst, layers.LinkType(link), at, data, orig, p.comment(m, at, mm, extra))
}

// Block-trace messages as frames: Ethernet, IPv4 and UDP to port
// IOPort, carrying an IOHeaderLen-byte header that names the I/O
// (docs/capture.md). Only the headers are captured; the original length
// counts the message's payload.
const (
	IOPort      = 7147
	IOHeaderLen = 32
	ioMagic     = "FBIO"
)

// I/O message kinds in the header.
const (
	IOReadRequest     = 1 // initiator to disk: a read request
	IOReadData        = 2 // disk to initiator: the read's data
	IOWriteData       = 3 // initiator to disk: the write's data
	IOWriteCompletion = 4 // disk to initiator: the write's completion
)

// hostMAC and hostIP are a host's synthetic addresses: a locally
// administered MAC 02:fa:be:00:hh:ll and 10.0.0.0/8 with the host index
// plus one in the low 24 bits.
func hostMAC(h int) [6]byte { return [6]byte{0x02, 0xfa, 0xbe, byte(h >> 16), byte(h >> 8), byte(h)} }
func hostIP(h int) [4]byte  { h++; return [4]byte{10, byte(h >> 16), byte(h >> 8), byte(h)} }

// ioFrame builds the synthetic frame of a block-trace message.
func (p *pcapOut) ioFrame(src, dst int, payload int64, kind uint8, q *request) []byte {
	b := p.buf[:0]
	dm, sm := hostMAC(dst), hostMAC(src)
	b = append(b, dm[:]...)
	b = append(b, sm[:]...)
	b = append(b, 0x08, 0x00)
	ip := len(b)
	udpLen := min(8+IOHeaderLen+payload, 0xffff)
	ipLen := min(20+udpLen, 0xffff)
	b = append(b, 0x45, 0, byte(ipLen>>8), byte(ipLen), 0, 0, 0x40, 0, 64, 17, 0, 0)
	si, di := hostIP(src), hostIP(dst)
	b = append(b, si[:]...)
	b = append(b, di[:]...)
	var sum uint32
	for i := ip; i < ip+20; i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[ip+10:], ^uint16(sum))
	b = binary.BigEndian.AppendUint16(b, IOPort)
	b = binary.BigEndian.AppendUint16(b, IOPort)
	b = binary.BigEndian.AppendUint16(b, uint16(udpLen))
	b = append(b, 0, 0) // no UDP checksum (IPv4 allows it)
	// The I/O header: magic, version, kind, op (0 read, 1 write), a
	// reserved byte, device, offset, size, record number (big-endian).
	b = append(b, ioMagic...)
	b = append(b, 1, kind, byte(q.op), 0)
	b = binary.BigEndian.AppendUint32(b, q.dev)
	b = binary.BigEndian.AppendUint64(b, uint64(q.off))
	b = binary.BigEndian.AppendUint32(b, uint32(q.size))
	b = binary.BigEndian.AppendUint64(b, q.rec)
	p.buf = b
	return b
}

// io writes a delivered block-trace message.
func (p *pcapOut) io(m *nic.Message, at des.Time, q *request, reply bool) {
	mm := p.take(m)
	var kind uint8
	switch {
	case q.op == tracefmt.OpRead && !reply:
		kind = IOReadRequest
	case q.op == tracefmt.OpRead:
		kind = IOReadData
	case !reply:
		kind = IOWriteData
	default:
		kind = IOWriteCompletion
	}
	data := p.ioFrame(m.Src, m.Dst, m.Bytes, kind, q)
	p.write(m.Dst, layers.LinkTypeEthernet, at, data, 42+int(m.Bytes)+IOHeaderLen,
		p.comment(m, at, mm, fmt.Sprintf(", record %d", q.rec)))
}

// close flushes the writer; the first error of the run wins.
func (p *pcapOut) close() error {
	if p.err != nil {
		return p.err
	}
	if err := p.w.Flush(); err != nil {
		return p.wrap(err)
	}
	return nil
}

// wrap names the output in an error that does not name it yet.
func (p *pcapOut) wrap(err error) error {
	if strings.Contains(err.Error(), p.name) {
		return err
	}
	return fmt.Errorf("%s: %w", p.name, err)
}

// tapEndpoint is the NICs with a look at every packet reaching a
// destination NIC before the NIC takes it (before any rearrangement): for
// the pcapng output's metadata and the per-flow order of a capture.
type tapEndpoint struct {
	*nic.Network
	out *pcapOut
	cap *captureSource
}

// The NICs' injection control still gates what deadlock recovery
// reinjects (paper 001 §3): the embedded Network's methods answer.
var _ fabric.RecoveryGate = (*tapEndpoint)(nil)

// Deliver implements fabric.Endpoint.
func (t *tapEndpoint) Deliver(h int, p *fabric.Packet, at des.Time) {
	if t.out != nil {
		t.out.arrive(p, at)
	}
	if t.cap != nil {
		t.cap.arrive(p, at)
	}
	t.Network.Deliver(h, p, at)
}

// newSession assembles the model; with ep set, the fabric delivers
// through it.
func newSession(cfg ReplaySimConfig, bin des.Time, ep *tapEndpoint) (*model.Session, error) {
	var via func(*nic.Network) fabric.Endpoint
	if ep != nil {
		via = func(nw *nic.Network) fabric.Endpoint { ep.Network = nw; return ep }
	}
	fc := cfg.Fabric
	fc.Seed = cfg.Run.Seed // randomised allocators draw from it
	return model.NewSessionVia(cfg.Topology, cfg.Routing, fc, cfg.NIC, 0, des.Never, bin, via)
}
