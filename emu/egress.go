package emu

import (
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/fabric/des"
)

// Lossless egress. A frame delivered by the model to a TAP host whose
// writer queue is full is not refused: it waits in the port's backlog and
// the host's NIC holds its reception (fabric.HoldReception), so the
// packets behind it stay in the NIC's input buffer with their credits, the
// fabric backs up hop by hop, the source NIC stops injecting, its admitted
// bytes stay in the fabric and its reader stops reading its TAP (the
// kernel's queue, then the application, waits). The writer calls back
// each time it takes a frame from its queue (frameport.WriteRoomer); the
// loop then writes the backlog and, once it is empty, lets the NIC drain
// again. A frame is then refused only at ingress.
//
// Ports that cannot wait for room (no WriteRoomer) keep the old rule: a
// full writer queue refuses the frame (write_refused, queue_full).

// egressFrame is a delivered frame on its way to a writer.
type egressFrame struct {
	f       *frameport.Frame
	tag     *copyTag
	at      des.Time // simulated delivery time
	comment string   // its pcap_out comment, when recording
}

// egressWake is the event that flushes a port's backlog (A: port index).
// Flushing can resume the NIC's reception, which delivers more frames, so
// it never runs inside a delivery: it is an event of its own.
type egressWake struct{ e *Emulator }

func (w egressWake) Handle(ev *des.Event) { w.e.flushEgress(w.e.ports[ev.A]) }

// egress writes a delivered frame, or queues it behind the backlog and
// holds q's reception while q's writer has no room (loop goroutine,
// inside a delivery).
func (e *Emulator) egress(q *port, ef egressFrame) {
	if q.room == nil || (len(q.backlog) == 0 && q.room.WriteRoom() > 0) {
		e.write(q, ef)
		return
	}
	q.backlog = append(q.backlog, ef)
	if !q.holding {
		q.holding = true
		q.holds++
		q.heldSince = time.Now()
		e.sess.Fabric.HoldReception(q.host)
	}
	e.awaitRoom(q)
}

// awaitRoom asks q's writer to call back when it takes a frame. If it
// made room before it could see the request, the flush is scheduled now.
func (e *Emulator) awaitRoom(q *port) {
	q.roomWait.Store(true)
	if q.room.WriteRoom() > 0 && q.roomWait.CompareAndSwap(true, false) {
		e.sess.Eng.Schedule(e.sess.Eng.Now(), e.wake, 0, int32(q.idx), nil)
	}
}

// writerRoom runs on q's writer goroutine each time it takes a frame: if
// the loop waits for room, it submits the flush.
func (e *Emulator) writerRoom(q *port) {
	if q.roomWait.CompareAndSwap(true, false) {
		_ = e.pacer.Submit(des.Input{At: time.Now(), Fn: func(des.Time) { e.flushEgress(q) }})
	}
}

// flushEgress writes q's backlog while its writer has room; once the
// backlog is empty, q's NIC drains its reception again (loop goroutine,
// outside any delivery).
func (e *Emulator) flushEgress(q *port) {
	n := 0
	for n < len(q.backlog) && q.room.WriteRoom() > 0 {
		e.write(q, q.backlog[n])
		q.backlog[n] = egressFrame{}
		n++
	}
	q.backlog = q.backlog[n:]
	if len(q.backlog) > 0 {
		e.awaitRoom(q)
		return
	}
	q.backlog = nil
	if q.holding {
		q.holding = false
		q.heldTotal += time.Since(q.heldSince)
		e.sess.Fabric.ResumeReception(q.host)
	}
}

// heldFor returns how long q's reception has been held in all (loop
// goroutine).
func (q *port) heldFor() time.Duration {
	d := q.heldTotal
	if q.holding {
		d += time.Since(q.heldSince)
	}
	return d
}

// dropBacklogs lets go of the frames still waiting for writer room once
// the loop has ended (Close), counting them.
func (e *Emulator) dropBacklogs() {
	for _, q := range e.ports {
		if q.room != nil {
			q.room.OnWriteRoom(nil)
		}
		for _, ef := range q.backlog {
			ef.f.Release()
			q.closedHeld++
			ef.tag.ref.refs--
			if ef.tag.ref.refs == 0 {
				e.finish(ef.tag.ref)
			}
		}
		q.backlog = nil
	}
}
