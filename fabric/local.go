package fabric

import (
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// What a NIC and its switch could know, read-only, for the NIC's
// injection control (package injection): the credits of the injection
// link, the free buffers of the local switch per lane, the channels of
// the local switch on a minimal path to a destination, and the
// transmission-time ratio of each channel that the switch measures
// (paper 001 §3). One global figure (the full buffers of the whole
// network) is here too, for Self-Tuned, whose design needs it (paper 001
// §4.2); a real NIC would learn it over a sideband network.

// txTimes is the transmission-time measurement of paper 001 §3, kept only
// when a NIC asks for it (MeasureTransmissionTimes): per switch out-port,
// the ratio of the actual to the minimum transmission time of the last
// packet sent on it and when it was measured, and the last time a ratio
// exceeded the threshold (the channel "marked as congested").
type txTimes struct {
	threshold float64
	ratio     []float32
	at        []des.Time
	markedAt  []des.Time
	// mean is the run's mean ratio (txratio.go), when asked for.
	mean txMean
}

// MeasureTransmissionTimes makes the switches measure, for every packet
// they send, the ratio of its actual to its minimum transmission time on
// the channel, and mark the channel when the ratio exceeds threshold
// (paper 001 §3: "When it is greater than a given threshold u1 ... we mark
// the physical channel containing the virtual channel as congested").
// A threshold of 0 measures without marking. Calling it again changes the
// threshold. Until it is called nothing is measured and sending costs one
// nil check.
//
// The actual transmission time is the paper's: "the elapsed time between
// the arrival of a message header to the node and the transmission of its
// tail flit" (§3); here from the moment the packet's head reached the
// switch's input (before the routing delay) to the moment its tail leaves
// on the out-port. The minimum is "the product of message size and the time
// required to transfer one flit across the link" (§3): the packet's
// serialization time. The paper recomputes the ratio every few flits so
// that it does not depend on message length; the fabric moves whole
// packets, so it measures once per packet, when the transmission starts
// and its tail time is known. A packet waiting in a queue is therefore
// measured only when it leaves: the mark lags the paper's periodic one by
// the packet's wait.
func (f *Fabric) MeasureTransmissionTimes(threshold float64) {
	if f.tt == nil {
		n := len(f.out)
		f.tt = &txTimes{ratio: make([]float32, n), at: make([]des.Time, n), markedAt: make([]des.Time, n)}
		for i := range f.tt.markedAt {
			f.tt.markedAt[i] = -1
			f.tt.at[i] = -1
		}
	}
	f.tt.threshold = threshold
}

// recordTx is send's hook: p starts on out-port oi at start and its tail
// leaves at tailLeave; ser is its minimum transmission time.
func (f *Fabric) recordTx(oi int32, o *outPort, p *Packet, start, tailLeave, ser des.Time) {
	t := f.tt
	if o.sw >= 0 && p.headAt > 0 && ser > 0 {
		r := float64(tailLeave-p.headAt) / float64(ser)
		t.ratio[oi] = float32(r)
		t.at[oi] = start
		t.mean.add(start, r)
		if t.threshold > 0 && r > t.threshold {
			t.markedAt[oi] = start
		}
	}
	p.headAt = start + f.prop // the head reaches the next node
}

// localPort returns the global out-port of local port port of host h's
// switch, or -1.
func (f *Fabric) localPort(h, port int) int32 {
	sw, _ := f.router.HostSwitch(h)
	if port < 0 || port >= len(f.sw[sw].out) {
		return -1
	}
	return f.sw[sw].out[port]
}

// UsefulChannels appends to buf the ports of host h's switch that lie on a
// minimal path to host dst (paper 001 §3, footnote 1: "A physical channel
// is useful to route a message if it is a minimal route between the
// current node and the destination node"): the distinct ports of the
// routing candidates of a packet injected by h for dst. At the
// destination's own switch it is the destination's port.
func (f *Fabric) UsefulChannels(h, dst int, buf []int) []int {
	sw, port := f.router.HostSwitch(h)
	f.localCands = f.router.Candidates(sw, port, 0, dst, f.localCands[:0])
	buf = buf[:0]
outer:
	for _, c := range f.localCands {
		for _, p := range buf {
			if p == int(c.Port) {
				continue outer
			}
		}
		buf = append(buf, int(c.Port))
	}
	return buf
}

// ChannelRatio returns the transmission-time ratio last measured on port
// port of host h's switch and when (see MeasureTransmissionTimes); ok is
// false when nothing was measured there.
func (f *Fabric) ChannelRatio(h, port int) (ratio float64, at des.Time, ok bool) {
	oi := f.localPort(h, port)
	if f.tt == nil || oi < 0 || f.tt.at[oi] < 0 {
		return 0, 0, false
	}
	return float64(f.tt.ratio[oi]), f.tt.at[oi], true
}

// ChannelMarked returns the last time a packet on port port of host h's
// switch had a transmission-time ratio above the threshold; ok is false
// when that never happened.
func (f *Fabric) ChannelMarked(h, port int) (at des.Time, ok bool) {
	oi := f.localPort(h, port)
	if f.tt == nil || oi < 0 || f.tt.markedAt[oi] < 0 {
		return 0, false
	}
	return f.tt.markedAt[oi], true
}

// LocalFreeBlocks returns the free blocks of lane vl over the input
// buffers of host h's switch: what the switch could tell its NICs about
// its free buffers on that lane.
func (f *Fabric) LocalFreeBlocks(h, vl int) int {
	sw, _ := f.router.HostSwitch(h)
	free := 0
	for _, ii := range f.sw[sw].in {
		if ii < 0 {
			continue
		}
		l := f.in[ii].lanes[vl]
		free += int(l.cap - l.used)
	}
	return free
}

// Lanes returns the virtual lanes per channel.
func (f *Fabric) Lanes() int { return f.nVL }

// FullBuffers returns how many packet-sized buffers of the switches
// (input lanes, and output lanes where the architecture buffers there) are
// occupied, and how many there are: the global figure Self-Tuned
// throttles on ("the total number of full buffers in the network", paper
// 001 §4.2). The original counts full virtual-channel buffers of a few
// flits; lanes here hold many packets, so each packet-sized slot of a lane
// counts as one buffer. It is global knowledge, which no NIC has locally;
// the result is cached for the current instant.
func (f *Fabric) FullBuffers() (full, total int) {
	now := f.eng.Now()
	if f.fullAt == now && f.fullTotal > 0 {
		return f.fullN, f.fullTotal
	}
	if f.wh != nil {
		full, total = f.wh.fullLanes() // wormhole lanes: one buffer each, as the paper counts
		f.fullAt, f.fullN, f.fullTotal = now, full, total
		return full, total
	}
	need := f.blocks(f.maxPacket)
	count := func(ls []lane) {
		for _, l := range ls {
			total += int(l.cap / need)
			full += int((l.used + need - 1) / need)
		}
	}
	for i := range f.in {
		if f.in[i].sw >= 0 {
			count(f.in[i].lanes)
		}
	}
	for i := range f.out {
		if f.out[i].sw >= 0 {
			count(f.out[i].lanes) // output buffers, where the architecture has them
		}
	}
	f.fullAt, f.fullN, f.fullTotal = now, full, total
	return full, total
}

// localState is the measurement and scratch state local.go keeps in the
// Fabric.
type localState struct {
	tt         *txTimes
	localCands []route.Candidate
	fullAt     des.Time
	fullN      int
	fullTotal  int
}
