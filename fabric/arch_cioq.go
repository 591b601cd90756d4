package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
)

// cioqArch is the combined input-output queued switch of paper 004 §4.1:
// per-lane FIFOs at the inputs and a buffer per lane at every output. A
// granted packet crosses the crossbar (at crossbar_speedup times the link
// rate) into the output buffer, which needs room for the whole packet;
// the output link then sends from its lanes in round-robin order when the
// next switch has credits.
type cioqArch struct{ vlQueues }

// opCutThrough: A: in-port. A packet that cut through an idle output left
// the input buffer and the output link at the same instant: the
// opXbarDone and opLinkFree of that packet in one event. The input lane
// is in the lane bits, the output lane in bits 8..11, blocks above.
const opCutThrough = opArch

func newCIOQ(f *Fabric) switchArch { return &cioqArch{vlQueues{f}} }

func (a *cioqArch) room(o *outPort, vl, blocks int32) (bool, int) {
	if o.creditH < len(o.creditQ) {
		a.f.absorb(o)
	}
	if o.xbar {
		return false, 0
	}
	l := &o.lanes[vl]
	free := l.cap - l.used
	return free >= blocks, int(free + o.credits[vl])
}

// forward moves the packet into the output buffer. Its tail lands there
// no earlier than it arrived at the input, nor before the crossbar has
// carried it. If the output link is idle the packet starts on it at once
// and its tail leaves both buffers at the same time: one event does for
// both.
func (a *cioqArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	o := &f.out[oi]
	now := f.eng.Now()
	blocks := p.blocks
	end := max(now+serTime(int64(p.Size), f.xbarRate), p.tailAt)
	o.xbar = true
	o.lanes[vl].used += blocks
	o.outq[vl].push(p)
	f.crossed(ii, oi, p, blocks, end)
}

// crossed finishes a crossbar transfer of p (blocks credit blocks) from
// input ii into output oi's memory, ending at end, for the architectures
// with output buffers: the output link may start on p at once (virtual
// cut-through: send marks it in cutOut and one event then ends both the
// transfer and the cut-through), else the transfer completes at end.
func (f *Fabric) crossed(ii, oi int32, p *Packet, blocks int32, end des.Time) {
	p.tailAt = end
	f.cutThrough, f.cutOut = p, -1
	f.transmit(oi)
	f.cutThrough = nil
	if f.cutOut >= 0 {
		f.eng.Schedule(end, f, packOp(opCutThrough, int(p.inVL), int(f.cutOut)|int(blocks)<<4), ii, p)
		return
	}
	f.eng.Schedule(end, f, packOp(opXbarDone, int(p.inVL), int(blocks)), ii, p)
}

func (a *cioqArch) crossbarDone(o *outPort) {
	o.xbar = false
	o.epoch++
}

// next sends the head of the next lane, in round-robin order, whose
// downstream lane has credits for it.
func (a *cioqArch) next(oi int32, o *outPort, start des.Time) {
	f := a.f
	queued := false
	n := len(o.outq)
	for j, v := 0, o.rrVL; j < n; j++ {
		if p := o.outq[v].head; p != nil {
			if o.credits[v] >= p.blocks {
				o.outq[v].pop()
				if o.rrVL = v + 1; o.rrVL == n {
					o.rrVL = 0
				}
				f.send(oi, p, v, start)
				return
			}
			queued = true
		}
		if v++; v == n {
			v = 0
		}
	}
	if queued {
		f.wakeForCredits(oi, o)
	}
}

// linkDone: the packet's tail has left the output buffer.
func (a *cioqArch) linkDone(o *outPort, vl int, blocks int32) { o.lanes[vl].used -= blocks }

// handle: opCutThrough, the crossbar transfer and the link transmission
// of a packet that cut through ended together.
func (a *cioqArch) handle(kind int, ii int32, inVL, rest int, _ any) {
	f := a.f
	outVL, blocks := rest&15, int32(rest>>4)
	ip := &f.in[ii]
	ip.xbarBusy = false
	f.markReady(ip)
	f.freeInput(ii, inVL, blocks)
	o := &f.out[ip.xbarTo]
	o.xbar = false
	o.busy = false
	o.lanes[outVL].used -= blocks
	o.epoch++
	f.transmit(ip.xbarTo)
	f.alloc.arbitrate(&f.sw[ip.sw])
}

func (a *cioqArch) waitsFor(o *outPort, vl int, need int32) string {
	l := &o.lanes[vl]
	return fmt.Sprintf("s%d/p%d/vl%d (output buffer %d of %d blocks free, need %d)", o.sw, o.port, vl, l.cap-l.used, l.cap, need)
}
