package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
)

// iqArch is the input-queued switch: per-lane FIFOs at the inputs and no
// output buffers. The crossbar feeds the output link directly, so a head
// can cross only when the link is free and the downstream lane has
// credits for the whole packet (paper 003 §2.1: the 1 GB/s input-queued
// switches of its networks, §4.2).
type iqArch struct{ vlQueues }

func newIQ(f *Fabric) switchArch { return &iqArch{vlQueues{f}} }

func (a *iqArch) room(o *outPort, vl, blocks int32) (bool, int) {
	if o.busy {
		return false, 0
	}
	return o.credits[vl] >= blocks, int(o.credits[vl])
}

// forward starts the packet on the link at once (after control packets
// already on it); its tail leaves the input when it leaves the link.
func (a *iqArch) forward(ii, oi int32, p *Packet, vl int) {
	f := a.f
	f.withInput, f.cutOut = p, -1
	end := f.send(oi, p, vl, max(f.eng.Now(), f.out[oi].idleAt))
	f.withInput = nil
	if f.cutOut >= 0 {
		f.eng.Schedule(end, f, packOp(opIQDone, int(p.inVL), int(f.cutOut)|int(p.blocks)<<4), ii, p)
		return
	}
	f.eng.Schedule(end, f, packOp(opXbarDone, int(p.inVL), int(p.blocks)), ii, p)
}

// opIQDone: A: in-port. The tail of a packet left the link and, at the
// same instant, the input it crossed from: the opLinkFree and the
// opXbarDone of that packet in one event, handled in that order, as the
// two events were scheduled one after the other. The input lane is in
// the lane bits, the output lane in bits 8..11, blocks above.
const opIQDone = opArch

func (a *iqArch) handle(kind int, ii int32, inVL, rest int, _ any) {
	f := a.f
	outVL, blocks := rest&15, int32(rest>>4)
	f.linkFree(f.in[ii].xbarTo, outVL, blocks)
	f.xbarDone(ii, inVL, blocks)
}

func (a *iqArch) crossbarDone(*outPort)          {}
func (a *iqArch) next(int32, *outPort, des.Time) {}
func (a *iqArch) linkDone(*outPort, int, int32)  {}

func (a *iqArch) waitsFor(o *outPort, vl int, need int32) string {
	return fmt.Sprintf("s%d/p%d/vl%d (%d credits, need %d)", o.sw, o.port, vl, o.credits[vl], need)
}
