package tracefmt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"time"
)

// denseIDs assigns dense ids to names in order of first appearance.
type denseIDs struct {
	ids   map[string]uint32
	names []string
}

func (d *denseIDs) id(name []byte) uint32 {
	if id, ok := d.ids[string(name)]; ok {
		return id
	}
	if d.ids == nil {
		d.ids = map[string]uint32{}
	}
	id := uint32(len(d.names))
	d.ids[string(name)] = id
	d.names = append(d.names, string(name))
	return id
}

func (d *denseIDs) name(id uint32) string {
	if int(id) < len(d.names) {
		return d.names[id]
	}
	return ""
}

// checkSize converts a byte count to the Record's int32 size.
func checkSize(l *lineReader, v uint64, what string) (int32, error) {
	if v > math.MaxInt32 {
		return 0, l.errf("%s %d bytes does not fit in 31 bits", what, v)
	}
	return int32(v), nil
}

// checkOffset multiplies a block number by the block size, rejecting
// overflow.
func checkOffset(l *lineReader, blk uint64, unit int64) (int64, error) {
	if blk > uint64(math.MaxInt64/unit) {
		return 0, l.errf("block number %d overflows a 63-bit byte offset", blk)
	}
	return int64(blk) * unit, nil
}

// ---- SNIA MSR Cambridge ----

// filetimeUnixEpoch is 1970-01-01 in Windows FILETIME ticks (100 ns).
const filetimeUnixEpoch = 116444736000000000

type msrDecoder struct {
	l       lineReader
	hosts   denseIDs
	devices denseIDs
	key     []byte
}

func newMSRDecoder(br *bufio.Reader, name string) *msrDecoder {
	return &msrDecoder{l: lineReader{br: br, name: name}}
}

func (d *msrDecoder) deviceName(dev uint32) string { return d.devices.name(dev) }

// next parses "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"
// (no header row; times in FILETIME 100-ns ticks).
func (d *msrDecoder) next(rec *Record) error {
	for {
		line, err := d.l.next()
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var fs [8][]byte
		f := splitComma(line, fs[:0])
		if len(f) != 7 {
			return d.l.errf("want 7 comma-separated fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), got %d", len(f))
		}
		ts, ok := parseUint(f[0])
		if !ok {
			return d.l.errf("bad timestamp %s (want FILETIME ticks)", quote(f[0]))
		}
		if ts < filetimeUnixEpoch || (ts-filetimeUnixEpoch) > math.MaxInt64/100 {
			return d.l.errf("timestamp %d is outside 1970..2262", ts)
		}
		disk, ok := parseUint(f[2])
		if !ok || disk > math.MaxUint32 {
			return d.l.errf("bad disk number %s", quote(f[2]))
		}
		var op Op
		switch {
		case eqFold(f[3], "read"):
			op = OpRead
		case eqFold(f[3], "write"):
			op = OpWrite
		default:
			return d.l.errf("bad type %s (want Read or Write)", quote(f[3]))
		}
		offset, ok := parseUint(f[4])
		if !ok || offset > math.MaxInt64 {
			return d.l.errf("bad offset %s", quote(f[4]))
		}
		size, ok := parseUint(f[5])
		if !ok {
			return d.l.errf("bad size %s", quote(f[5]))
		}
		sz, err := checkSize(&d.l, size, "size")
		if err != nil {
			return err
		}
		resp, ok := parseUint(f[6])
		if !ok || resp > math.MaxInt64/100 {
			return d.l.errf("bad response time %s", quote(f[6]))
		}
		d.key = append(append(append(d.key[:0], f[1]...), '_'), f[2]...)
		*rec = Record{
			Arrival:    time.Duration(ts-filetimeUnixEpoch) * 100,
			Initiator:  d.hosts.id(f[1]),
			Device:     d.devices.id(d.key),
			Offset:     int64(offset),
			Size:       sz,
			Op:         op,
			Service:    time.Duration(resp) * 100,
			HasService: true,
		}
		return nil
	}
}

// ---- SPC ----

type spcDecoder struct {
	l     lineReader
	block int64
}

func newSPCDecoder(br *bufio.Reader, name string, o Options) *spcDecoder {
	b := o.SPCBlockSize
	if b <= 0 {
		b = 512
	}
	return &spcDecoder{l: lineReader{br: br, name: name}, block: b}
}

func (d *spcDecoder) deviceName(dev uint32) string { return fmt.Sprintf("ASU %d", dev) }

