package pcap

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/fabemu/fabemu/tracefmt"
)

var (
	a4 = netip.MustParseAddr("10.0.0.1")
	b4 = netip.MustParseAddr("10.0.0.2")
	a6 = netip.MustParseAddr("fd00::1")
	b6 = netip.MustParseAddr("fd00::2")
	mA = MAC{0x02, 0, 0, 0, 0, 0x0a}
	mB = MAC{0x02, 0, 0, 0, 0, 0x0b}
)

// checkPacket compares every decoded field but Data and Record.
func checkPacket(t *testing.T, what string, got, want Packet) {
	t.Helper()
	got.Data, want.Data = nil, nil
	got.Record, want.Record = 0, 0
	if !got.Time.Equal(want.Time) {
		t.Errorf("%s: time %v, want %v", what, got.Time, want.Time)
	}
	got.Time, want.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// tcpWant is the decoded form of an IPv4 or IPv6 TCP segment A -> B.
func tcpWant(s seg, link layers.LinkType, frameLen int, ts time.Time) Packet {
	p := Packet{Time: ts, CapLen: frameLen, OrigLen: frameLen, LinkType: link,
		IPVersion: 4, SrcIP: a4, DstIP: b4, EtherType: layers.EthernetTypeIPv4, Proto: layers.IPProtocolTCP,
		HasPorts: true, SrcPort: s.sport, DstPort: s.dport, Seq: s.seq, Ack: s.ack, Payload: s.payload}
	if s.v6 {
		p.IPVersion, p.SrcIP, p.DstIP, p.EtherType = 6, a6, b6, layers.EthernetTypeIPv6
	}
	if s.udp {
		p.Proto, p.Seq, p.Ack = layers.IPProtocolUDP, 0, 0
	}
	if s.syn {
		p.Flags |= SYN
	}
	if s.fin {
		p.Flags |= FIN
	}
	if s.ackSet {
		p.Flags |= ACK
	}
	switch link {
	case layers.LinkTypeEthernet:
		p.SrcMAC, p.DstMAC, p.HasSrcMAC, p.HasDstMAC = mA, mB, true, true
	case layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2:
		p.SrcMAC, p.HasSrcMAC = mA, true
	}
	return p
}

// TestPcapVariants reads the four libpcap variants (micro/nano, little and
// big endian) and checks every decoded field.
func TestPcapVariants(t *testing.T) {
	s1 := seg{sport: 40000, dport: 5201, seq: 1000, ack: 77, ackSet: true, payload: 100}
	s2 := seg{udp: true, sport: 5353, dport: 53, payload: 12}
	f1, f2 := ethFrame(t, s1, 0), ethFrame(t, s2, 0)
	for _, c := range []struct {
		name  string
		order endian
		nano  bool
	}{
		{"le-micro", binary.LittleEndian, false},
		{"le-nano", binary.LittleEndian, true},
		{"be-micro", binary.BigEndian, false},
		{"be-nano", binary.BigEndian, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := uint64(at.UnixNano())
			t1, t2 := at, at.Add(1500*time.Microsecond+7)
			ts1, ts2 := ns/1000, (ns+1500007)/1000
			if c.nano {
				ts1, ts2 = ns, ns+1500007
			} else {
				t1, t2 = t1.Truncate(time.Microsecond), t2.Truncate(time.Microsecond)
			}
			data := pcapFile(c.order, c.nano, 65535, layers.LinkTypeEthernet, []frame{{ts: ts1, data: f1}, {ts: ts2, data: f2}})
			got, r, err := readAll(t, "v.pcap", data)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tracefmt.Pcap || len(got) != 2 {
				t.Fatalf("format %s, %d packets", r.Format(), len(got))
			}
			checkPacket(t, "tcp", got[0], tcpWant(s1, layers.LinkTypeEthernet, len(f1), t1))
			checkPacket(t, "udp", got[1], tcpWant(s2, layers.LinkTypeEthernet, len(f2), t2))
			if !bytes.Equal(got[0].Data, f1) || got[0].Record != 1 || got[1].Record != 2 {
				t.Errorf("data or record numbers wrong: %d %d", got[0].Record, got[1].Record)
			}
			in := r.Interfaces()
			wantRes := 1e-6
			if c.nano {
				wantRes = 1e-9
			}
			if len(in) != 1 || in[0].Resolution != wantRes || in[0].Snaplen != 65535 || in[0].LinkType != layers.LinkTypeEthernet {
				t.Errorf("interfaces %+v", in)
			}
		})
	}
}

