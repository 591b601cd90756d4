package emu

import (
	"fmt"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
	simmodel "github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
)

// Bound is what limits the throughput of one TAP-to-TAP stream: the
// fabric's link rate, or how fast this machine runs the model.
type Bound struct {
	// LinkRate is the links' data rate (after the line code), bits/s.
	LinkRate int64
	// ModelRate is the payload rate the model carried between two hosts
	// per second of wall time when measured, bits/s: above LinkRate the
	// model keeps up with its links in real time.
	ModelRate float64
	// EventRate is the model's events per second of wall time measured.
	EventRate float64
	// Measured is the wall time the measurement took.
	Measured time.Duration
}

// CPUBound reports whether the model, not the link, limits throughput.
func (b Bound) CPUBound() bool { return b.ModelRate < float64(b.LinkRate) }

// String says which bound applies, with both rates.
func (b Bound) String() string {
	what := "the link rate (the model runs faster than real time here)"
	if b.CPUBound() {
		what = "this machine's CPU (the model cannot follow its links in real time here)"
	}
	return fmt.Sprintf("throughput bound: %s; link data rate %.1f Gb/s, model carries %.1f Gb/s host to host in real time (%.2f M events/s, measured in %v at start)",
		what, float64(b.LinkRate)/1e9, b.ModelRate/1e9, b.EventRate/1e6, b.Measured.Round(time.Millisecond))
}

// calibrationMessage is the message the measurement sends: a TCP
// super-frame from a TAP with offloads.
const calibrationMessage = 64 * 1024

// MeasureBound runs a throwaway copy of the model for at most budget of
// wall time: a window of four 64 KB messages (as admit_bytes lets in)
// kept in flight from the first host to the last, no background load.
// Its rate of delivered payload per wall second is what the model can
// carry in real time on this machine, now.
func MeasureBound(model simmodel.SimConfig, budget time.Duration) (Bound, error) {
	b := Bound{LinkRate: model.Fabric.DataRate()}
	sess, err := newSession(model, &arrivals{})
	if err != nil {
		return b, err
	}
	n := sess.Topo.NumHosts()
	if n < 2 {
		return b, fmt.Errorf("the fabric has %d hosts", n)
	}
	var delivered int64
	var send func(at des.Time)
	done := func(m *nic.Message, at des.Time) {
		delivered += m.Bytes
		send(at)
	}
	send = func(at des.Time) {
		m := sess.Net.NewMessage()
		m.Src, m.Dst, m.Bytes, m.Gen, m.Done = 0, n-1, calibrationMessage, at, done
		sess.Net.Send(m)
	}
	for range 4 {
		send(0)
	}
	start := time.Now()
	fired0 := sess.Eng.Fired()
	step := 50 * des.Microsecond
	for until := step; time.Since(start) < budget; until += step {
		sess.Eng.RunUntil(until)
	}
	b.Measured = time.Since(start)
	sec := b.Measured.Seconds()
	b.ModelRate = float64(delivered) * 8 / sec
	b.EventRate = float64(sess.Eng.Fired()-fired0) / sec
	return b, nil
}
