package fabric

import "github.com/fabemu/fabemu/fabric/des"

// Timing of the RECN-IQ input stage (paper 003 §4.1.4, §4.1.5, §4.2.3).
//
// Post-processing unit (fabric.recn_iq.post_processing): in the thesis a
// packet's ready-for-scheduler (RFS) bit is reset when it is stored, and
// set by the post-processing unit once it has inspected the packet at the
// head of its queue and found no CAM line to move it to; a packet moved
// into a SAQ has its RFS bit reset again (§4.1.5). The unit takes 10 ns
// per packet in §4.2.3. Here ("timed") a packet that becomes the head of
// a cold queue or a SAQ is hidden from the allocator for
// post_processing_delay from that moment; the moves themselves are
// decided at once (the CAM comparison is the same), and a packet moved
// into a SAQ it heads starts the delay again there, as its RFS bit is
// reset (the thesis' unit visits one queue at a time; here every head
// is processed in parallel). "bypass" is
// §4.2.3's enhanced RECN-IQ: no delay while the input has no SAQ and the
// cold queue is below the detection threshold. "instant" takes no time.
//
// Detection (fabric.recn_iq.detection): the thesis' congestion detection
// unit compares the cold queue's occupancy with the threshold and, when
// reached, looks at the head's requested output (§4.1.4); the thesis'
// simulator does so every cycle. The cold queue, its head and the CAM
// change only at events, so "cycle" checks whenever one of them changes:
// a packet arrives, the head leaves (the "events" rule), and also when
// the post-processing moves the cold queue's head into a SAQ (a new head)
// or a SAQ of the input is freed (a detection refused for want of a SAQ,
// or found a line for the head's output, may now allocate).

const (
	// opRECNIQDetect: A: in-port. Run per-cycle detection at the input
	// (scheduled at the same instant, as it may arise during a move).
	opRECNIQDetect = opRECNIQKick + 1
	// opRECNIQReady: A: in-port, blocks: queue, Ref: the head packet. The
	// post-processing delay of that head ended.
	opRECNIQReady = opRECNIQKick + 2
)

// ppuState is the per-input timing state: when the head of each queue
// becomes visible to the allocator (RFS set), and pending detection
// checks.
type ppuState struct {
	ready   []des.Time // per in-port x queue
	detects map[int32]bool
}

// timed reports whether the post-processing takes time.
func (a *recnIQArch) timed() bool {
	return a.cfg.PostProcessing != PPInstant && a.cfg.PostProcessingDelay > 0
}

// headChanged: p became the head of queue v of input ii (nil: the queue
// emptied). With a timed post-processing unit the head is hidden until
// its delay has passed.
func (a *recnIQArch) headChanged(ii int32, v int, p *Packet) {
	if p == nil || !a.timed() {
		return
	}
	f := a.f
	d := a.cfg.PostProcessingDelay
	if a.ppu.ready == nil {
		a.ppu.ready = make([]des.Time, len(f.in)*a.queuesPerInput())
	}
	if a.cfg.PostProcessing == PPBypass && a.in[ii].inUse == 0 && v < a.saqBase && f.in[ii].queues[v].n < a.detect {
		a.ppu.ready[int(ii)*a.queuesPerInput()+v] = f.eng.Now()
		return // §4.2.3: the unit is bypassed at low load
	}
	at := f.eng.Now() + d
	a.ppu.ready[int(ii)*a.queuesPerInput()+v] = at
	maskHead(&f.in[ii].queues[v], p)
	f.eng.Schedule(at, f, packOp(opRECNIQReady, 0, v), ii, p)
}

// hidden reports whether the head of queue v of ii may not be offered to
// the allocator: its SAQ is gated (Xoff) or its post-processing is still
// running.
func (a *recnIQArch) hidden(ii int32, v int) bool {
	f := a.f
	if k := v - a.saqBase; k >= 0 && a.in[ii].saqs[k].gated() {
		return true
	}
	return a.ppu.ready != nil && a.ppu.ready[int(ii)*a.queuesPerInput()+v] > f.eng.Now()
}

// ready: the post-processing delay of head p of queue v of ii ended.
func (a *recnIQArch) ready(ii int32, v int, p *Packet) {
	f := a.f
	q := &f.in[ii].queues[v]
	if q.head != p || a.ppu.ready[int(ii)*a.queuesPerInput()+v] != f.eng.Now() || a.hidden(ii, v) {
		return
	}
	if q.candsFor == p {
		q.candsFor = nil
	}
	a.kick(f.in[ii].sw)
}

// redetect schedules a per-cycle detection check at input ii.
func (a *recnIQArch) redetect(ii int32) {
	if a.cfg.Detection != DetectPerCycle || a.ppu.detects[ii] {
		return
	}
	if a.ppu.detects == nil {
		a.ppu.detects = map[int32]bool{}
	}
	a.ppu.detects[ii] = true
	a.f.eng.Schedule(a.f.eng.Now(), a.f, opRECNIQDetect, ii, nil)
}

// detectAll runs detection on every cold queue of ii at or past the
// threshold (§4.1.4).
func (a *recnIQArch) detectAll(ii int32) {
	delete(a.ppu.detects, ii)
	f := a.f
	for v := 0; v < a.saqBase; v++ {
		if q := &f.in[ii].queues[v]; q.head != nil && q.n >= a.detect {
			a.detectAt(ii, v, q.head)
		}
	}
}