// TestLinkTypes decodes every supported link type, IPv4 and IPv6.
func TestLinkTypes(t *testing.T) {
	s4 := seg{sport: 1234, dport: 80, seq: 0xfffffff0, ack: 1, syn: true, ackSet: true}
	s6 := seg{v6: true, sport: 1234, dport: 443, seq: 5, fin: true, payload: 33}
	cases := []struct {
		name string
		link layers.LinkType
		s    seg
		data []byte
		vlan uint16
	}{
		{"ethernet-v4", layers.LinkTypeEthernet, s4, ethFrame(t, s4, 0), 0},
		{"ethernet-v6-vlan", layers.LinkTypeEthernet, s6, ethFrame(t, s6, 42), 42},
		{"sll-v4", layers.LinkTypeLinuxSLL, s4, sllFrame(t, s4), 0},
		{"sll2-v6", layers.LinkTypeLinuxSLL2, s6, sll2Frame(t, s6), 0},
		{"raw-v4", layers.LinkTypeRaw, s4, ipPacket(t, s4), 0},
		{"raw-v6", layers.LinkTypeRaw, s6, ipPacket(t, s6), 0},
		{"ipv4", layers.LinkTypeIPv4, s4, ipPacket(t, s4), 0},
		{"ipv6", layers.LinkTypeIPv6, s6, ipPacket(t, s6), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := pcapFile(binary.LittleEndian, true, 262144, c.link, []frame{{ts: uint64(at.UnixNano()), data: c.data}})
			got, _, err := readAll(t, "l.pcap", data)
			if err != nil || len(got) != 1 {
				t.Fatalf("%v, %d packets", err, len(got))
			}
			want := tcpWant(c.s, c.link, len(c.data), at)
			want.VLAN = c.vlan
			checkPacket(t, c.name, got[0], want)
		})
	}
}

