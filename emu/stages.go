package emu

import (
	"time"

	"github.com/fabemu/fabemu/emu/frameport"
	"github.com/fabemu/fabemu/fabric/des"
)

// Where a late interval's time went. The pacer judges an interval by the
// excess lag of its events; that number alone does not say which stage of
// a frame's trip through the daemon was slow. The emulator keeps, for
// each one-second interval, the largest time each stage took (the stages
// of FramePath, with the model's stage as its lateness rather than its
// simulated latency), and the pacer stores them in the report of an
// invalid interval (des.IntervalReport.Stages, Slowest): `fabemu stat`
// and the validity warning then name the stage and by how much.

// Stage names, in the order of a frame's trip.
const (
	StageReadToSubmit    = "read_to_submit"
	StageSubmitToIngress = "submit_to_ingress"
	StageModelLate       = "model_late"
	StageEgress          = "egress"
	StageWriterQueue     = "writer_queue"
	StageWrite           = "write"
)

// stageWindow holds the largest time of each loop-side stage since the
// interval began (loop goroutine only).
type stageWindow struct {
	readToSubmit, submitToIngress, modelLate, egress time.Duration
}

// intervalStages is the pacer's Stages hook (loop goroutine): the window
// of the interval that closes, the writers' stages taken from every port
// that keeps them, and a new window.
func (e *Emulator) intervalStages() []des.StageTime {
	w := e.window
	e.window = stageWindow{}
	var queue, write time.Duration
	for _, p := range e.ports {
		if ww, ok := p.dev.(frameport.WriteWindower); ok {
			q, wr := ww.TakeWriteWindow()
			queue, write = max(queue, q), max(write, wr)
		}
	}
	return []des.StageTime{
		{Stage: StageReadToSubmit, Max: w.readToSubmit},
		{Stage: StageSubmitToIngress, Max: w.submitToIngress},
		{Stage: StageModelLate, Max: w.modelLate},
		{Stage: StageEgress, Max: w.egress},
		{Stage: StageWriterQueue, Max: queue},
		{Stage: StageWrite, Max: write},
	}
}
