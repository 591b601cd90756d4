package pcap

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/fabemu/fabemu/tracefmt"
)

// Stats summarises a capture. Field order is the JSON order and is stable.
type Stats struct {
	File   string          `json:"file,omitempty"`
	Format tracefmt.Format `json:"format,omitempty"`
	// Records is the number of packets.
	Records int64 `json:"records"`
	// TotalBytes sums the frames' original lengths (as on the wire);
	// CapturedBytes what the file holds of them.
	TotalBytes    int64 `json:"total_bytes"`
	CapturedBytes int64 `json:"captured_bytes"`
	// Truncated counts frames the snap length cut (captured < original).
	Truncated int64 `json:"truncated"`
	// FirstTime is the earliest timestamp; DurationS the latest minus the
	// earliest.
	FirstTime string  `json:"first_time"`
	DurationS float64 `json:"duration_s"`
	// PacketRate is Records/DurationS and BitRate 8*TotalBytes/DurationS
	// (0 when the duration is 0).
	PacketRate float64 `json:"packet_rate_per_s"`
	BitRate    float64 `json:"bit_rate_per_s"`
	// TimeBacksteps counts packets timestamped before an earlier packet
	// (pcapng interleaves interfaces, whose clocks need not agree).
	TimeBacksteps int64            `json:"time_backsteps"`
	Interfaces    []InterfaceStats `json:"interfaces"`
	Protocols     ProtocolCounts   `json:"protocols"`
	// Flows counts distinct one-way flows (protocol, addresses, ports);
	// UntrackedPackets the packets of flows beyond the table bound.
	Flows            int64 `json:"flows"`
	UntrackedPackets int64 `json:"untracked_packets"`
	// TCP sums the per-flow order figures over every TCP flow.
	TCP TCPTotals `json:"tcp"`
	// TopFlows are the flows with the most bytes, most first.
	TopFlows []FlowStats `json:"top_flows"`
}

// InterfaceStats are the counts of one capture interface.
type InterfaceStats struct {
	ID          int     `json:"id"`
	Name        string  `json:"name,omitempty"`
	LinkType    string  `json:"link_type"`
	ResolutionS float64 `json:"resolution_s"`
	Snaplen     uint32  `json:"snaplen"`
	Packets     int64   `json:"packets"`
	Bytes       int64   `json:"bytes"`
}

// ProtocolCounts count packets by what was decoded.
type ProtocolCounts struct {
	IPv4      int64 `json:"ipv4"`
	IPv6      int64 `json:"ipv6"`
	NonIP     int64 `json:"non_ip"`
	TCP       int64 `json:"tcp"`
	UDP       int64 `json:"udp"`
	ICMP      int64 `json:"icmp"`
	OtherIP   int64 `json:"other_ip"`
	Fragments int64 `json:"fragments"`
	// Undecoded counts frames whose headers stopped short (DecodeError).
	Undecoded int64 `json:"undecoded"`
}

// TCPTotals sum the TCP order figures of every flow.
type TCPTotals struct {
	Flows           int64  `json:"flows"`
	DataSegments    uint64 `json:"data_segments"`
	Retransmissions uint64 `json:"retransmissions"`
	Reordered       uint64 `json:"reordered"`
	// ReorderedRatio is Reordered over the received (non-retransmitted)
	// data segments of all flows.
	ReorderedRatio float64 `json:"reordered_ratio"`
	FlowsReordered int64   `json:"flows_reordered"`
	ExtentMax      int64   `json:"extent_max"`
	ThreeReordered uint64  `json:"three_reordered"`
}

// FlowStats are the counts of one one-way flow.
type FlowStats struct {
	Flow      string  `json:"flow"`
	Packets   int64   `json:"packets"`
	Bytes     int64   `json:"bytes"`
	DurationS float64 `json:"duration_s"`
	// TCP is the flow's order, for TCP flows.
	TCP *TCPOrder `json:"tcp,omitempty"`
}

// MaxFlows bounds the flow table, so that memory does not grow with the
// capture: packets of further flows are counted in UntrackedPackets.
const MaxFlows = 1 << 14

type flowKey struct {
	proto            layers.IPProtocol
	src, dst         netip.Addr
	sport, dport     uint16
	hasPorts, isFrag bool
}

func (k flowKey) String() string {
	name := k.proto.String()
	if k.isFrag {
		name += " fragments"
	}
	if !k.hasPorts {
		return fmt.Sprintf("%s %s > %s", name, k.src, k.dst)
	}
	return fmt.Sprintf("%s %s > %s", name, netip.AddrPortFrom(k.src, k.sport), netip.AddrPortFrom(k.dst, k.dport))
}

type flow struct {
	packets, bytes int64
	first, last    time.Time
	tcp            *tcpOrder
}

type ifaceKey struct {
	id   int
	link layers.LinkType
}

// Summarizer accumulates Stats one packet at a time in memory bounded by
// MaxFlows and the number of interfaces, not by the capture's length.
type Summarizer struct {
	// Top is how many flows Stats lists (default 10).
	Top int

	st          Stats
	first, last time.Time
	latest      time.Time
	flows       map[flowKey]*flow
	ifaces      map[ifaceKey]*InterfaceStats
}

// NewSummarizer returns an empty Summarizer.
func NewSummarizer() *Summarizer {
	return &Summarizer{Top: 10, flows: map[flowKey]*flow{}, ifaces: map[ifaceKey]*InterfaceStats{}}
}

