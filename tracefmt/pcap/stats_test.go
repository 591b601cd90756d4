package pcap

import (
	"bytes"
	"encoding/binary"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/fabemu/fabemu/reorder"
)

// tcpFlowCapture is a TCP connection cut at a snap length of 96 bytes,
// whose client sends segments 1..9 of 1000 bytes in the arrival order
//
//	SYN 1 2 3 5 6 7 4 8 3 9 FIN
//
// one millisecond apart: segment 4 is late and segment 3 is retransmitted.
// The initial sequence number makes the numbers wrap between 5 and 6. The
// server sends a SYN-ACK and two pure ACKs; one ARP frame is mixed in.
func tcpFlowCapture(t *testing.T) []byte {
	var isn uint32 = 0xFFFFF000
	t0 := uint64(at.UnixNano())
	ms := uint64(time.Millisecond)
	var frames []frame
	add := func(ts uint64, data []byte, snap int) {
		f := frame{ts: ts, data: data}
		if len(data) > snap {
			f.data, f.origLen = data[:snap], len(data)
		}
		frames = append(frames, f)
	}
	order := []int{0, 1, 2, 3, 5, 6, 7, 4, 8, 3, 9, 10} // 0 = SYN, 10 = FIN
	for k, n := range order {
		s := seg{sport: 40000, dport: 5201, seq: isn + 1 + uint32(n-1)*1000, ack: 1, ackSet: true, payload: 1000}
		switch n {
		case 0:
			s = seg{sport: 40000, dport: 5201, seq: isn, syn: true}
		case 10:
			s = seg{sport: 40000, dport: 5201, seq: isn + 1 + 9000, ack: 1, ackSet: true, fin: true}
		}
		add(t0+uint64(k+1)*ms, ethFrame(t, s, 0), 96)
	}
	server := seg{sport: 5201, dport: 40000, seq: 0, ack: isn + 1, syn: true, ackSet: true}
	add(t0+ms+ms/2, ethFrame(t, server, 0), 96)
	server.syn, server.seq = false, 1
	add(t0+9*ms+ms/2, ethFrame(t, server, 0), 96)
	add(t0+12*ms+ms/2, ethFrame(t, server, 0), 96)
	arp := append(append(append([]byte{}, macB...), macA...), 0x08, 0x06)
	arp = append(arp, make([]byte, 28)...)
	add(t0+2*ms+ms/2, arp, 96)
	sort.SliceStable(frames, func(i, j int) bool { return frames[i].ts < frames[j].ts })
	return pcapFile(binary.BigEndian, true, 96, layers.LinkTypeEthernet, frames)
}

// TestTCPReorderAndRetransmission checks the capture statistics of
// tcpFlowCapture against figures worked out by hand.
func TestTCPReorderAndRetransmission(t *testing.T) {
	rd, err := NewReader(bytes.NewReader(tcpFlowCapture(t)), "flow.pcap")
	if err != nil {
		t.Fatal(err)
	}
	st, err := Summarize(rd)
	if err != nil {
		t.Fatal(err)
	}
	// Frames: SYN, FIN and the server's three are 54 bytes; the ten data
	// frames 14+20+20+1000 = 1054 bytes, cut to 96; the ARP frame 42.
	if st.Records != 16 || st.TotalBytes != 54*5+1054*10+42 || st.CapturedBytes != 54*5+96*10+42 || st.Truncated != 10 {
		t.Errorf("records %d, bytes %d, captured %d, truncated %d", st.Records, st.TotalBytes, st.CapturedBytes, st.Truncated)
	}
	// first frame at 1 ms, last (the server's last ACK) at 12.5 ms
	if math.Abs(st.DurationS-0.0115) > 1e-12 || math.Abs(st.PacketRate-16/0.0115) > 1e-6 ||
		math.Abs(st.BitRate-8*float64(st.TotalBytes)/0.0115) > 1e-3 {
		t.Errorf("duration %v, rate %v pkt/s %v bit/s", st.DurationS, st.PacketRate, st.BitRate)
	}
	if st.FirstTime != at.Add(time.Millisecond).Format(time.RFC3339Nano) {
		t.Errorf("first time %s", st.FirstTime)
	}
	want := ProtocolCounts{IPv4: 15, NonIP: 1, TCP: 15}
	if st.Protocols != want {
		t.Errorf("protocols %+v, want %+v", st.Protocols, want)
	}
	if st.Flows != 2 || len(st.TopFlows) != 2 {
		t.Fatalf("flows %d, top %d", st.Flows, len(st.TopFlows))
	}
	c, s := st.TopFlows[0], st.TopFlows[1]
	if c.Flow != "TCP 10.0.0.1:40000 > 10.0.0.2:5201" || c.Packets != 12 || c.Bytes != 54*2+1054*10 ||
		s.Flow != "TCP 10.0.0.1:5201 > 10.0.0.2:40000" || s.Packets != 3 {
		t.Errorf("flows %+v %+v", c, s)
	}
	// RFC 4737 by hand, duplicates removed: received L = 11 distinct
	// segments (SYN, 1..9, FIN), the second 3 is a retransmission.
	// Segment 4 arrives 8th; the earliest arrival numbered above it is
	// segment 5, 5th, so its extent is 8-5 = 3 arrivals, its late time
	// 8 ms - 5 ms = 3 ms, its byte offset the 3000 bytes of 5, 6 and 7,
	// and since 5, 6, 7 all came just before it, it is 3-reordered.
	// Ratio 1/11; one sequence discontinuity (5 skipped 4).
	o := c.TCP
	if o == nil {
		t.Fatal("no TCP order for the client flow")
	}
	if o.DataSegments != 12 || o.Received != 11 || o.Retransmissions != 1 || o.Reordered != 1 ||
		o.ReorderedRatio != 1.0/11 || o.BeyondWindow != 0 || o.SequenceDiscontinuities != 1 || o.ThreeReordered != 1 {
		t.Errorf("order %+v", o)
	}
	if o.Extent != (reorder.Summary{Count: 1, Mean: 3, Max: 3}) || o.LateTime.Max != int64(3*time.Millisecond) ||
		o.ByteOffset != (reorder.Summary{Count: 1, Mean: 3000, Max: 3000}) {
		t.Errorf("extent %+v, late time %+v, byte offset %+v", o.Extent, o.LateTime, o.ByteOffset)
	}
	if s.TCP == nil || s.TCP.DataSegments != 1 || s.TCP.Reordered != 0 || s.TCP.Retransmissions != 0 {
		t.Errorf("server order %+v", s.TCP)
	}
	if st.TCP != (TCPTotals{Flows: 2, DataSegments: 13, Retransmissions: 1, Reordered: 1, ReorderedRatio: 1.0 / 12,
		FlowsReordered: 1, ExtentMax: 3, ThreeReordered: 1}) {
		t.Errorf("tcp totals %+v", st.TCP)
	}

	// The same order as packet numbers through the reorder package's
	// meter gives the same RFC 4737 figures.
	m, err := reorder.NewOrderMeter(reorder.MeterConfig{Stream: "check"})
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range []int{0, 1, 2, 3, 5, 6, 7, 4, 8, 3, 9, 10} {
		m.Observe(uint64(n), 1000, int64(k+1))
	}
	mr := m.Report()
	if mr.Received != o.Received || mr.Duplicates != o.Retransmissions || mr.Reordered != o.Reordered ||
		mr.Extent.Max != o.Extent.Max || mr.NReordering[2].Packets != o.ThreeReordered {
		t.Errorf("reorder meter %+v disagrees with %+v", mr, o)
	}
}

