package fabric

import (
	"math/bits"

	"github.com/fabemu/fabemu/fabric/des"
)

// Control is a control packet travelling on the reverse direction of a
// channel, from the receiving end (an in-port) back to the sender (the
// out-port that feeds it): congestion notifications, Xon/Xoff, tokens.
// Flow-control credits are control packets too, but they have a fast path
// of their own: the blocks freed on a lane are coalesced into one credit
// packet per lane each time the link is free (inPort.pending, outPort.ctrl)
// and need no allocation.
//
// Control packets share the link's bandwidth with data: they are sent
// between data packets, after the credits, in the order they were queued,
// each taking Size bytes of serialization time. The architecture that
// sent one receives it at the upstream port (switchArch.control).
type Control struct {
	Kind uint8 // the architecture's own classification
	VL   int8  // lane it concerns, if any
	Arg  int32 // small argument (a port, a count)
	Size int32 // bytes on the wire
	Data any   // larger payload (a turn sequence, a path)
}

// SendControl queues control packet c on the reverse direction of
// in-port ii: it reaches the out-port feeding ii after the packets queued
// before it, its serialization time and the propagation delay.
func (f *Fabric) SendControl(ii int32, c *Control) {
	rev := f.in[ii].rev
	o := &f.out[rev]
	o.ctrlQ = append(o.ctrlQ, c)
	f.transmit(rev)
}

// sendControl puts every pending control packet of out-port o on its link
// from start on and returns when the last one ends. Credit packets go
// first, one per lane with blocks to return (lowest lane first), then the
// queued control packets.
func (f *Fabric) sendControl(o *outPort, start des.Time) des.Time {
	ip := &f.in[o.creditFor]
	if o.ctrl != 0 {
		ser := serTime(int64(f.cfg.CreditPacket), f.dataRate)
		for o.ctrl != 0 {
			vl := bits.TrailingZeros32(o.ctrl)
			o.ctrl &^= 1 << uint(vl)
			blocks := ip.pending[vl]
			ip.pending[vl] = 0
			ip.creditsInFlight[vl] += blocks
			o.busyTime += ser
			o.sentBytes += int64(f.cfg.CreditPacket)
			f.Stats.CreditPackets++
			f.Stats.CreditBytes += int64(f.cfg.CreditPacket)
			start += ser
			if up := &f.out[ip.up]; up.lazy {
				up.creditQ = append(up.creditQ, creditArrival{start + f.prop, int32(vl), blocks})
				if up.waiting && !up.woken {
					up.woken = true
					f.eng.Schedule(start+f.prop, f, opCreditWake, ip.up, nil)
				}
			} else {
				f.eng.Schedule(start+f.prop, f, packOp(opCredit, vl, int(blocks)), ip.up, nil)
			}
		}
	}
	if len(o.ctrlQ) == 0 {
		return start
	}
	for i, c := range o.ctrlQ {
		ser := serTime(int64(c.Size), f.dataRate)
		o.busyTime += ser
		o.sentBytes += int64(c.Size)
		f.Stats.ControlPackets++
		f.Stats.ControlBytes += int64(c.Size)
		start += ser
		f.eng.Schedule(start+f.prop, f, opControl, ip.up, c)
		o.ctrlQ[i] = nil
	}
	o.ctrlQ = o.ctrlQ[:0]
	return start
}
