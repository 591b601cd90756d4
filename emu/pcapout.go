package emu

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	simmodel "github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/workload/replay"
	"go.uber.org/zap"
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
	log      *zap.Logger
	// flushOut flushes the file the FrameWriter writes to, when it
	// buffers (an outfile.File does).
	flushOut func() error
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
	r := &pcapRecorder{name: name, q: make(chan pcapRec, PcapOutQueue), done: make(chan struct{}), log: e.log}
	if f, ok := w.(interface{ Flush() error }); ok {
		r.flushOut = f.Flush
	}
	go r.run(fw)
	e.pcap = r
	e.arrivals.on, e.arrivals.meta = true, map[*nic.Message]*frameMeta{}
	return nil
}

// run writes the queued frames. Whenever the queue runs empty it flushes
// them through to the file, so that a failing file (a full disk,
// /dev/full) is found within a batch of frames, logged and shown by
// fabemu stat at once, not at exit; written counts the frames flushed.
func (r *pcapRecorder) run(fw *replay.FrameWriter) {
	defer close(r.done)
	var err error
	var pending uint64
	flush := func() {
		if err == nil {
			err = fw.Flush()
		}
		if err == nil && r.flushOut != nil {
			err = r.flushOut()
		}
		if err == nil {
			r.written.Add(pending)
			pending = 0
			return
		}
		r.fail(err)
	}
	for rec := range r.q {
		if err != nil {
			continue // drain; the error is reported
		}
		if err = fw.WriteFrame(rec.iface, rec.at, rec.data, rec.comment); err != nil {
			r.fail(err)
			continue
		}
		pending++
		if len(r.q) == 0 {
			flush()
		}
	}
	flush()
}

// fail records the recorder's first error and logs it once.
func (r *pcapRecorder) fail(err error) {
	r.mu.Lock()
	first := r.err == nil
	if first {
		r.err = err
	}
	r.mu.Unlock()
	if first && r.log != nil {
		r.log.Error("pcap_out: recording stopped", zap.String("file", r.name), zap.Error(err),
			zap.Uint64("written", r.written.Load()))
	}
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
func pcapComment(tag *copyTag, latencyPs int64, mm frameMeta, reordered bool) string {
	b := make([]byte, 0, 128)
	b = append(b, "fabemu: "...)
	b = append(b, tag.ref.src.cfg.Name...)
	b = append(b, " > "...)
	b = append(b, tag.dst.cfg.Name...)
	b = append(b, ", latency "...)
	b = strconv.AppendFloat(b, float64(latencyPs)/1000, 'f', -1, 64)
	b = append(b, " ns, hops "...)
	b = strconv.AppendInt(b, int64(mm.maxHops), 10)
	b = append(b, ", vl "...)
	first := true
	for vl := 0; vl < 64; vl++ {
		if mm.lanes&(1<<uint(vl)) != 0 {
			if !first {
				b = append(b, '+')
			}
			b = strconv.AppendInt(b, int64(vl), 10)
			first = false
		}
	}
	if first {
		b = append(b, '-')
	}
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(mm.packets), 10)
	b = append(b, " packets, frame "...)
	b = strconv.AppendUint(b, tag.seq, 10)
	if reordered {
		b = append(b, " reordered in its stream"...)
	} else {
		b = append(b, " in order in its stream"...)
	}
	return string(b)
}

// frameMeta is what the fabric did to one frame copy's packets, gathered
// as they reach the destination NIC (before any rearrangement).
type frameMeta struct {
	packets int
	maxHops int16  // switches traversed, the most of any packet
	lanes   uint64 // virtual lanes of the last link, as a bit set
}

// arrivals is the NICs with a look at every packet reaching a destination
// NIC: while pcap_out records, it notes the hops and lanes of the packets
// of frame copies (loop goroutine only).
type arrivals struct {
	*nic.Network
	on   bool
	meta map[*nic.Message]*frameMeta
}

// The NICs' injection control still gates what deadlock recovery
// reinjects (paper 001 §3): the embedded Network's methods answer.
var _ fabric.RecoveryGate = (*arrivals)(nil)

// Deliver implements fabric.Endpoint.
func (a *arrivals) Deliver(h int, p *fabric.Packet, at des.Time) {
	if a.on {
		if m, ok := p.Ref.(*nic.Message); ok {
			if _, ok := m.Tag.(*copyTag); ok {
				mm := a.meta[m]
				if mm == nil {
					mm = &frameMeta{}
					a.meta[m] = mm
				}
				mm.packets++
				mm.maxHops = max(mm.maxHops, p.Hops)
				if p.VL >= 0 && p.VL < 64 {
					mm.lanes |= 1 << uint(p.VL)
				}
			}
		}
	}
	a.Network.Deliver(h, p, at)
}

// take returns and forgets a delivered message's metadata.
func (a *arrivals) take(m *nic.Message) frameMeta {
	mm := a.meta[m]
	if mm == nil {
		return frameMeta{}
	}
	delete(a.meta, m)
	return *mm
}

// newSession builds the model with ep between the fabric and the NICs.
func newSession(sc simmodel.SimConfig, ep *arrivals) (*simmodel.Session, error) {
	fc := sc.Fabric
	fc.Seed = sc.Run.Seed // randomised allocators draw from it
	return simmodel.NewSessionVia(sc.Topology, sc.Routing, fc, sc.NIC, 0, des.Never, des.Second,
		func(nw *nic.Network) fabric.Endpoint { ep.Network = nw; return ep })
}
