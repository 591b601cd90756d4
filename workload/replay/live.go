package replay

import (
	"fmt"

	"github.com/fabemu/fabemu/internal/rng"
	"github.com/fabemu/fabemu/model"
	"github.com/fabemu/fabemu/tracefmt"
)

// LiveProgress is how far a live replay (StartLive) has got.
type LiveProgress struct {
	Trace       string `json:"trace"`
	Issued      uint64 `json:"requests_issued"`
	Completed   uint64 `json:"requests_completed"`
	Outstanding int    `json:"outstanding"`
	IssuedBytes int64  `json:"issued_bytes"`
	LateRecords uint64 `json:"late_records"`
	// ReadStalls counts the times the model found the read-ahead queue
	// empty and waited for the trace file (the disk could not keep up).
	ReadStalls uint64 `json:"read_stalls"`
	AllIssued  bool   `json:"all_issued"`
	Finished   bool   `json:"finished"`
	Error      string `json:"error,omitempty"`
}

// Live is a block-I/O trace replayed on an engine someone else runs (the
// daemon's pacer): the mapping and request/reply driver of RunReplay, on
// a subset of the hosts, never stopping the engine.
type Live struct {
	r  *replayer
	pf *readAhead
}

// StartLive opens the trace of c, places its disks and initiators on
// hosts (as replay.disks, disk_hosts and initiator_hosts say, seeded by
// seed) and schedules its first arrival on s's engine, trace time zero at
// the engine's present. Every later call, including Progress, must be made
// on the goroutine that runs the engine. Records are read ahead on a
// goroutine of their own (readAhead), so the engine's goroutine does no file
// I/O unless the disk falls behind the trace's rate.
func StartLive(s *model.Session, c ReplayConfig, seed uint64, hosts []int) (*Live, error) {
	num, err := compressionNum(c.Compression)
	if err != nil {
		return nil, err
	}
	if len(hosts) < 2 {
		return nil, fmt.Errorf("replay: %d hosts to replay on; a trace needs a disk and an initiator", len(hosts))
	}
	disks, inits, err := placeHosts(c, seed, hosts)
	if err != nil {
		return nil, err
	}
	rd, _, err := c.OpenTrace()
	if err != nil {
		return nil, err
	}
	pf := newReadAhead(rd, 64, 256)
	r := &replayer{s: s, eng: s.Eng, nw: s.Net, cfg: c, num: num, rd: pf, win: window{cfg: c},
		disks: disks, inits: inits, devIdx: map[uint32]int{}, initIdx: map[uint32]int{},
		rnd: rng.Stream(seed, "replay.initiators", 0), binWidth: s.Metrics.BinWidth, live: true}
	r.doneFn = r.onDone
	base := s.Eng.Now()
	r.lastAt = base
	l := &Live{r: r, pf: pf}
	r.liveBase = base
	r.advance()
	return l, nil
}

// Progress reports the replay so far (engine goroutine only).
func (l *Live) Progress() LiveProgress {
	r := l.r
	p := LiveProgress{Trace: r.cfg.TraceName(), Issued: r.issued, Completed: r.completed, Outstanding: r.outstanding,
		IssuedBytes: r.issuedBytes, LateRecords: r.lateRecords(), ReadStalls: l.pf.stalls,
		AllIssued: r.allIssued, Finished: r.finished}
	if r.err != nil {
		p.Error = r.err.Error()
	}
	return p
}

// Close stops the read-ahead and closes the trace.
func (l *Live) Close() error { return l.pf.Close() }

// readAhead is a tracefmt.Reader that reads its source on a goroutine of
// its own into a bounded queue of batches: the consumer (the model's
// goroutine) takes records from memory and blocks only when the queue is
// empty, which it counts as a stall. The record sequence is the source's,
// so the model stays deterministic whatever the timing.
type readAhead struct {
	src    tracefmt.Reader
	q      chan raBatch
	stop   chan struct{}
	done   chan struct{}
	cur    raBatch
	i      int
	stalls uint64
}

type raBatch struct {
	recs []tracefmt.Record
	err  error // after recs: io.EOF or the read error
}

func newReadAhead(src tracefmt.Reader, batches, per int) *readAhead {
	a := &readAhead{src: src, q: make(chan raBatch, batches), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run(per)
	return a
}

func (a *readAhead) run(per int) {
	defer close(a.done)
	for {
		b := raBatch{recs: make([]tracefmt.Record, 0, per)}
		for len(b.recs) < per {
			rec, err := a.src.Next()
			if err != nil {
				b.err = err
				break
			}
			b.recs = append(b.recs, rec)
		}
		select {
		case a.q <- b:
		case <-a.stop:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// Next implements tracefmt.Reader.
func (a *readAhead) Next() (tracefmt.Record, error) {
	for a.i >= len(a.cur.recs) {
		if a.cur.err != nil {
			return tracefmt.Record{}, a.cur.err
		}
		select {
		case a.cur = <-a.q:
		default:
			a.stalls++
			a.cur = <-a.q
		}
		a.i = 0
	}
	rec := a.cur.recs[a.i]
	a.i++
	return rec, nil
}

// Close implements tracefmt.Reader.
func (a *readAhead) Close() error {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	<-a.done
	return a.src.Close()
}

// Format implements tracefmt.Reader.
func (a *readAhead) Format() tracefmt.Format { return a.src.Format() }

var _ tracefmt.Reader = (*readAhead)(nil)
