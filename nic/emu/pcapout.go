package emu

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/workload/replay"
)

// PcapOutQueue is the recorder's queue in frames: past it, frames are
// counted as overflow and not recorded, so the frame path never waits.
const PcapOutQueue = 4096

// PcapOutStatus is the pcapng recording of the frames written to the TAPs.
type PcapOutStatus struct {
	File     string `json:"file"`
	Written  uint64 `json:"written"`
	Overflow uint64 `json:"overflow"`
	Error    string `json:"error,omitempty"`
}

// pcapRec is one frame for the recorder.
type pcapRec struct {
	iface   int
	at      time.Time
	data    []byte
	comment string
}

// pcapRecorder writes the frames the daemon writes to its TAPs as pcapng,
// on a goroutine of its own fed through a bounded queue.
type pcapRecorder struct {
	name     string
	q        chan pcapRec
	done     chan struct{}
	closed   sync.Once
	written  atomic.Uint64
	overflow atomic.Uint64
	mu       sync.Mutex
	err      error
}

// RecordPcap makes the emulator record every frame it writes to a TAP, as
// pcapng to w (one interface per TAP, the fabric's metadata in each
// packet's comment); name names w in errors and the status. Call it before
// Start; Close flushes the recording (the caller then closes w).
func (e *Emulator) RecordPcap(w io.Writer, name string) error {
	if e.start != (time.Time{}) {
		return errors.New("pcap_out: the emulator is already running")
	}
	fw, err := replay.NewFrameWriter(w, name, "fabemu run", e.Devices())
	if err != nil {
		return err
	}
	r := &pcapRecorder{name: name, q: make(chan pcapRec, PcapOutQueue), done: make(chan struct{})}
	go r.run(fw)
	e.pcap = r
	return nil
}

func (r *pcapRecorder) run(fw *replay.FrameWriter) {
	defer close(r.done)
	var err error
	for rec := range r.q {
		if err != nil {
			continue // drain; the error is reported
		}
		if err = fw.WriteFrame(rec.iface, rec.at, rec.data, rec.comment); err == nil {
			r.written.Add(1)
		}
	}
	if err == nil {
		err = fw.Flush()
	}
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// record queues a frame written to port q (loop goroutine); a full queue
// counts it as overflow.
func (r *pcapRecorder) record(q *port, at time.Time, data []byte, comment string) {
	select {
	case r.q <- pcapRec{iface: q.idx, at: at, data: append([]byte(nil), data...), comment: comment}:
	default:
		r.overflow.Add(1)
	}
}

// close stops the recorder once the loop is over and returns its error.
func (r *pcapRecorder) close() error {
	r.closed.Do(func() { close(r.q) })
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *pcapRecorder) status() *PcapOutStatus {
	st := &PcapOutStatus{File: r.name, Written: r.written.Load(), Overflow: r.overflow.Load()}
	r.mu.Lock()
	if r.err != nil {
		st.Error = r.err.Error()
	}
	r.mu.Unlock()
	return st
}

// pcapComment is the fabric's metadata of a frame written to q.
func pcapComment(tag *copyTag, latencyPs int64, reordered bool) string {
	b := make([]byte, 0, 128)
	b = append(b, "fabemu: "...)
	b = append(b, tag.ref.src.cfg.Name...)
	b = append(b, " > "...)
	b = append(b, tag.dst.cfg.Name...)
	b = append(b, ", latency "...)
	b = strconv.AppendFloat(b, float64(latencyPs)/1000, 'f', -1, 64)
	b = append(b, " ns, frame "...)
	b = strconv.AppendUint(b, tag.seq, 10)
	if reordered {
		b = append(b, " reordered in its stream"...)
	} else {
		b = append(b, " in order in its stream"...)
	}
	return string(b)
}