// TestOrderUnits exercises the byte-range meter on its own: a retransmission
// that carries new bytes, a segment filling part of a gap, and the bounds.
func TestOrderUnits(t *testing.T) {
	var o tcpOrder
	o.observe(100, 10, 1) // [100,110)
	o.observe(130, 10, 2) // gap [110,130)
	o.observe(105, 10, 3) // [105,115): fills 110..115, reordered
	o.observe(100, 20, 4) // [100,120): fills 115..120, reordered
	o.observe(100, 15, 5) // all seen: retransmission
	o.observe(135, 10, 6) // [135,145): overlaps seen bytes 135..140 but fills none below; new bytes ride along
	r := o.report("u")
	base := int64(1<<40) - 100 // the first number seen maps to 1<<40
	if r.Reordered != 2 || r.Retransmissions != 2 || r.Received != 4 || r.SequenceDiscontinuities != 1 || o.nextExp != base+145 {
		t.Errorf("%+v, next expected %d", r, o.nextExp-base)
	}
	if len(o.holes) != 1 || o.holes[0] != (span{base + 120, base + 130}) {
		t.Errorf("holes %+v", o.holes)
	}
	// many gaps: memory stays bounded; of the 10000 late fillers the
	// last is in order (nothing came after its gap), the 64 gaps still
	// remembered are reordered, the forgotten ones retransmissions.
	var b tcpOrder
	for i := range uint32(10000) {
		b.observe(i*20, 10, int64(i))
	}
	for i := range uint32(10000) {
		b.observe(i*20+10, 10, int64(i))
	}
	if len(b.holes) > maxHoles || len(b.recs) > maxRecs || !b.overflowed || b.reordered != maxHoles || b.retrans != 10000-1-maxHoles || b.beyond != 0 {
		t.Errorf("holes %d recs %d reordered %d retrans %d beyond %d", len(b.holes), len(b.recs), b.reordered, b.retrans, b.beyond)
	}
	// a gap open for longer than the records kept: its filler is
	// reordered beyond the window, with no extent
	var c tcpOrder
	c.observe(0, 10, 0)
	for i := range uint32(2 * maxRecs) {
		c.observe(20+i*1000, 1000, int64(i))
	}
	c.observe(10, 10, 1<<20)
	if c.reordered != 1 || c.beyond != 1 || c.extent.n != 0 || len(c.recs) > maxRecs {
		t.Errorf("reordered %d beyond %d extents %d records %d", c.reordered, c.beyond, c.extent.n, len(c.recs))
	}
	// once the gap is filled, records below NextExp-maxSegment go
	c.observe(20+2*maxRecs*1000, 1000, 1<<21)
	if len(c.recs) > maxSegment/1000+2 {
		t.Errorf("%d records kept with no gap open", len(c.recs))
	}
}