// next parses "ASU,LBA,Size,Opcode,Timestamp[,optional...]".
func (d *spcDecoder) next(rec *Record) error {
	for {
		line, err := d.l.next()
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var fs [16][]byte
		f := splitComma(line, fs[:0])
		if len(f) < 5 {
			return d.l.errf("want at least 5 comma-separated fields (ASU,LBA,Size,Opcode,Timestamp), got %d", len(f))
		}
		asu, ok := parseUint(f[0])
		if !ok || asu > math.MaxUint32 {
			return d.l.errf("bad ASU %s", quote(f[0]))
		}
		lba, ok := parseUint(f[1])
		if !ok {
			return d.l.errf("bad LBA %s", quote(f[1]))
		}
		off, err := checkOffset(&d.l, lba, d.block)
		if err != nil {
			return err
		}
		size, ok := parseUint(f[2])
		if !ok {
			return d.l.errf("bad size %s", quote(f[2]))
		}
		sz, err := checkSize(&d.l, size, "size")
		if err != nil {
			return err
		}
		var op Op
		switch {
		case eqFold(f[3], "r"):
			op = OpRead
		case eqFold(f[3], "w"):
			op = OpWrite
		default:
			return d.l.errf("bad opcode %s (want R or W)", quote(f[3]))
		}
		t, ok := parseTime(f[4], time.Second)
		if !ok {
			return d.l.errf("bad timestamp %s (want seconds like 0.551706)", quote(f[4]))
		}
		*rec = Record{Arrival: t, Device: uint32(asu), Offset: off, Size: sz, Op: op}
		return nil
	}
}

// ---- blkparse default output ----

type blkparseDecoder struct {
	l       lineReader
	action  byte
	devices denseIDs
	done    bool
}

func newBlkparseDecoder(br *bufio.Reader, name string, o Options) (*blkparseDecoder, error) {
	a := o.BlkparseAction
	if a == 0 {
		a = 'Q'
	}
	if a != 'Q' && a != 'D' {
		return nil, fmt.Errorf("%s: blkparse action must be Q or D, not %q", name, a)
	}
	return &blkparseDecoder{l: lineReader{br: br, name: name}, action: a}, nil
}

func (d *blkparseDecoder) deviceName(dev uint32) string { return d.devices.name(dev) }