// TestPcapng reads a pcapng file with three interfaces of different link
// types and timestamp resolutions, in both byte orders.
func TestPcapng(t *testing.T) {
	s4 := seg{sport: 1, dport: 2, seq: 10, payload: 5}
	s6 := seg{v6: true, udp: true, sport: 3, dport: 4, payload: 7}
	ifaces := []ngIface{
		{link: layers.LinkTypeEthernet, name: "eth0"},                      // microseconds (no option)
		{link: layers.LinkTypeRaw, tsresol: 9, name: "tun0", snaplen: 128}, // nanoseconds
		{link: layers.LinkTypeLinuxSLL2, tsresol: 0x80 | 10, name: "any"},  // 2^-10 s
		{link: layers.LinkTypeIPv4, tsresol: 3, name: "ms"},                // milliseconds
	}
	sec := uint64(at.Unix())
	fe, fr, fs, f4 := ethFrame(t, s4, 0), ipPacket(t, s6), sll2Frame(t, s4), ipPacket(t, s4)
	frames := []frame{
		{iface: 0, ts: sec*1e6 + 123456, data: fe},
		{iface: 1, ts: sec*1e9 + 123456789, data: fr},
		{iface: 2, ts: sec<<10 | 512, data: fs}, // half a second
		{iface: 3, ts: sec*1e3 + 999, data: f4},
		{iface: 1, ts: sec*1e9 + 5, data: fr[:50], origLen: len(fr)},
	}
	base := time.Unix(int64(sec), 0).UTC()
	wants := []Packet{
		tcpWant(s4, layers.LinkTypeEthernet, len(fe), base.Add(123456*time.Microsecond)),
		tcpWant(s6, layers.LinkTypeRaw, len(fr), base.Add(123456789)),
		tcpWant(s4, layers.LinkTypeLinuxSLL2, len(fs), base.Add(500*time.Millisecond)),
		tcpWant(s4, layers.LinkTypeIPv4, len(f4), base.Add(999*time.Millisecond)),
		tcpWant(s6, layers.LinkTypeRaw, len(fr), base.Add(5)),
	}
	for i, w := range []int{0, 1, 2, 3, 1} {
		wants[i].Interface = w
	}
	wants[4].CapLen = 50
	for _, order := range []endian{binary.LittleEndian, binary.BigEndian} {
		t.Run(order.String(), func(t *testing.T) {
			got, r, err := readAll(t, "m.pcapng", pcapngFile(order, ifaces, frames))
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tracefmt.Pcapng || len(got) != len(wants) {
				t.Fatalf("format %s, %d packets", r.Format(), len(got))
			}
			// gopacket scales binary fractions with an integer factor
			// (1e9/1024 = 976562), so a 2^-10 s timestamp comes out up to
			// 2^-10 * 0.64 ppm early: 256 ns for half a second.
			if d := wants[2].Time.Sub(got[2].Time); d < 0 || d > 256 {
				t.Errorf("binary-resolution time %v, want %v", got[2].Time, wants[2].Time)
			}
			got[2].Time = wants[2].Time
			for i := range wants {
				checkPacket(t, LinkName(wants[i].LinkType), got[i], wants[i])
			}
			if !got[4].Truncated() || got[3].Truncated() {
				t.Error("truncation flag")
			}
			in := r.Interfaces()
			if len(in) != 4 || in[1].Name != "tun0" || in[1].Resolution != 1e-9 || in[1].Snaplen != 128 ||
				in[0].Resolution != 1e-6 || in[2].Resolution != 1.0/1024 || in[3].Resolution != 1e-3 {
				t.Errorf("interfaces %+v", in)
			}
		})
	}
}

// TestWritersRoundTrip reads what gopacket's own writers write.
func TestWritersRoundTrip(t *testing.T) {
	s := seg{sport: 9, dport: 10, seq: 3, payload: 20}
	f := ethFrame(t, s, 0)
	ci := gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(f), Length: len(f)}
	var pc, ng bytes.Buffer
	w := pcapgo.NewWriterNanos(&pc)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	nw, err := pcapgo.NewNgWriter(&ng, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		w.WritePacket(ci, f)
		nw.WritePacket(ci, f)
	}
	nw.Flush()
	for name, data := range map[string][]byte{"w.pcap": pc.Bytes(), "w.pcapng": ng.Bytes()} {
		got, _, err := readAll(t, name, data)
		if err != nil || len(got) != 3 {
			t.Fatalf("%s: %v, %d packets", name, err, len(got))
		}
		checkPacket(t, name, got[2], tcpWant(s, layers.LinkTypeEthernet, len(f), at))
		if got[2].Record != 3 {
			t.Errorf("%s: record %d", name, got[2].Record)
		}
	}
}

// TestGzipFile opens a gzip-compressed capture by path.
func TestGzipFile(t *testing.T) {
	s := seg{sport: 9, dport: 10, seq: 3, payload: 20}
	data := pcapFile(binary.BigEndian, false, 65535, layers.LinkTypeEthernet, []frame{{ts: 1, data: ethFrame(t, s, 0)}})
	path := filepath.Join(t.TempDir(), "c.pcap.gz")
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 1 || st.Format != tracefmt.Pcap || st.File != path {
		t.Errorf("stats %+v", st)
	}
}

