package fabric

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
)

// RECN-IQ at the network interfaces. The thesis lets the congestion
// information travel upstream "until [it] (and the subsequent traffic
// separation) eventually reaches the sources" (paper 003 §3.3.7, step 6);
// RECN gives the sources SAQs at the output side of their network
// interfaces (paper 000 §4.1). With fabric.recn_iq.nic_saqs > 0 every
// host's injection port is the upstream port of the first switch's input
// and is owned by RECN-IQ's input stage (it is the fabric's injector) on
// whichever datapath it sits (recn-iq, pciq-K+recn-iq, cioq+recn-iq), so
// that the nic package needs to know nothing of RECN-IQ:
//   - Xoff (§3.3.5): an input SAQ of the first switch reaching
//     xoff_threshold sends Xoff with its path (the turns from the first
//     switch on) to the host's injection port, as it would to an upstream
//     switch's output. The NIC is both that output's CAM and the inputs
//     behind it: it allocates a SAQ in Xoff for the path, or sets Xoff on
//     the SAQ it has for it; with none free the Xoff is dropped (counted
//     as NIC exhaustion) and the NIC keeps sending, bounded by credits.
//   - Setting aside (§3.3.4 at the NIC): the NIC's queue is the cold
//     queue. When the link is free the port looks at the NIC's head
//     packet (Endpoint.Peek); while its turns match a SAQ it takes it
//     (Endpoint.Pop) into the SAQ with the shortest matching path, if the
//     NIC SAQ memory (nic_saq_memory) has room, and looks at the next. A
//     head that does not fit waits at the head of the NIC's queue. The
//     head of a SAQ moves on to the SAQ with the shortest path longer than
//     its own that it matches, as the switch's post-processing does, and
//     only a head that matches no longer SAQ may be sent.
//   - Injection: round robin among the NIC's head (when it matches no
//     SAQ) and the SAQs not in Xoff, each only with credits for it (the
//     credits per lane of the first switch's input memory, shared by all
//     queues, §4.1.7).
//   - Xon (§3.3.6): the SAQ leaves Xoff; a SAQ that is empty and not in
//     Xoff is freed (§3.3.3).
//   - Order: a flow's packets all have one path and leave the NIC's queue
//     in order; each goes to the shortest matching SAQ and from SAQ heads
//     only to longer ones, and a head is sent only when no longer SAQ
//     matches it, so a packet never passes an earlier one of its flow.
//
// Packets set aside count as injected (Stats.Injected: the fabric took
// them from the NIC); their Inject time is when they start on the link.
// The NIC has no post-processing delay (the thesis times only the
// switch's unit).

// recnIQNIC is the RECN-IQ state of one host's injection port.
type recnIQNIC struct {
	saqs     []saq // q holds the set-aside packets, blocks their size
	inUse    int
	nicStage // blocks held (at most recnIQArch.nicMem), round robin, memory wait
}

// RECNIQNICStats are the counters of the NIC side of recn-iq
// (fabric.recn_iq.nic_saqs > 0); all zero without it.
type RECNIQNICStats struct {
	MaxSAQsPerNIC    int    `json:"max_saqs_per_nic,omitzero"`  // most SAQs in use at one host's injection port at once
	NICAllocations   uint64 `json:"nic_allocations,omitzero"`   // NIC SAQs allocated on Xoff from the first switch
	NICDeallocations uint64 `json:"nic_deallocations,omitzero"` // NIC SAQs freed (empty, not in Xoff)
	NICXoff          uint64 `json:"nic_xoff,omitzero"`          // Xoff received by NICs
	NICXon           uint64 `json:"nic_xon,omitzero"`           // Xon received by NICs
	NICSetAside      uint64 `json:"nic_set_aside,omitzero"`     // packets taken from a NIC's queue into one of its SAQs
	NICMemoryFull    uint64 `json:"nic_memory_full,omitzero"`   // times a NIC's head matched a SAQ but did not fit its SAQ memory
	MaxNICSAQBytes   int64  `json:"max_nic_saq_bytes,omitzero"` // most bytes held in one NIC's SAQs at once
	ExhaustedNIC     uint64 `json:"saq_exhausted_nic,omitzero"` // Xoff dropped at a NIC with no free SAQ
}

