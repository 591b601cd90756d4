package nic

import (
	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/hist"
)

// Metrics collects what the hosts see. Throughput counts deliveries inside
// the measurement window [Warmup, End); latency counts packets generated at
// or after Warmup (whenever delivered), so the warm-up transient does not
// bias either.
type Metrics struct {
	Warmup, End des.Time
	BinWidth    des.Time

	// Inside the window.
	GenPackets    uint64
	GenWireBytes  int64
	DelPackets    uint64
	DelWireBytes  int64
	DelPayload    int64
	PerHostWire   []int64
	OutOfOrder    uint64
	Latency       hist.Hist // generation to delivery, ps
	NetLatency    hist.Hist // injection to delivery, ps
	Hops          hist.Hist
	MsgLatency    hist.Hist // message generation to last packet, ps
	AllDelivered  uint64    // over the whole run
	LastDelivered des.Time  // when the last packet was delivered
	AllOutOfOrder uint64

	// Over the whole run, per bin of BinWidth.
	BinWire    []int64
	BinPayload []int64
	BinGenWire []int64
}

// NewMetrics prepares a collector for n hosts.
func NewMetrics(n int, warmup, end, bin des.Time) *Metrics {
	if bin <= 0 {
		bin = max((end-warmup)/50, des.Nanosecond)
	}
	return &Metrics{Warmup: warmup, End: end, BinWidth: bin, PerHostWire: make([]int64, n)}
}

func (m *Metrics) bin(at des.Time, s *[]int64, v int64) {
	b := int(at / m.BinWidth)
	for len(*s) <= b {
		*s = append(*s, 0)
	}
	(*s)[b] += v
}

func (m *Metrics) inWindow(at des.Time) bool { return at >= m.Warmup && at < m.End }

func (m *Metrics) generated(msg *Message, packets, headerBytes int, at des.Time) {
	wire := msg.Bytes + int64(headerBytes)
	m.bin(at, &m.BinGenWire, wire)
	if m.inWindow(at) {
		m.GenPackets += uint64(packets)
		m.GenWireBytes += wire
	}
}

func (m *Metrics) delivered(p *fabric.Packet, at des.Time, inOrder bool) {
	m.AllDelivered++
	m.LastDelivered = at
	if !inOrder {
		m.AllOutOfOrder++
	}
	m.bin(at, &m.BinWire, int64(p.Size))
	m.bin(at, &m.BinPayload, int64(p.Payload))
	if m.inWindow(at) {
		m.DelPackets++
		m.DelWireBytes += int64(p.Size)
		m.DelPayload += int64(p.Payload)
		m.PerHostWire[p.Dst] += int64(p.Size)
		if !inOrder {
			m.OutOfOrder++
		}
	}
	if p.Gen >= m.Warmup {
		m.Latency.Add(int64(at - p.Gen))
		m.NetLatency.Add(int64(at - p.Inject))
		m.Hops.Add(int64(p.Hops))
	}
}

// MessageDone records a completed message's latency.
func (m *Metrics) MessageDone(msg *Message, at des.Time) {
	if msg.Gen >= m.Warmup {
		m.MsgLatency.Add(int64(at - msg.Gen))
	}
}
