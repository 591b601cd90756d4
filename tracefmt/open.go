package tracefmt

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// decoder is what each format implements; reader wraps it with order
// checking, the sort window and Close.
type decoder interface {
	// next decodes the next record into rec or returns io.EOF or an error.
	next(rec *Record) error
	// deviceName names a Device index ("" if the decoder has no name).
	deviceName(dev uint32) string
}

// bufSize is the read buffer of every reader. Lines longer than this are
// rejected by the text readers.
const bufSize = 256 << 10

// Open opens a trace file. Compressed files (gzip, bzip2) are recognised by
// their magic bytes and decompressed on the fly. If path is a directory,
// every regular file in it is read as one SRT trace, merged in time order
// (see OpenFiles).
func Open(path string, f Format, opts Options) (Reader, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		var paths []string
		for _, e := range ents {
			if e.Type().IsRegular() && e.Name()[0] != '.' {
				paths = append(paths, filepath.Join(path, e.Name()))
			}
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("%s: directory holds no trace files", path)
		}
		return OpenFiles(paths, f, opts)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(fh, path, f, opts)
	if err != nil {
		fh.Close()
		return nil, err
	}
	r.(*reader).closers = append(r.(*reader).closers, fh)
	return r, nil
}

// maxSRTShift bounds the tracedates of the SRT files merged as one trace:
// the latest starts at most this long after the earliest, so that every
// shifted arrival fits the replay's picosecond clock (about 106 days).
const maxSRTShift = 100 * 24 * time.Hour

// OpenFiles reads several SRT files as one trace, as DiskSim's hplcomb
// combines the files of one day: each file's times are shifted by its
// header tracedate minus the earliest tracedate, and the files' records are
// merged in arrival order (ties go to the file with the earlier tracedate,
// then the earlier name). Only the SRT format can be merged, because only
// SRT carries an absolute start time per file; one path is the same as Open.
func OpenFiles(paths []string, f Format, opts Options) (Reader, error) {
	if len(paths) == 1 {
		return Open(paths[0], f, opts)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no trace files given")
	}
	if f != SRT && f != Auto {
		return nil, fmt.Errorf("several files can be merged only in the srt format, not %s", f)
	}
	m := &mergeDecoder{}
	var closers []io.Closer
	fail := func(err error) (Reader, error) {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	var seen []os.FileInfo // one file given twice would count its records twice
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			return fail(err)
		}
		if fi, err := fh.Stat(); err == nil {
			for i, s := range seen {
				if os.SameFile(fi, s) {
					fh.Close()
					return fail(&ParseError{File: p, Msg: fmt.Sprintf("the same file as %s, given before: its records would be counted twice", paths[i])})
				}
			}
			seen = append(seen, fi)
		}
		closers = append(closers, fh)
		br, err := decompress(fh, p, &closers)
		if err != nil {
			return fail(err)
		}
		if g := sniff(peek(br)); g != SRT {
			return fail(&ParseError{File: p, Msg: "not an SRT file (no $$TR_IOREC header); only SRT files can be merged"})
		}
		d, err := newSRTDecoder(br, p)
		if err != nil {
			return fail(err)
		}
		if !d.hasDate {
			return fail(&ParseError{File: p, Msg: "header has no tracedate, so the file cannot be placed in time among the others"})
		}
		m.files = append(m.files, d)
	}
	sort.SliceStable(m.files, func(i, j int) bool {
		a, b := m.files[i], m.files[j]
		if !a.tracedate.Equal(b.tracedate) {
			return a.tracedate.Before(b.tracedate)
		}
		return a.name < b.name
	})
	base := m.files[0].tracedate
	for _, d := range m.files {
		// Sub saturates at 292 years and the replay's picoseconds hold
		// 106 days: a far tracedate (year 9999) made every arrival of the
		// file wrap to -9223372036 s. The files of one trace lie within
		// days of each other (hplcomb merges one day's).
		if shift := d.tracedate.Sub(base); shift > maxSRTShift {
			return fail(&ParseError{File: d.name, Msg: fmt.Sprintf("header tracedate %s is %.0f days after that of %s (%s): the files merged as one trace must start within %.0f days of each other",
				d.tracedate.Format(time.DateTime), float64(d.tracedate.Unix()-base.Unix())/86400, m.files[0].name, base.Format(time.DateTime), maxSRTShift.Hours()/24)})
		}
		d.shift = d.tracedate.Sub(base)
	}
	return &reader{dec: m, format: SRT, name: paths[0], opts: opts, closers: closers}, nil
}

