package tracefmt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// HP SRT layout. References: DiskSim 4.0 disksim_iotrace.c and
// disksim_hptrace.h (SRTlite constants), DataSeries srt2ds.cpp (fields per
// record version, devno split); restated with test vectors in the project's
// trace-format reference, §1.
const (
	srtMaxHeader  = 1 << 20 // header must end (form feed) within this
	srtMaxRecord  = 4096    // largest size word accepted
	srtTypeShort  = 1       // ShortIO
	srtTypeSusp   = 4       // SuspectIO, dropped as DiskSim does
	srtFlagRead   = 0x00000001
	srtFlagDone   = 0x00000002
	srtFlagAsync  = 0x00000100
	srtShortV1to3 = 52 // 13 words
	srtShortV4    = 56 // + queuelen
)

// srtDecoder reads one SRT file.
type srtDecoder struct {
	name string
	br   *bufio.Reader
	off  int64 // byte offset of the next record
	nrec int   // records framed so far (all types)

	header     string
	tracedate  time.Time
	hasDate    bool
	shift      time.Duration    // added to every arrival (multi-file merge)
	sectorSize map[uint32]int64 // header disk number -> sector bytes
	common     int64            // sector size when all disks agree, else 512
	suspect    int64            // SuspectIO records dropped
	skipped    int64            // other non-ShortIO records skipped
}

func newSRTDecoder(br *bufio.Reader, name string) (*srtDecoder, error) {
	d := &srtDecoder{name: name, br: br, common: 512}
	hdr, err := br.ReadSlice(0x0C)
	for errors.Is(err, bufio.ErrBufferFull) && len(d.header)+len(hdr) < srtMaxHeader {
		d.header += string(hdr)
		hdr, err = br.ReadSlice(0x0C)
	}
	d.header += string(hdr)
	if !strings.HasPrefix(d.header, "$$TR_IOREC") {
		return nil, &ParseError{File: name, Msg: "bad SRT header: does not start with \"$$TR_IOREC\""}
	}
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, &ParseError{File: name, Msg: fmt.Sprintf("bad SRT header: no form feed (0x0C) ending it within %d bytes", srtMaxHeader)}
		}
		return nil, &ParseError{File: name, Msg: "bad SRT header: file ends before the form feed (0x0C) that ends the header"}
	}
	d.off = int64(len(d.header))
	d.parseHeader()
	return d, nil
}

// parseHeader extracts tracedate and the per-disk sector sizes. Both header
// styles are accepted: 1992 `tracedate = "Sat May 30 00:03:06 1992";` and
// 1996-2003 `tracedate = Sun May 18 11:04:05 2003`. The date is a US
// Pacific wall-clock time; it is kept as that wall clock read as UTC, which
// is all that is needed to place files of one trace relative to each other.
func (d *srtDecoder) parseHeader() {
	for _, line := range strings.Split(d.header, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "tracedate" {
			continue
		}
		v = strings.TrimSpace(v)
		v = strings.TrimSuffix(v, ";")
		v = strings.Trim(strings.TrimSpace(v), "\"")
		v = strings.Join(strings.Fields(v), " ")
		if t, err := time.Parse("Mon Jan 2 15:04:05 2006", v); err == nil {
			d.tracedate, d.hasDate = t, true
		}
		break
	}
	d.sectorSize = map[uint32]int64{}
	i := strings.Index(d.header, "disks")
	if i < 0 {
		return
	}
	toks := srtTokens(d.header[i+len("disks"):])
	// disks = { N -> { ... sectorsize = S, ... }, ... }
	depth, disk := 0, int64(-1)
	for j := 0; j < len(toks); j++ {
		switch t := toks[j]; t {
		case "{":
			depth++
		case "}":
			depth--
			if depth == 0 {
				j = len(toks)
			}
		default:
			if depth == 1 && j+2 < len(toks) && toks[j+1] == "->" && toks[j+2] == "{" {
				if n, err := strconv.ParseInt(t, 10, 32); err == nil {
					disk = n
				}
			}
			if depth == 2 && t == "sectorsize" && disk >= 0 && j+2 < len(toks) && toks[j+1] == "=" {
				if n, err := strconv.ParseInt(toks[j+2], 10, 32); err == nil && n > 0 && n <= 1<<20 {
					d.sectorSize[uint32(disk)] = n
				}
			}
		}
	}
	var common int64
	for _, s := range d.sectorSize {
		if common == 0 {
			common = s
		} else if s != common {
			common = -1
		}
	}
	if common > 0 {
		d.common = common
	}
}