// oneLine checks that err is a single-line *tracefmt.ParseError with the
// given prefix and containing want.
func oneLine(t *testing.T, err error, prefix, want string) {
	t.Helper()
	var pe *tracefmt.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a ParseError", err, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, want) {
		t.Errorf("error %q, want prefix %q and %q", msg, prefix, want)
	}
}

// TestErrors: unsupported link types, truncated files and lengths over
// the bounds each give one line naming the file and the record.
func TestErrors(t *testing.T) {
	s := seg{sport: 9, dport: 10, seq: 3, payload: 20}
	f := ethFrame(t, s, 0)
	three := []frame{{data: f}, {data: f}, {data: f}}
	le := binary.LittleEndian
	pc := pcapFile(le, false, 65535, layers.LinkTypeEthernet, three)
	ng := pcapngFile(le, []ngIface{{link: layers.LinkTypeEthernet}}, three)
	rec3 := 24 + 2*(16+len(f)) // byte offset of the third pcap record
	ngRec3 := len(ng) - 32 - (len(f)+3)&^3
	bigCap := pcapFile(le, false, 65535, layers.LinkTypeEthernet, []frame{{data: f}})
	le.PutUint32(bigCap[24+8:], MaxFrame+1)
	le.PutUint32(bigCap[24+12:], MaxFrame+1)
	capOverOrig := pcapFile(le, false, 65535, layers.LinkTypeEthernet, []frame{{data: f, origLen: 10}})
	ngBigCap := bytes.Clone(ng)
	le.PutUint32(ngBigCap[ngRec3+20:], uint32(len(f)+100))
	le.PutUint32(ngBigCap[ngRec3+24:], uint32(len(f)+100))
	ngBadTrailer := bytes.Clone(ng)
	le.PutUint32(ngBadTrailer[len(ng)-4:], 8)
	noIface := pcapngFile(le, []ngIface{{link: layers.LinkTypeEthernet}}, []frame{{data: f}, {iface: 5, data: f}})
	badVersion := bytes.Clone(ng)
	le.PutUint16(badVersion[12:], 7)
	wifi := pcapngFile(le, []ngIface{{link: layers.LinkTypeEthernet}, {link: layers.LinkTypeIEEE80211Radio}},
		[]frame{{data: f}, {iface: 1, data: f}})

	for _, c := range []struct {
		name, file string
		data       []byte
		n          int // packets read before the error
		prefix     string
		want       string
	}{
		{"pcap unsupported link", "w.pcap", pcapFile(le, false, 65535, layers.LinkTypeIEEE802_11, three), 0,
			"w.pcap: record 1 (byte offset 24): ", "link type 105 (802.11) is not supported"},
		{"pcapng unsupported link", "w.pcapng", wifi, 1,
			"w.pcapng: record 2 (byte offset", "link type 127 (RadioTap) is not supported"},
		{"pcap truncated data", "t.pcap", pc[:len(pc)-5], 2,
			"t.pcap: record 3 (byte offset " + strconv.Itoa(rec3) + "): ", "truncated: the record (" + strconv.Itoa(len(f)) + " captured bytes) is " + strconv.Itoa(16+len(f)) + " bytes long, the file ends " + strconv.Itoa(16+len(f)-5) + " bytes into it"},
		{"pcap truncated header", "t.pcap", pc[:rec3+7], 2,
			"t.pcap: record 3 (byte offset " + strconv.Itoa(rec3) + "): ", "truncated: the record header is 16 bytes long, the file ends 7 bytes into it"},
		{"pcapng truncated", "t.pcapng", ng[:len(ng)-3], 2,
			"t.pcapng: record 3 (byte offset " + strconv.Itoa(ngRec3) + "): ", "truncated"},
		{"pcap file header", "h.pcap", pc[:10], 0, "h.pcap: ", "truncated: the file header is 24 bytes long, the file ends 10 bytes into it"},
		{"caplen over bound", "b.pcap", bigCap, 0, "b.pcap: record 1 (byte offset 24): ", "captured length 262145 is over the bound"},
		{"caplen over origlen", "o.pcap", capOverOrig, 0, "o.pcap: record 1 (byte offset 24): ", "exceeds the original length 10"},
		{"pcapng caplen over block", "b.pcapng", ngBigCap, 2, "b.pcapng: record 3 (byte offset " + strconv.Itoa(ngRec3) + "): ", "does not fit in a block"},
		{"pcapng trailer", "x.pcapng", ngBadTrailer, 2, "x.pcapng: record 3", "at its end"},
		{"pcapng unknown interface", "i.pcapng", noIface, 1, "i.pcapng: record 2 (byte offset", "Interface id 5 not present"},
		{"pcapng version", "v.pcapng", badVersion, 0, "v.pcapng: ", "Unknown pcapng Version"},
		{"not a capture", "n.pcap", []byte("hello world, not a capture"), 0, "n.pcap: ", "not a packet capture"},
		{"empty", "e.pcap", nil, 0, "e.pcap: ", "not a packet capture"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, r, err := readAll(t, c.file, c.data)
			if err == nil {
				t.Fatalf("no error after %d packets", len(got))
			}
			if len(got) != c.n {
				t.Errorf("%d packets before the error, want %d", len(got), c.n)
			}
			oneLine(t, err, c.prefix, c.want)
			if r != nil {
				if _, err2 := r.Next(); err2 == nil || err2.Error() != err.Error() {
					t.Errorf("error not sticky: %v", err2)
				}
			}
		})
	}
}

