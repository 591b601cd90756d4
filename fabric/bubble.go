package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/route"
)

// Bubble flow control and restrictive injection (paper 002 §3 and §5.1).
//
// The router marks the candidates that enter a bubble-protected ring with
// route.Candidate.Bubble = 2; route.Select then asks roomer.Bubble whether
// the output has room for that many packets. Restrictive injection raises
// the bubble of every head that entered the switch from a host's
// injection port: on the escape lane only (2-Esc) or on every lane
// (2-All, 4-All, 6-All). Neither costs anything when it is not selected:
// candidates without a bubble are never asked, and the restriction is one
// flag test when a head's candidates are computed.
//
// Buffers are counted in packet slots under bubble flow control, as in
// paper 002 §3 (fixed 16-phit packets, queues of 8 packets): every packet
// takes the blocks of the largest packet in every buffer it enters, so
// that a free slot anywhere in a ring can take any of its packets, which
// the bubble argument needs when packets differ in size.

// bubbleState is the fabric's part of bubble flow control.
type bubbleState struct {
	// slotBlocks, when positive, is the blocks every packet takes (packet
	// slots under bubble flow control).
	slotBlocks int32
	// injEscape and injAdaptive are the packets an escape or adaptive
	// output lane must have room for before a head from an injection port
	// may take it; restrict says whether either is above 1.
	injEscape, injAdaptive int8
	restrict               bool
}

// setupBubble turns on slot accounting when the router's escape function
// uses bubble flow control, and checks that every lane of the switches
// can hold a bubble.
func (f *Fabric) setupBubble() error {
	n := f.router.Bubble()
	if n == 0 {
		return nil
	}
	if f.inj != nil {
		return fmt.Errorf("fabric.switch %s runs the injection links itself%s and counts its buffers in blocks; routing.escape bubble needs packet slots: use cioq or iq", f.cfg.Switch, injectorHint(f.cfg))
	}
	f.slotBlocks = f.blocks(f.maxPacket)
	return f.checkLaneSlots(n, true, "routing.escape bubble (paper 002 §3: a ring may be entered only with room for two packets)")
}

// checkLaneSlots checks that every switch lane (escape lanes only unless
// all) holds n packets of the largest size.
func (f *Fabric) checkLaneSlots(n int, escapeOnly bool, why string) error {
	need := int32(n) * f.blocks(f.maxPacket)
	check := func(what string, ls []lane) error {
		for v, l := range ls {
			if escapeOnly && !f.router.IsEscape(v) {
				continue
			}
			if l.cap < need {
				return fmt.Errorf("%s: lane %d of a switch %s holds %d bytes, fewer than %d packets of %d bytes; raise fabric.escape_vl_buffer or fabric.input_buffer / output_buffer",
					why, v, what, int64(l.cap)*int64(f.blockBytes), n, f.maxPacket)
			}
		}
		return nil
	}
	for i := range f.in {
		if f.in[i].sw >= 0 {
			if err := check("input", f.in[i].lanes); err != nil {
				return err
			}
			break // every switch input has the same lanes
		}
	}
	for i := range f.out {
		if f.out[i].sw >= 0 && f.out[i].lanes != nil {
			return check("output buffer", f.out[i].lanes)
		}
	}
	return nil
}

// RestrictInjection makes the switches grant a packet that entered from a
// host's injection port an escape output lane only when it has room for
// escape packets, and an adaptive lane only with room for adaptive packets
// (paper 002 §5.1: 2-Esc is 2 and 1, 2-All 2 and 2, 4-All 4 and 4, 6-All 6
// and 6). Entering a bubble-protected ring needs room for two packets
// whatever the restriction. It must be called before traffic flows.
func (f *Fabric) RestrictInjection(escape, adaptive int) error {
	if escape < 1 || adaptive < 1 || escape > 64 || adaptive > 64 {
		return fmt.Errorf("restrictive injection %d/%d packets: want 1..64", escape, adaptive)
	}
	if f.wh != nil {
		return fmt.Errorf("restrictive injection counts whole packets of room in a lane (paper 002 §5.1, virtual cut-through); fabric.switching wormhole lanes hold a few flits: use fabric.switching vct")
	}
	why := fmt.Sprintf("restrictive injection of %d packets", max(escape, adaptive))
	if err := f.checkLaneSlots(escape, true, why); err != nil {
		return err
	}
	if err := f.checkLaneSlots(adaptive, false, why); err != nil {
		return err
	}
	f.injEscape, f.injAdaptive = int8(escape), int8(adaptive)
	f.restrict = escape > 1 || adaptive > 1
	return nil
}

// packetBlocks is the blocks a packet of size bytes takes in a buffer: its
// own, or a whole slot under bubble flow control.
func (f *Fabric) packetBlocks(size int32) int32 {
	if f.slotBlocks > 0 {
		return f.slotBlocks
	}
	return f.blocks(size)
}

// restrictInjection raises the bubbles of the candidates of a head at
// input pi of switch s when it came from a host's injection port.
func (f *Fabric) restrictInjection(s *Switch, pi int, cands []route.Candidate) {
	if f.out[f.in[s.in[pi]].up].host < 0 {
		return // from another switch: in transit
	}
	for i := range cands {
		if f.in[f.out[s.out[cands[i].Port]].down].sw < 0 {
			continue // ejection at the source's own switch
		}
		need := f.injAdaptive
		if cands[i].Escape {
			need = f.injEscape
		}
		if need > 1 && need > cands[i].Bubble {
			cands[i].Bubble = need
		}
	}
}

// Bubble reports whether output (port, vl) has room for packets packets
// of the size being routed (route.State; asked only for candidates with a
// bubble).
func (r *roomer) Bubble(port, vl int32, packets int) bool {
	need := int32(packets) * r.blocks
	if r.host != nil {
		return r.host.credits[vl] >= need
	}
	if r.taken != nil && r.taken[port] {
		return false
	}
	ok, _ := r.arch.room(&r.f.out[r.sw.out[port]], vl, need)
	return ok
}
