package injection

// Trans-t (paper 001 §3, Baydal, López and Duato, "Congestion Control
// Based on Transmission Times"). The switch measures, per channel, the
// ratio of the actual to the minimum transmission time of the packets it
// sends and marks the channel congested for u2 when the ratio exceeds u1
// (the fabric does the measuring and marking: View.ChannelMarked). When the
// NIC has a new packet, it looks at the useful channels for the packet's
// destination (the local switch's channels on a minimal path) and:
//
//   - if some but not all are congested, halves its open injection
//     channels ("from 4 to 2") for u3, then looks again (soft congestion);
//   - if all are congested, closes injection for u3 ("newly generated
//     messages cannot be injected during u3 cycles"), then opens one
//     channel for u4 "regardless of the network status, in order to
//     prevent starvation", then looks again (serious congestion);
//   - if none is congested, opens injection channels again progressively:
//     one more per look, each look at least u4 after the previous one
//     while not all are open (the paper says "progressively increased";
//     the step is our reading of its Fig. 2).
//
// With k of the N injection channels open the NIC injects at k/N of its
// link's rate (closing channels "is equivalent to reduce the bandwidth
// associated to message injection", §3 footnote 2): after a packet of
// serialization time s starts, the next may start s*N/k later. When the
// channels are real injection ports of the router (PortGate: a NIC with N
// physical injection queues), the gate opens and closes the ports instead:
// ports 0..k-1 may start packets, each at its link's full rate.

type transTControl struct {
	cfg ControlConfig
}

func newTransT(c ControlConfig, _ int) Control { return &transTControl{cfg: c} }

func (t *transTControl) Kind() ControlKind { return TransT }

// Measure asks the switches to mark channels whose ratio exceeds u1.
func (t *transTControl) Measure(View) float64 { return t.cfg.U1 }

func (t *transTControl) Gate(int) Gate {
	return &transT{cfg: &t.cfg, open: t.cfg.Channels}
}

// Trans-t phases.
const (
	ttFree    = iota // no restriction in force (open may be below N: reopening)
	ttSoft           // some useful channels congested: halved for u3
	ttClosed         // all useful channels congested: closed for u3
	ttStarved        // after a closure: one channel for u4, whatever happens
)

// transT is one NIC's Trans-t state.
type transT struct {
	cfg    *ControlConfig
	phase  int
	open   int   // injection channels open
	until  int64 // the current phase holds until then
	nextAt int64 // earliest start of the next packet (rate of the open channels)
	useful []int
	ports  bool // the channels are injection ports (UsePorts)
}

func (s *transT) Open() int { return s.open }

// congested reports whether port ch was marked within u2.
func (s *transT) congested(ch int, now, u2 int64, v View) bool {
	at, ok := v.ChannelMarked(ch)
	return ok && now-at < u2
}

// look decides the next phase from the useful channels' status (§3).
func (s *transT) look(dst int, now int64, v View) {
	cyc := s.cfg.cycle(v)
	u2 := int64(s.cfg.U2 * float64(cyc))
	u3 := int64(s.cfg.U3 * float64(cyc))
	u4 := int64(s.cfg.U4 * float64(cyc))
	if s.phase == ttClosed {
		// "In the latter case (serious congestion), we will enable one
		// injection channel during an interval u4, regardless of the
		// network status, in order to prevent starvation."
		s.phase, s.open, s.until = ttStarved, 1, now+u4
		return
	}
	s.useful = v.UsefulChannels(dst, s.useful[:0])
	n := 0
	for _, ch := range s.useful {
		if s.congested(ch, now, u2, v) {
			n++
		}
	}
	switch {
	case n > 0 && n == len(s.useful):
		// "If all the useful channels are congested ... newly generated
		// messages cannot be injected during u3 cycles."
		s.phase, s.open, s.until = ttClosed, 0, now+u3
	case n > 0:
		// "If some of the useful physical channels are congested (but not
		// all of them), we reduce the number of injection channels by
		// half ... during an interval time u3."
		s.phase, s.open, s.until = ttSoft, max(1, s.open/2), now+u3
	default:
		// "if congestion is not longer detected, the number of injection
		// channels is progressively increased."
		s.phase = ttFree
		if s.open < s.cfg.Channels {
			s.open++
			s.until = now + u4
		} else {
			s.until = now
		}
	}
}

func (s *transT) Admit(dst, _ int, v View) (bool, int64) {
	now := v.Now()
	if now >= s.until {
		s.look(dst, now, v)
	}
	if s.open == 0 {
		return false, s.until
	}
	if now < s.nextAt {
		return false, s.nextAt
	}
	return true, 0
}

// UsePorts makes the channels the NIC's n injection ports (n is
// cfg.Channels: the NIC checks it).
func (s *transT) UsePorts(int) { s.ports = true }

// AdmitPort admits a packet on port q while q is one of the open ports.
// A port is closed only while a phase holds (until is ahead: soft,
// closed, starved, or reopening one port per u4), so retry is then.
func (s *transT) AdmitPort(q, dst, _ int, v View) (bool, int64) {
	now := v.Now()
	if now >= s.until {
		s.look(dst, now, v)
	}
	if q < s.open {
		return true, 0
	}
	return false, max(s.until, now+1)
}

func (s *transT) Injected(size int, at int64, v View) {
	if s.ports || s.open >= s.cfg.Channels {
		s.nextAt = 0
		return
	}
	s.nextAt = at + v.Serialization(size)*int64(s.cfg.Channels)/int64(max(1, s.open))
}