// NewReader reads a trace from r; name is used in error messages. With
// Format Auto the format is sniffed from the first bytes. gzip and bzip2
// input is decompressed transparently.
func NewReader(r io.Reader, name string, f Format, opts Options) (Reader, error) {
	var closers []io.Closer
	br, err := decompress(r, name, &closers)
	if err != nil {
		return nil, err
	}
	if f == Auto || f == "" {
		head := peek(br)
		if len(head) == 0 {
			return nil, &ParseError{File: name, Msg: "empty: nothing to read (an empty file, or a pipe closed before writing)"}
		}
		f = sniff(head)
		if f == "" {
			return nil, &ParseError{File: name, Msg: ErrUnknownFormat.Error() + " (use --format; known: srt, msr, spc, blkparse, fio, disksim, csv, pcap, pcapng)"}
		}
	}
	if IsCapture(f) {
		for _, c := range closers {
			c.Close()
		}
		return nil, &captureError{file: name, format: f}
	}
	var d decoder
	switch f {
	case SRT:
		d, err = newSRTDecoder(br, name)
	case MSR:
		d = newMSRDecoder(br, name)
	case SPC:
		d = newSPCDecoder(br, name, opts)
	case Blkparse:
		d, err = newBlkparseDecoder(br, name, opts)
	case Fio:
		d, err = newFioDecoder(br, name)
	case DiskSim:
		d = newDiskSimDecoder(br, name)
	case CSV:
		d = newCSVDecoder(br, name)
	default:
		err = fmt.Errorf("%s: unknown trace format %q", name, f)
	}
	if err != nil {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	return &reader{dec: d, format: f, name: name, opts: opts, closers: closers}, nil
}

// captureError is NewReader's refusal of a packet capture.
type captureError struct {
	file   string
	format Format
}

func (e *captureError) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.file, ErrCapture, e.format)
}

func (e *captureError) Unwrap() error { return ErrCapture }

// Decompress returns r's content, buffered and, when it starts with the
// gzip or bzip2 magic, decompressed; name is used in error messages. The
// Closer releases the decompressor (not r). Readers of other packages (the
// packet captures of tracefmt/pcap) use it to accept what Open accepts.
func Decompress(r io.Reader, name string) (*bufio.Reader, io.Closer, error) {
	var closers []io.Closer
	br, err := decompress(r, name, &closers)
	if err != nil {
		return nil, nil, err
	}
	return br, closeAll(closers), nil
}

type closeAll []io.Closer

func (c closeAll) Close() error {
	var first error
	for i := len(c) - 1; i >= 0; i-- {
		if err := c[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// decompress wraps r in a buffered reader, decompressing gzip or bzip2.
func decompress(r io.Reader, name string, closers *[]io.Closer) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, bufSize)
	head, _ := br.Peek(3)
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &ParseError{File: name, Msg: "bad gzip header: " + err.Error()}
		}
		*closers = append(*closers, zr)
		return bufio.NewReaderSize(zr, bufSize), nil
	case len(head) == 3 && string(head) == "BZh":
		return bufio.NewReaderSize(bzip2.NewReader(br), bufSize), nil
	}
	return br, nil
}

func peek(br *bufio.Reader) []byte {
	b, _ := br.Peek(4096)
	return b
}

// Sniff guesses the format of a trace from its first bytes (after
// decompression). It returns "" when it cannot tell.
func Sniff(head []byte) Format { return sniff(head) }