// injectorHint names, for an error about an architecture that runs the
// injection links, the setting that hands them back to the fabric.
func injectorHint(c Config) string {
	switch {
	case strings.HasSuffix(c.Switch, "recn-iq"):
		return " (SAQs at the NICs; fabric.recn_iq.nic_saqs=-1 for none)"
	case c.Switch == "recn":
		return " (SAQs at the NICs; fabric.recn.nic_saqs=-1 for none)"
	}
	return ""
}

// nicSetup makes the NIC state (from setup).
func (a *recnIQArch) nicSetup() {
	if a.f.inj == nil || a.nics != nil {
		return
	}
	a.nics = make([]recnIQNIC, len(a.f.hostOut))
	for h := range a.nics {
		a.nics[h].saqs = make([]saq, a.cfg.NICSAQs)
	}
}

// xoffUpstream reports whether input ii sends Xon/Xoff upstream: always
// from a switch, from a host only when the hosts have SAQs.
func (a *recnIQArch) xoffUpstream(ii int32) bool {
	return a.f.out[a.f.in[ii].up].sw >= 0 || a.nics != nil
}

// nicTurns returns the turns from the first switch on of a packet host
// port o injects on lane vl for dst: what the first switch's CAM holds.
func (a *recnIQArch) nicTurns(o *outPort, vl int8, dst int32) string {
	d := &a.f.in[o.down]
	return a.pool.turns(a.f, int(d.sw), int(d.port), int(vl), int(dst))
}

// shortestLonger returns the SAQ on lane vl whose path is the shortest
// one longer than curLen that route starts with, or -1 (§3.3.4).
func shortestLonger(saqs []saq, vl int8, route string, curLen int) int {
	best, bestLen := -1, 1<<30
	for k := range saqs {
		s := &saqs[k]
		if s.active && s.vl == vl && len(s.path) > curLen && len(s.path) < bestLen &&
			len(route) >= len(s.path) && route[:len(s.path)] == s.path {
			best, bestLen = k, len(s.path)
		}
	}
	return best
}

// inject runs host injection port oi, whose link is free from start on.
func (a *recnIQArch) inject(oi int32, o *outPort, start des.Time) {
	a.setup()
	f := a.f
	h := int(o.host)
	ns := &a.nics[h]
	// Deterministic routing injects on the escape lane only (recn-iq
	// refuses adaptive routing): the lane of every SAQ here.
	vl := int8(f.injCands[len(f.injCands)-1].VL)
	a.nicPostProcess(o, ns)
	head := f.ep.Peek(h)
	headFree := head != nil
	for head != nil && ns.inUse > 0 {
		k := shortestLonger(ns.saqs, vl, a.nicTurns(o, vl, head.Dst), 0)
		if k < 0 {
			break
		}
		taken, full := f.setAside(h, &ns.nicStage, &ns.saqs[k], head, a.nicMem, start)
		if full {
			a.stats.NICMemoryFull++
		}
		if !taken {
			headFree = false
			break
		}
		a.stats.NICSetAside++
		a.stats.MaxNICSAQBytes = max(a.stats.MaxNICSAQBytes, int64(ns.held)*int64(f.blockBytes))
		a.nicPostProcess(o, ns)
		head = f.ep.Peek(h)
		headFree = head != nil
	}
	if k, _ := f.serveNIC(oi, o, &ns.nicStage, ns.saqs, head, headFree, start); k >= 0 {
		a.nicMaybeFree(o, ns, k)
	}
}

// nicPostProcess moves the head of every NIC SAQ to the SAQ with the
// shortest path longer than its own that it matches, until none does.
func (a *recnIQArch) nicPostProcess(o *outPort, ns *recnIQNIC) {
	if ns.inUse < 2 {
		return
	}
	for again := true; again; {
		again = false
		for j := range ns.saqs {
			s := &ns.saqs[j]
			for s.active && s.q.head != nil {
				p := s.q.head
				k := shortestLonger(ns.saqs, s.vl, a.nicTurns(o, s.vl, p.Dst), len(s.path))
				if k < 0 {
					break
				}
				s.q.pop()
				s.blocks -= p.blocks
				d := &ns.saqs[k]
				d.q.push(p)
				d.blocks += p.blocks
				d.used = true
				again = true
			}
			a.nicMaybeFree(o, ns, j)
		}
	}
}