// TestNoAllocPerPacket: reading and decoding allocate nothing per packet
// once the buffers have grown (the design's streaming promise).
func TestNoAllocPerPacket(t *testing.T) {
	s := seg{sport: 1, dport: 2, seq: 3, payload: 100}
	var frames []frame
	for i := range 2000 {
		frames = append(frames, frame{ts: uint64(i), data: ethFrame(t, s, 0)})
	}
	for name, data := range map[string][]byte{
		"pcap":   pcapFile(binary.LittleEndian, true, 65535, layers.LinkTypeEthernet, frames),
		"pcapng": pcapngFile(binary.BigEndian, []ngIface{{link: layers.LinkTypeEthernet, tsresol: 9}}, frames),
	} {
		r, err := NewReader(bytes.NewReader(data), name)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			r.Next()
		}
		if a := testing.AllocsPerRun(1000, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: %.2f allocations per packet", name, a)
		}
	}
}

// TestPcapngSections: a second section, in the other byte order, brings
// its own interfaces; record numbers run on across sections.
func TestPcapngSections(t *testing.T) {
	s := seg{sport: 1, dport: 2, seq: 3, payload: 4}
	first := pcapngFile(binary.LittleEndian, []ngIface{{link: layers.LinkTypeEthernet}}, []frame{{data: ethFrame(t, s, 0)}})
	second := pcapngFile(binary.BigEndian, []ngIface{{link: layers.LinkTypeLinuxSLL, tsresol: 3}, {link: layers.LinkTypeRaw, tsresol: 9}},
		[]frame{{iface: 1, ts: 7, data: ipPacket(t, s)}, {iface: 0, ts: 2, data: sllFrame(t, s)}})
	got, r, err := readAll(t, "s.pcapng", append(first, second...))
	if err != nil || len(got) != 3 {
		t.Fatalf("%v, %d packets", err, len(got))
	}
	if got[0].LinkType != layers.LinkTypeEthernet || got[1].LinkType != layers.LinkTypeRaw || got[2].LinkType != layers.LinkTypeLinuxSLL ||
		got[1].Time != time.Unix(0, 7).UTC() || got[2].Time != time.Unix(0, 2e6).UTC() || got[2].Record != 3 || got[2].Interface != 0 {
		t.Errorf("packets %+v", got)
	}
	if in := r.Interfaces(); len(in) != 2 || in[0].LinkType != layers.LinkTypeLinuxSLL {
		t.Errorf("interfaces %+v", in)
	}
}