// srtTokens splits header text into words, numbers, quoted strings and the
// punctuation { } = -> , ; ( ).
func srtTokens(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0 || c == 0x0C:
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '>':
			out = append(out, "->")
			i += 2
		case strings.IndexByte("{}=,;()", c) >= 0:
			out = append(out, s[i:i+1])
			i++
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return out
			}
			out = append(out, s[i:i+j+2])
			i += j + 2
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\n\r{}=,;()\"\x00\x0c", s[j]) < 0 && !(s[j] == '-' && j+1 < len(s) && s[j+1] == '>') {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

func (d *srtDecoder) errf(off int64, format string, args ...any) error {
	return &ParseError{File: d.name, Record: d.nrec, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (d *srtDecoder) deviceName(dev uint32) string {
	unit, ctl, hi := dev&0xF, (dev>>4)&0xF, dev>>8
	if hi == 0 && ctl == 0 {
		return fmt.Sprintf("disk unit %d", unit)
	}
	return fmt.Sprintf("minor 0x%02x controller %d disk unit %d", hi, ctl, unit)
}

func (d *srtDecoder) sector(dev uint32) int64 {
	if s, ok := d.sectorSize[dev]; ok {
		return s
	}
	return d.common
}

func (d *srtDecoder) next(rec *Record) error {
	be := binary.BigEndian
	for {
		off := d.off
		// Peek/Discard decode straight from the bufio buffer, no copy.
		hdr, err := d.br.Peek(8)
		if err != nil {
			if err == io.EOF && len(hdr) == 0 {
				return io.EOF
			}
			d.nrec++
			if err == io.EOF {
				return d.errf(off, "truncated record header: file ends %d bytes into the 8-byte size/id words", len(hdr))
			}
			return d.errf(off, "%v", err)
		}
		d.nrec++
		size, id := be.Uint32(hdr[0:]), be.Uint32(hdr[4:])
		version, typ := id>>16, id&0xFFFF
		switch {
		case size < 8:
			return d.errf(off, "size word %d is smaller than the 8-byte size/id header", size)
		case size%4 != 0:
			return d.errf(off, "size word %d is not a multiple of 4", size)
		case size > srtMaxRecord:
			return d.errf(off, "size word %d exceeds the %d-byte limit (corrupt framing?)", size, srtMaxRecord)
		case version < 1 || version > 7:
			return d.errf(off, "record version %d outside 1..7 (id word 0x%08x)", version, id)
		}
		b, err := d.br.Peek(int(size))
		if err != nil {
			if err == io.EOF {
				return d.errf(off, "truncated record: size word says %d bytes, file ends after %d", size, len(b))
			}
			return d.errf(off, "%v", err)
		}
		d.br.Discard(int(size))
		d.off += int64(size)
		if typ != srtTypeShort {
			if typ == srtTypeSusp {
				d.suspect++
			} else {
				d.skipped++
			}
			continue
		}
		if version == 7 {
			if size < 72 {
				return d.errf(off, "version 7 ShortIO record of %d bytes is shorter than the 72 bytes that hold its disk offset", size)
			}
		} else if size < srtShortV1to3 {
			return d.errf(off, "version %d ShortIO record of %d bytes is shorter than the %d bytes of its fixed fields", version, size, srtShortV1to3)
		}
		sec, usec := be.Uint32(b[8:]), be.Uint32(b[12:])
		start, stop := be.Uint32(b[16:]), be.Uint32(b[20:])
		nbytes := be.Uint32(b[24:])
		devno := be.Uint32(b[32:])
		flags := be.Uint32(b[44:])
		if usec >= 1000000 {
			return d.errf(off, "microseconds field %d is not below 1000000", usec)
		}
		if nbytes > 1<<31-1 {
			return d.errf(off, "transfer length %d bytes does not fit in 31 bits", nbytes)
		}
		dev := (devno >> 8) & 0xFFFF
		*rec = Record{
			Device: dev,
			Size:   int32(nbytes),
			Op:     OpWrite,
			Sync:   flags&srtFlagAsync == 0,
		}
		if flags&srtFlagRead != 0 {
			rec.Op = OpRead
		}
		if stop >= start {
			rec.Service = time.Duration(stop-start) * time.Microsecond
			rec.HasService = true
		}
		if version == 7 {
			// absolute Unix time; see the reference §1.7
			rec.Arrival = time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
			o := be.Uint64(b[64:])
			if o > 1<<62 {
				return d.errf(off, "disk offset %d out of range", o)
			}
			rec.Offset = int64(o)
			if size >= 60 {
				rec.Initiator = be.Uint32(b[56:])
			}
			return nil
		}
		rec.Arrival = d.shift + time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
		rec.Offset = int64(be.Uint32(b[28:])) * d.sector(dev)
		if version >= 5 && size >= 60 {
			rec.Initiator = be.Uint32(b[56:])
		}
		return nil
	}
}

// mergeDecoder merges several SRT files by arrival time.
type mergeDecoder struct {
	files []*srtDecoder
	heads []mergeHead // one per live file, a min-heap
	init  bool
}

type mergeHead struct {
	rec  Record
	file int
}

func (m *mergeDecoder) deviceName(dev uint32) string { return m.files[0].deviceName(dev) }

func (m *mergeDecoder) lessHead(a, b mergeHead) bool {
	if a.rec.Arrival != b.rec.Arrival {
		return a.rec.Arrival < b.rec.Arrival
	}
	return a.file < b.file
}

func (m *mergeDecoder) down(i int) {
	h := m.heads
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && m.lessHead(h[r], h[l]) {
			c = r
		}
		if !m.lessHead(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

func (m *mergeDecoder) next(rec *Record) error {
	if !m.init {
		m.init = true
		for i, f := range m.files {
			var r Record
			err := f.next(&r)
			if err == io.EOF {
				continue
			}
			if err != nil {
				return err
			}
			m.heads = append(m.heads, mergeHead{r, i})
		}
		for i := len(m.heads)/2 - 1; i >= 0; i-- {
			m.down(i)
		}
	}
	if len(m.heads) == 0 {
		return io.EOF
	}
	*rec = m.heads[0].rec
	f := m.heads[0].file
	err := m.files[f].next(&m.heads[0].rec)
	switch {
	case err == io.EOF:
		last := len(m.heads) - 1
		m.heads[0] = m.heads[last]
		m.heads = m.heads[:last]
	case err != nil:
		return err
	}
	m.down(0)
	return nil
}

// SRTHeader returns the header text of an SRT reader opened by this
// package (of the earliest file when several were merged) and whether r is
// one.
func SRTHeader(r Reader) (string, bool) {
	rd, ok := r.(*reader)
	if !ok {
		return "", false
	}
	switch d := rd.dec.(type) {
	case *srtDecoder:
		return d.header, true
	case *mergeDecoder:
		return d.files[0].header, true
	}
	return "", false
}

// SRTDropped reports how many SuspectIO and other non-ShortIO records an
// SRT reader has skipped so far.
func SRTDropped(r Reader) (suspect, other int64) {
	rd, ok := r.(*reader)
	if !ok {
		return 0, 0
	}
	switch d := rd.dec.(type) {
	case *srtDecoder:
		return d.suspect, d.skipped
	case *mergeDecoder:
		for _, f := range d.files {
			suspect += f.suspect
			other += f.skipped
		}
	}
	return suspect, other
}

// srtTracedateLayout writes tracedate in the 1992 quoted style.
const srtTracedateLayout = "Mon Jan _2 15:04:05 2006"
