package emu

import "github.com/fabemu/fabemu/emu/frameport"

// Picking up answers to inline writes.
//
// A small frame delivered to an idle device is written by the goroutine
// that runs the model (emu/tap inline writes), and the kernel runs the
// receiving stack inside that write: a ping's echo reply, or a segment's
// immediate ACK, is queued on the same device before the write returns.
// Its reader would be woken for it through the runtime's poller, on a VM
// an inter-processor interrupt to a halted CPU. Instead, the reader that
// ran the model, once it has let go of the model, reads those answers
// itself (frameport.PickerUpper) and submits them, running the model
// again at once if it is still free. On an idle daemon this takes the
// second reader's wake-up off every request-reply exchange.

// maxPickUps bounds the answers one submitter picks up in a row, so a
// reader is not held away from its own device by a chain of exchanges;
// what it leaves is read by the devices' own readers.
const maxPickUps = 8

// notePick puts q on the pick list after a frame small enough to be
// written inline was sent to it (model holder). The device itself knows
// whether the send was inline; PickUp returns at once otherwise.
func (e *Emulator) notePick(q *port) {
	e.pickMu.Lock()
	if !q.picking {
		q.picking = true
		e.picks = append(e.picks, q)
		e.nPicks.Store(int32(len(e.picks)))
	}
	e.pickMu.Unlock()
}

// nextPick takes the oldest port off the pick list, or nil. An empty list,
// the common case under a stream of large frames, costs no lock.
func (e *Emulator) nextPick() *port {
	if e.nPicks.Load() == 0 {
		return nil
	}
	e.pickMu.Lock()
	defer e.pickMu.Unlock()
	if len(e.picks) == 0 {
		return nil
	}
	q := e.picks[0]
	copy(e.picks, e.picks[1:])
	e.picks = e.picks[:len(e.picks)-1]
	e.nPicks.Store(int32(len(e.picks)))
	q.picking = false
	return q
}

// pickUp submits the answers waiting on the devices written to, on the
// caller's goroutine (a reader, after its own frame was submitted).
func (e *Emulator) pickUp() {
	for range maxPickUps {
		q := e.nextPick()
		if q == nil {
			return
		}
		q.picker.PickUp(func(f *frameport.Frame) bool { return e.submitFrame(q, f) })
	}
}
