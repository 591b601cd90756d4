package tracefmt

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fabemu/fabemu/internal/outfile"
)

// Writer writes records in one format.
type Writer interface {
	// Write appends one record.
	Write(Record) error
	// Close flushes buffered output. For a writer from Create it then
	// makes the file appear, unless a Write failed: then the file is
	// discarded as by Abort and Close returns the first error.
	Close() error
	// Abort discards a file from Create (a previous file at the path is
	// left untouched), for when the records could not all be produced.
	// After Close it does nothing.
	Abort()
}

// Create creates a trace file in format f (one of WriterFormats). A path
// ending in ".gz" is gzip-compressed. The file is written as package
// outfile writes every output: to a temporary file renamed over path by a
// successful Close, so a failed conversion never leaves a truncated trace
// in place of a previous one; "-" is standard output.
func Create(path string, f Format) (Writer, error) {
	if strings.HasSuffix(path, ".bz2") {
		return nil, fmt.Errorf("%s: cannot write bzip2 (write .gz or uncompressed)", path)
	}
	if _, err := NewWriter(io.Discard, f); err != nil {
		return nil, err
	}
	out, err := outfile.Create(path, os.Stdout)
	if err != nil {
		return nil, err
	}
	var w io.Writer = out
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(out)
		w = zw
	}
	tw, _ := NewWriter(w, f)
	tw.(*writer).out = out
	tw.(*writer).zw = zw
	return tw, nil
}

// NewWriter writes records to w in format f. What each format keeps:
//
//   - csv: everything, exactly.
//   - disksim: arrival (to the nanosecond), device, offset and size in
//     512-byte blocks (rounded down and up), read/write, sync.
//   - srt: version 4 ShortIO records (DiskSim-compatible); arrival to the
//     microsecond, device (as devno with major 31), offset in 512-byte
//     sectors, size, read/write, sync (ASYNC flag), service (as stop with
//     start 0); not the initiator.
//   - spc: ASU=device, LBA in 512-byte blocks, size, read/write, arrival to
//     the microsecond.
//   - fio: a version 3 iolog; file names "devN", arrival to the
//     microsecond, offset, size, read/write.
func NewWriter(w io.Writer, f Format) (Writer, error) {
	wr := &writer{bw: bufio.NewWriterSize(w, 64<<10), format: f}
	switch f {
	case CSV:
		wr.bw.WriteString(csvHeader + "\n")
	case DiskSim, SPC:
	case SRT:
		wr.bw.WriteString("$$TR_IOREC-1.3 written by fabemu\n" +
			"version      = 1.3;\n" +
			"tracedate    = \"" + time.Unix(0, 0).UTC().Format(srtTracedateLayout) + "\";\n" +
			"description  = \"fabemu tracefmt; sectno in 512-byte sectors\";\n" +
			"\f")
	case Fio:
		wr.bw.WriteString("fio version 3 iolog\n")
		wr.seen = map[uint32]bool{}
	default:
		return nil, fmt.Errorf("no writer for trace format %q (writers: csv, disksim, srt, spc, fio)", f)
	}
	return wr, nil
}

type writer struct {
	bw     *bufio.Writer
	format Format
	out    *outfile.File // set by Create
	zw     *gzip.Writer  // set by Create for .gz
	err    error         // first Write error
	closed bool
	buf    []byte
	srt    [srtShortV4]byte
	seen   map[uint32]bool // fio: files added
	order  []uint32
	last   time.Duration
	n      int64
}

func (w *writer) Write(r Record) error {
	if w.err != nil {
		return w.err
	}
	if err := w.write(r); err != nil {
		w.err = err
		return err
	}
	return nil
}