// next parses "maj,min cpu seq sec.nsec pid action rwbs sector + n [cmd]"
// and stops at the per-CPU summary blkparse prints at the end.
func (d *blkparseDecoder) next(rec *Record) error {
	for {
		if d.done {
			return io.EOF
		}
		line, err := d.l.next()
		if err != nil {
			return err
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		if bytes.HasPrefix(t, []byte("CPU")) || bytes.HasPrefix(t, []byte("Total (")) {
			d.done = true // summary section
			return io.EOF
		}
		var fs [12][]byte
		f := splitSpace(t, fs[:0])
		if len(f) < 6 {
			return d.l.errf("want at least 6 blank-separated columns (dev cpu seq time pid action ...), got %d", len(f))
		}
		maj, min, ok := bytes.Cut(f[0], []byte(","))
		if !ok {
			return d.l.errf("first column %s is not major,minor", quote(f[0]))
		}
		if _, ok := parseUint(maj); !ok {
			return d.l.errf("bad device major %s", quote(maj))
		}
		if _, ok := parseUint(min); !ok {
			return d.l.errf("bad device minor %s", quote(min))
		}
		ts, ok := parseTime(f[3], time.Second)
		if !ok {
			return d.l.errf("bad time %s (want seconds.nanoseconds)", quote(f[3]))
		}
		if len(f[5]) != 1 || f[5][0] != d.action {
			continue
		}
		if len(f) < 10 || string(f[8]) != "+" {
			continue // no sector range (e.g. a flush)
		}
		rwbs := f[6]
		var op Op
		switch {
		case bytes.IndexByte(rwbs, 'W') >= 0:
			op = OpWrite
		case bytes.IndexByte(rwbs, 'R') >= 0:
			op = OpRead
		default:
			continue // discard, no data
		}
		pid, ok := parseUint(f[4])
		if !ok || pid > math.MaxUint32 {
			return d.l.errf("bad pid %s", quote(f[4]))
		}
		sector, ok := parseUint(f[7])
		if !ok {
			return d.l.errf("bad sector %s", quote(f[7]))
		}
		off, err := checkOffset(&d.l, sector, 512)
		if err != nil {
			return err
		}
		nsec, ok := parseUint(f[9])
		if !ok || nsec > math.MaxInt32/512 {
			return d.l.errf("bad sector count %s", quote(f[9]))
		}
		if nsec == 0 {
			continue
		}
		*rec = Record{
			Arrival:   ts,
			Initiator: uint32(pid),
			Device:    d.devices.id(f[0]),
			Offset:    off,
			Size:      int32(nsec * 512),
			Op:        op,
			Sync:      bytes.IndexByte(rwbs[1:], 'S') >= 0,
		}
		return nil
	}
}

// ---- fio iolog v2/v3 ----

type fioDecoder struct {
	l       lineReader
	version int
	files   denseIDs
	wait    time.Duration // v2: sum of wait actions
}

func newFioDecoder(br *bufio.Reader, name string) (*fioDecoder, error) {
	d := &fioDecoder{l: lineReader{br: br, name: name}}
	line, err := d.l.next()
	if err == io.EOF {
		return nil, &ParseError{File: name, Msg: "empty file, want a \"fio version N iolog\" first line"}
	}
	if err != nil {
		return nil, err
	}
	switch string(bytes.TrimSpace(line)) {
	case "fio version 2 iolog":
		d.version = 2
	case "fio version 3 iolog":
		d.version = 3
	default:
		return nil, d.l.errf("bad fio iolog header %s (want \"fio version 2 iolog\" or \"fio version 3 iolog\")", quote(line))
	}
	return d, nil
}

func (d *fioDecoder) deviceName(dev uint32) string { return d.files.name(dev) }

func (d *fioDecoder) next(rec *Record) error {
	for {
		line, err := d.l.next()
		if err != nil {
			return err
		}
		var fs [8][]byte
		f := splitSpace(line, fs[:0])
		if len(f) == 0 {
			continue
		}
		var ts time.Duration
		if d.version == 3 {
			t, ok := parseUint(f[0])
			if !ok || t > math.MaxInt64/1000 {
				return d.l.errf("bad timestamp %s (want microseconds)", quote(f[0]))
			}
			ts = time.Duration(t) * time.Microsecond
			f = f[1:]
		}
		if len(f) != 2 && len(f) != 4 {
			return d.l.errf("want \"file action\" or \"file action offset length\", got %d fields", len(f))
		}
		act := f[1]
		switch string(act) {
		case "add", "open", "close":
			d.files.id(f[0])
			continue
		case "sync", "datasync", "trim":
			continue
		case "wait":
			if d.version == 3 {
				return d.l.errf("wait is not allowed in a version 3 iolog")
			}
			if len(f) != 4 {
				return d.l.errf("wait needs a delay")
			}
			us, ok := parseUint(f[2])
			if !ok || us > math.MaxInt64/1000 {
				return d.l.errf("bad wait delay %s", quote(f[2]))
			}
			d.wait += time.Duration(us) * time.Microsecond
			continue
		case "read", "write":
		default:
			return d.l.errf("unknown action %s", quote(act))
		}
		if len(f) != 4 {
			return d.l.errf("%s needs an offset and a length", act)
		}
		off, ok := parseUint(f[2])
		if !ok || off > math.MaxInt64 {
			return d.l.errf("bad offset %s", quote(f[2]))
		}
		n, ok := parseUint(f[3])
		if !ok {
			return d.l.errf("bad length %s", quote(f[3]))
		}
		sz, err := checkSize(&d.l, n, "length")
		if err != nil {
			return err
		}
		if d.version == 2 {
			ts = d.wait
		}
		*rec = Record{Arrival: ts, Device: d.files.id(f[0]), Offset: int64(off), Size: sz, Op: OpWrite}
		if act[0] == 'r' {
			rec.Op = OpRead
		}
		return nil
	}
}

// ---- DiskSim ASCII ----

// DiskSim request flags (disksim_reqflags.h).
const (
	disksimRead  = 0x1
	disksimSync  = 0x80
	disksimAsync = 0x100
)

type diskSimDecoder struct{ l lineReader }

func newDiskSimDecoder(br *bufio.Reader, name string) *diskSimDecoder {
	return &diskSimDecoder{l: lineReader{br: br, name: name}}
}

func (d *diskSimDecoder) deviceName(dev uint32) string { return fmt.Sprintf("devno %d", dev) }

// next parses "arrival_ms devno blkno bcount flags" (flags in hex).
func (d *diskSimDecoder) next(rec *Record) error {
	for {
		line, err := d.l.next()
		if err != nil {
			return err
		}
		var fs [8][]byte
		f := splitSpace(line, fs[:0])
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return d.l.errf("want 5 blank-separated fields (arrival_ms devno blkno bcount flags), got %d", len(f))
		}
		t, ok := parseTime(f[0], time.Millisecond)
		if !ok {
			return d.l.errf("bad arrival time %s (want milliseconds)", quote(f[0]))
		}
		dev, ok := parseUint(f[1])
		if !ok || dev > math.MaxUint32 {
			return d.l.errf("bad device number %s", quote(f[1]))
		}
		blk, ok := parseUint(f[2])
		if !ok {
			return d.l.errf("bad block number %s", quote(f[2]))
		}
		off, err := checkOffset(&d.l, blk, 512)
		if err != nil {
			return err
		}
		cnt, ok := parseUint(f[3])
		if !ok || cnt > math.MaxInt32/512 {
			return d.l.errf("bad block count %s", quote(f[3]))
		}
		flags, ok := parseHex(f[4])
		if !ok {
			return d.l.errf("bad flags %s (want hexadecimal)", quote(f[4]))
		}
		*rec = Record{
			Arrival: t,
			Device:  uint32(dev),
			Offset:  off,
			Size:    int32(cnt * 512),
			Op:      OpWrite,
			Sync:    flags&disksimAsync == 0,
		}
		if flags&disksimRead != 0 {
			rec.Op = OpRead
		}
		return nil
	}
}