// nicMaybeFree frees NIC SAQ k if it is empty and not in Xoff (§3.3.3).
func (a *recnIQArch) nicMaybeFree(o *outPort, ns *recnIQNIC, k int) {
	s := &ns.saqs[k]
	if !s.active || s.xoff || s.q.head != nil {
		return
	}
	a.note("free-nic", int32(o.host), k, 0)
	*s = saq{}
	ns.inUse--
	a.stats.NICDeallocations++
}

// nicControl handles Xoff and Xon from the first switch at host port oi.
func (a *recnIQArch) nicControl(oi int32, c *Control) {
	if a.nics == nil {
		return
	}
	f := a.f
	o := &f.out[oi]
	ns := &a.nics[o.host]
	path, _ := c.Data.(string)
	k := findExact(ns.saqs, c.VL, path)
	switch c.Kind {
	case ctlXoff:
		a.stats.NICXoff++
		if k < 0 {
			if k = freeSAQ(ns.saqs); k < 0 {
				a.stats.Exhausted++
				a.stats.ExhaustedNIC++
				a.note("exhausted-nic", int32(o.host), -1, 0)
				return
			}
			ns.saqs[k] = saq{active: true, vl: c.VL, path: path}
			ns.inUse++
			a.stats.NICAllocations++
			a.stats.MaxSAQsPerNIC = max(a.stats.MaxSAQsPerNIC, ns.inUse)
			a.note("alloc-nic", int32(o.host), k, 0)
		}
		ns.saqs[k].xoff = true
		a.note("xoff-nic", int32(o.host), k, 0)
	case ctlXon:
		a.stats.NICXon++
		if k < 0 {
			return
		}
		ns.saqs[k].xoff = false
		a.note("xon-nic", int32(o.host), k, 0)
		a.nicMaybeFree(o, ns, k)
		f.transmit(oi)
	}
}

// nicCheck verifies the NIC SAQs against their counters (for tests).
func (a *recnIQArch) nicCheck() []string {
	var bad []string
	for h := range a.nics {
		ns := &a.nics[h]
		n, held, xoff := 0, int32(0), false
		for k := range ns.saqs {
			s := &ns.saqs[k]
			if !s.active {
				if s.q.head != nil || s.blocks != 0 {
					bad = append(bad, fmt.Sprintf("host %d: free NIC SAQ %d holds packets", h, k))
				}
				continue
			}
			n++
			xoff = xoff || s.xoff
			var b int32
			for p := s.q.head; p != nil; p = p.next {
				b += p.blocks
			}
			if b != s.blocks {
				bad = append(bad, fmt.Sprintf("host %d: NIC SAQ %d holds %d blocks, counted %d", h, k, b, s.blocks))
			}
			held += b
		}
		if n != ns.inUse || n > a.cfg.NICSAQs {
			bad = append(bad, fmt.Sprintf("host %d: %d NIC SAQs active, %d counted, max %d", h, n, ns.inUse, a.cfg.NICSAQs))
		}
		if held != ns.held || held > a.nicMem {
			bad = append(bad, fmt.Sprintf("host %d: NIC SAQs hold %d blocks, counted %d, memory %d", h, held, ns.held, a.nicMem))
		}
	}
	return bad
}

// NICSAQPackets returns the packets held in host h's RECN-IQ SAQs (for
// tests and reports; 0 without NIC SAQs).
func (f *Fabric) NICSAQPackets(h int) int {
	has, ok := f.arch.(interface{ recnIQ() *recnIQArch })
	if !ok || has.recnIQ().nics == nil {
		return 0
	}
	a := has.recnIQ()
	n := 0
	for k := range a.nics[h].saqs {
		for p := a.nics[h].saqs[k].q.head; p != nil; p = p.next {
			n++
		}
	}
	return n
}