func (w *writer) write(r Record) error {
	w.n++
	if r.Arrival < 0 {
		return fmt.Errorf("record %d: negative arrival %v", w.n, r.Arrival)
	}
	if r.Size < 0 || r.Offset < 0 {
		return fmt.Errorf("record %d: negative size or offset", w.n)
	}
	if r.Arrival > w.last {
		w.last = r.Arrival
	}
	b := w.buf[:0]
	switch w.format {
	case CSV:
		b = strconv.AppendInt(b, int64(r.Arrival), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(r.Initiator), 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, uint64(r.Device), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, r.Offset, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Size), 10)
		b = append(b, ',')
		b = append(b, r.Op.String()...)
		if r.Sync {
			b = append(b, ",1,"...)
		} else {
			b = append(b, ",0,"...)
		}
		if r.HasService {
			b = strconv.AppendInt(b, int64(r.Service), 10)
		}
		b = append(b, '\n')
	case DiskSim:
		b = appendFixed(b, r.Arrival, time.Millisecond, 6)
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(r.Device), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, r.Offset/512, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, (r.Offset%512+int64(r.Size)+511)/512, 10)
		flags := 0
		if r.Op == OpRead {
			flags |= disksimRead
		}
		if r.Sync {
			flags |= disksimSync
		} else {
			flags |= disksimAsync
		}
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(flags), 16)
		b = append(b, '\n')
	case SPC:
		b = strconv.AppendUint(b, uint64(r.Device), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, r.Offset/512, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Size), 10)
		b = append(b, ',')
		b = append(b, r.Op.String()...)
		b = append(b, ',')
		b = appendFixed(b, r.Arrival, time.Second, 6)
		b = append(b, '\n')
	case Fio:
		us := int64(r.Arrival / time.Microsecond)
		if !w.seen[r.Device] {
			w.seen[r.Device] = true
			w.order = append(w.order, r.Device)
			for _, a := range []string{"add", "open"} {
				b = strconv.AppendInt(b, us, 10)
				b = append(b, " dev"...)
				b = strconv.AppendUint(b, uint64(r.Device), 10)
				b = append(b, ' ')
				b = append(b, a...)
				b = append(b, '\n')
			}
		}
		b = strconv.AppendInt(b, us, 10)
		b = append(b, " dev"...)
		b = strconv.AppendUint(b, uint64(r.Device), 10)
		if r.Op == OpRead {
			b = append(b, " read "...)
		} else {
			b = append(b, " write "...)
		}
		b = strconv.AppendInt(b, r.Offset, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(r.Size), 10)
		b = append(b, '\n')
	case SRT:
		if err := w.putSRT(r); err != nil {
			return err
		}
		b = append(b, w.srt[:]...)
	}
	w.buf = b
	_, err := w.bw.Write(b)
	return err
}

func (w *writer) putSRT(r Record) error {
	sec := int64(r.Arrival / time.Second)
	if sec > math.MaxUint32 {
		return fmt.Errorf("record %d: arrival %v does not fit SRT's 32-bit seconds", w.n, r.Arrival)
	}
	if r.Offset/512 > math.MaxUint32 {
		return fmt.Errorf("record %d: offset %d is beyond SRT's 32-bit sector number", w.n, r.Offset)
	}
	if r.Device > 0xFFFF {
		return fmt.Errorf("record %d: device %d does not fit an SRT devno (max 65535)", w.n, r.Device)
	}
	svc := int64(r.Service / time.Microsecond)
	if !r.HasService {
		svc = 0
	}
	if svc > math.MaxUint32 {
		return fmt.Errorf("record %d: service %v does not fit SRT's 32-bit microseconds", w.n, r.Service)
	}
	flags := uint32(srtFlagDone)
	if r.Op == OpRead {
		flags |= srtFlagRead
	}
	if !r.Sync {
		flags |= srtFlagAsync
	}
	be := binary.BigEndian
	b := w.srt[:]
	words := [14]uint32{
		srtShortV4, 4<<16 | srtTypeShort,
		uint32(sec), uint32(r.Arrival % time.Second / time.Microsecond),
		0, uint32(svc),
		uint32(r.Size), uint32(r.Offset / 512),
		31<<24 | r.Device<<8, // sdisk major, device in minor bits 23-8
		0, 0, flags, 0, 0,
	}
	for i, v := range words {
		be.PutUint32(b[4*i:], v)
	}
	return nil
}

func (w *writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		w.abort()
		return w.err
	}
	if w.format == Fio {
		us := int64(w.last / time.Microsecond)
		for _, d := range w.order {
			fmt.Fprintf(w.bw, "%d dev%d close\n", us, d)
		}
	}
	err := w.bw.Flush()
	if w.zw != nil {
		if e := w.zw.Close(); e != nil && err == nil {
			err = e
		}
	}
	if w.out != nil {
		if err != nil {
			w.out.Abort()
		} else {
			err = w.out.Commit()
		}
	}
	w.err = err
	return err
}

func (w *writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.abort()
}

func (w *writer) abort() {
	if w.out != nil {
		w.out.Abort()
	}
}

// appendFixed appends d in units with the given number of decimals
// (truncating), e.g. 1.5 ms with unit ms and 6 decimals is "1.500000".
func appendFixed(b []byte, d time.Duration, unit time.Duration, decimals int) []byte {
	b = strconv.AppendInt(b, int64(d/unit), 10)
	frac := int64(d % unit)
	div := int64(unit)
	b = append(b, '.')
	for i := 0; i < decimals; i++ {
		div /= 10
		if div == 0 {
			b = append(b, '0')
			continue
		}
		b = append(b, byte('0'+frac/div))
		frac %= div
	}
	return b
}