// Add counts one packet.
func (s *Summarizer) Add(p *Packet) {
	st := &s.st
	if st.Records == 0 {
		s.first, s.last, s.latest = p.Time, p.Time, p.Time
	} else if p.Time.Before(s.latest) {
		st.TimeBacksteps++
	}
	if p.Time.After(s.latest) {
		s.latest = p.Time
	}
	if p.Time.Before(s.first) {
		s.first = p.Time
	}
	if p.Time.After(s.last) {
		s.last = p.Time
	}
	st.Records++
	st.TotalBytes += int64(p.OrigLen)
	st.CapturedBytes += int64(p.CapLen)
	if p.Truncated() {
		st.Truncated++
	}
	ik := ifaceKey{p.Interface, p.LinkType}
	is := s.ifaces[ik]
	if is == nil {
		is = &InterfaceStats{ID: p.Interface, LinkType: LinkName(p.LinkType)}
		s.ifaces[ik] = is
	}
	is.Packets++
	is.Bytes += int64(p.OrigLen)

	pc := &st.Protocols
	if p.DecodeError != "" {
		pc.Undecoded++
	}
	switch p.IPVersion {
	case 4:
		pc.IPv4++
	case 6:
		pc.IPv6++
	default:
		pc.NonIP++
		return
	}
	if p.Fragment {
		pc.Fragments++
	}
	switch p.Proto {
	case layers.IPProtocolTCP:
		pc.TCP++
	case layers.IPProtocolUDP:
		pc.UDP++
	case layers.IPProtocolICMPv4, layers.IPProtocolICMPv6:
		pc.ICMP++
	default:
		pc.OtherIP++
	}
	k := flowKey{proto: p.Proto, src: p.SrcIP, dst: p.DstIP, hasPorts: p.HasPorts, isFrag: p.Fragment && !p.HasPorts}
	if p.HasPorts {
		k.sport, k.dport = p.SrcPort, p.DstPort
	}
	f := s.flows[k]
	if f == nil {
		if len(s.flows) >= MaxFlows {
			st.UntrackedPackets++
			return
		}
		f = &flow{first: p.Time}
		s.flows[k] = f
	}
	f.packets++
	f.bytes += int64(p.OrigLen)
	f.last = p.Time
	if p.IsTCP() {
		if f.tcp == nil {
			f.tcp = &tcpOrder{}
		}
		n := p.Payload
		if p.Flags&SYN != 0 {
			n++
		}
		if p.Flags&FIN != 0 {
			n++
		}
		f.tcp.observe(p.Seq, n, p.Time.UnixNano())
	}
}

// Stats returns the summary so far; ifaces, if not nil, names the
// interfaces and gives their resolution and snap length.
func (s *Summarizer) Stats(ifaces []Interface) *Stats {
	st := s.st
	st.Interfaces = []InterfaceStats{}
	st.TopFlows = []FlowStats{}
	if st.Records > 0 {
		st.FirstTime = s.first.UTC().Format(time.RFC3339Nano)
		st.DurationS = s.last.Sub(s.first).Seconds()
		if st.DurationS > 0 {
			st.PacketRate = float64(st.Records) / st.DurationS
			st.BitRate = 8 * float64(st.TotalBytes) / st.DurationS
		}
	}
	for _, is := range s.ifaces {
		v := *is
		for _, in := range ifaces {
			if in.ID == v.ID && LinkName(in.LinkType) == v.LinkType {
				v.Name, v.ResolutionS, v.Snaplen = in.Name, in.Resolution, in.Snaplen
			}
		}
		st.Interfaces = append(st.Interfaces, v)
	}
	sort.Slice(st.Interfaces, func(i, j int) bool {
		a, b := st.Interfaces[i], st.Interfaces[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.LinkType < b.LinkType
	})
	st.Flows = int64(len(s.flows))
	type kf struct {
		k flowKey
		f *flow
	}
	all := make([]kf, 0, len(s.flows))
	var received uint64
	for k, f := range s.flows {
		all = append(all, kf{k, f})
		if f.tcp == nil {
			continue
		}
		t := &st.TCP
		t.Flows++
		t.DataSegments += f.tcp.segments
		t.Retransmissions += f.tcp.retrans
		t.Reordered += f.tcp.reordered
		t.ThreeReordered += f.tcp.three
		received += f.tcp.index
		if f.tcp.reordered > 0 {
			t.FlowsReordered++
		}
		if f.tcp.extent.n > 0 {
			t.ExtentMax = max(t.ExtentMax, f.tcp.extent.max)
		}
	}
	if received > 0 {
		st.TCP.ReorderedRatio = float64(st.TCP.Reordered) / float64(received)
	}
	// most bytes first; ties by name so the order is stable
	sort.Slice(all, func(i, j int) bool {
		if all[i].f.bytes != all[j].f.bytes {
			return all[i].f.bytes > all[j].f.bytes
		}
		return all[i].k.String() < all[j].k.String()
	})
	top := s.Top
	if top <= 0 {
		top = 10
	}
	for _, e := range all[:min(top, len(all))] {
		fs := FlowStats{Flow: e.k.String(), Packets: e.f.packets, Bytes: e.f.bytes, DurationS: e.f.last.Sub(e.f.first).Seconds()}
		if e.f.tcp != nil {
			fs.TCP = e.f.tcp.report(fs.Flow + ", data segments by sequence number")
		}
		st.TopFlows = append(st.TopFlows, fs)
	}
	return &st
}

// Summarize reads r to the end and returns its statistics.
func Summarize(r *Reader) (*Stats, error) {
	s := NewSummarizer()
	for {
		p, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		s.Add(p)
	}
	st := s.Stats(r.Interfaces())
	st.File = r.Name()
	st.Format = r.Format()
	return st, nil
}