// ---- fabemu CSV ----

// csvHeader is the first line of fabemu's CSV form; see docs/traces.md.
const csvHeader = "arrival_ns,initiator,device,offset,size,op,sync,service_ns"

type csvDecoder struct {
	l      lineReader
	header bool
}

func newCSVDecoder(br *bufio.Reader, name string) *csvDecoder {
	return &csvDecoder{l: lineReader{br: br, name: name}}
}

func (d *csvDecoder) deviceName(dev uint32) string { return fmt.Sprintf("device %d", dev) }

func (d *csvDecoder) next(rec *Record) error {
	for {
		line, err := d.l.next()
		if err != nil {
			if err == io.EOF && !d.header {
				return &ParseError{File: d.l.name, Msg: "no header line " + csvHeader}
			}
			return err
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		if !d.header {
			if string(t) != csvHeader {
				return d.l.errf("bad header %s, want %q", quote(t), csvHeader)
			}
			d.header = true
			continue
		}
		var fs [9][]byte
		f := splitComma(t, fs[:0])
		if len(f) != 8 {
			return d.l.errf("want 8 comma-separated fields (%s), got %d", csvHeader, len(f))
		}
		arr, ok := parseInt(f[0])
		if !ok {
			return d.l.errf("bad arrival_ns %s", quote(f[0]))
		}
		ini, ok := parseUint(f[1])
		if !ok || ini > math.MaxUint32 {
			return d.l.errf("bad initiator %s", quote(f[1]))
		}
		dev, ok := parseUint(f[2])
		if !ok || dev > math.MaxUint32 {
			return d.l.errf("bad device %s", quote(f[2]))
		}
		off, ok := parseInt(f[3])
		if !ok || off < 0 {
			return d.l.errf("bad offset %s", quote(f[3]))
		}
		size, ok := parseUint(f[4])
		if !ok {
			return d.l.errf("bad size %s", quote(f[4]))
		}
		sz, err := checkSize(&d.l, size, "size")
		if err != nil {
			return err
		}
		*rec = Record{Arrival: time.Duration(arr), Initiator: uint32(ini), Device: uint32(dev), Offset: off, Size: sz}
		switch string(f[5]) {
		case "R":
			rec.Op = OpRead
		case "W":
			rec.Op = OpWrite
		default:
			return d.l.errf("bad op %s (want R or W)", quote(f[5]))
		}
		switch string(f[6]) {
		case "0":
		case "1":
			rec.Sync = true
		default:
			return d.l.errf("bad sync %s (want 0 or 1)", quote(f[6]))
		}
		if len(f[7]) > 0 {
			s, ok := parseInt(f[7])
			if !ok || s < 0 {
				return d.l.errf("bad service_ns %s", quote(f[7]))
			}
			rec.Service, rec.HasService = time.Duration(s), true
		}
		return nil
	}
}
