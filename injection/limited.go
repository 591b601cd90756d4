package injection

// limited is ADAP-LI, or ADAP-LW when window is set (paper 004 §3.3).
type limited struct {
	window bool
	// rejected counts the connection's packets rejected at least once and
	// not yet acknowledged; the connection is in LI while it is positive
	// ("When there are one or more outstanding packets that have been
	// rejected at least once, then the connection switches to the LI
	// state", §3.3).
	rejected int
	// allowance is, in LI, how many packets (li) or bytes (lw) may still
	// be injected.
	allowance int64
}

func (s *limited) Limited() bool { return s.rejected > 0 }

func (s *limited) MayInject(c Candidate, _ Local) bool {
	if s.rejected == 0 || c.HeadOfLine {
		// UI: "all newly generated packets are injected into the network
		// as soon as possible". The head-of-line resend is exempt from LI
		// (a liveness rule the paper leaves implicit): it is certain to be
		// accepted, and when the only packets that could produce an ACK
		// are waiting to be resent, no ACK would ever come otherwise.
		return true
	}
	if s.window {
		return s.allowance >= int64(c.Size)
	}
	return s.allowance > 0
}

func (s *limited) Injected(c Candidate) {
	if s.rejected == 0 {
		return
	}
	if s.window {
		s.allowance = max(0, s.allowance-int64(c.Size))
	} else if s.allowance > 0 {
		s.allowance--
	}
}

func (s *limited) Acked(a Ack) {
	s.rejected = max(0, s.rejected-a.Rejected)
	if s.rejected == 0 {
		// "the connection status is switched to the UI state when all the
		// pending rejected packets are acknowledged" (§3.3); unused
		// allowance does not carry over.
		s.allowance = 0
		return
	}
	if s.window {
		s.advertise(a.Room, a.RoomKnown, a.InFlightBytes)
		return
	}
	// "In the LI state, a packet is injected or re-injected only when an
	// <ACK sn> packet for this connection has been received. Indeed, in
	// this situation, a number of packets up to the number of acknowledged
	// packets may be injected" (§3.3).
	s.allowance += int64(a.Packets)
}

func (s *limited) Nacked(n Nack) {
	if n.First {
		if s.rejected == 0 {
			s.allowance = 0 // entering LI
		}
		s.rejected++
	}
	if s.window && s.rejected > 0 {
		s.advertise(n.Room, n.RoomKnown, n.InFlightBytes)
	}
}

// advertise sets the LW window from the destination's free space: "the
// source node will just inject the number of packets that fit at
// destination buffer" (§3.3). Bytes still in flight will take their share
// of that space, so the window is the advertised room minus them (as TCP's
// usable window is the receiver window minus the data in flight).
func (s *limited) advertise(room int64, known bool, inFlight int64) {
	if !known {
		s.allowance = 1 << 62
		return
	}
	s.allowance = max(0, room-inFlight)
}