func sniff(head []byte) Format {
	if bytes.HasPrefix(head, []byte("$$TR_IOREC")) {
		return SRT
	}
	if len(head) >= 4 {
		switch string(head[:4]) {
		// pcap: microsecond and nanosecond magic, either byte order
		case "\xa1\xb2\xc3\xd4", "\xd4\xc3\xb2\xa1", "\xa1\xb2\x3c\x4d", "\x4d\x3c\xb2\xa1":
			return Pcap
		case "\x0a\x0d\x0d\x0a": // pcapng Section Header Block, a palindrome
			return Pcapng
		}
	}
	if bytes.HasPrefix(head, []byte("fio version ")) {
		return Fio
	}
	// Look at the first non-empty, non-comment line.
	rest := head
	for len(rest) > 0 {
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if bytes.Equal(line, []byte(csvHeader)) {
			return CSV
		}
		if bytes.IndexByte(line, ',') >= 0 && bytes.IndexByte(line, ' ') < 0 && bytes.IndexByte(line, '\t') < 0 || looksSPC(line) {
			var fs [16][]byte
			f := splitComma(line, fs[:0])
			if len(f) == 7 && (eqFold(f[3], "read") || eqFold(f[3], "write")) {
				return MSR
			}
			if len(f) >= 5 && len(f[3]) == 1 && (eqFold(f[3], "r") || eqFold(f[3], "w")) {
				return SPC
			}
			return ""
		}
		var fs [16][]byte
		f := splitSpace(line, fs[:0])
		if len(f) >= 6 && bytes.IndexByte(f[0], ',') > 0 {
			return Blkparse
		}
		if len(f) == 5 {
			return DiskSim
		}
		return ""
	}
	return ""
}

// looksSPC accepts SPC lines with blanks after commas.
func looksSPC(line []byte) bool {
	return bytes.Count(line, []byte(",")) >= 4 && bytes.IndexByte(line, ' ') > bytes.IndexByte(line, ',')
}

// reader wraps a decoder with the order check, the optional sort window,
// device naming and Close.
type reader struct {
	dec     decoder
	format  Format
	name    string
	opts    Options
	closers []io.Closer

	scratch Record
	heap    []heapItem // sort window, a binary min-heap
	seq     uint64
	decEOF  bool
	emitted int64
	last    time.Duration
	order   OrderReport
}

type heapItem struct {
	rec Record
	seq uint64
}

func (r *reader) Format() Format { return r.format }

func (r *reader) Order() OrderReport { return r.order }

func (r *reader) DeviceName(dev uint32) string { return r.dec.deviceName(dev) }

func (r *reader) Close() error {
	var first error
	for i := len(r.closers) - 1; i >= 0; i-- {
		if err := r.closers[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	return first
}

func (r *reader) Next() (Record, error) {
	// r.scratch, not a local: a pointer passed through the decoder
	// interface escapes, and a local would then be allocated per record.
	var rec Record
	if r.opts.SortWindow <= 0 {
		if err := r.dec.next(&r.scratch); err != nil {
			return Record{}, err
		}
		rec = r.scratch
	} else {
		for !r.decEOF && len(r.heap) < r.opts.SortWindow {
			if err := r.dec.next(&r.scratch); err != nil {
				if err == io.EOF {
					r.decEOF = true
					break
				}
				return Record{}, err
			}
			r.push(heapItem{r.scratch, r.seq})
			r.seq++
		}
		if len(r.heap) == 0 {
			return Record{}, io.EOF
		}
		rec = r.pop().rec
	}
	r.emitted++
	if r.emitted > 1 && rec.Arrival < r.last {
		back := r.last - rec.Arrival
		if r.order.Inversions == 0 {
			r.order.FirstRecord = r.emitted
		}
		r.order.Inversions++
		if back > r.order.MaxBackstep {
			r.order.MaxBackstep = back
		}
		if r.opts.RejectOutOfOrder {
			return Record{}, &ParseError{File: r.name, Msg: fmt.Sprintf(
				"record %d arrives at %v, %v before its predecessor (out of order; try a sort window)",
				r.emitted, rec.Arrival, back)}
		}
	} else {
		r.last = rec.Arrival
	}
	return rec, nil
}

func less(a, b heapItem) bool {
	if a.rec.Arrival != b.rec.Arrival {
		return a.rec.Arrival < b.rec.Arrival
	}
	return a.seq < b.seq
}

func (r *reader) push(it heapItem) {
	h := append(r.heap, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	r.heap = h
}

func (r *reader) pop() heapItem {
	h := r.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if rr := l + 1; rr < n && less(h[rr], h[l]) {
			m = rr
		}
		if !less(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	r.heap = h
	return top
}
