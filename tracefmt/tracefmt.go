// Package tracefmt owns block-I/O trace files: streaming readers for the HP
// Labs SRT format (the 1992 and 1999 "cello" traces), SNIA MSR Cambridge
// CSV, SPC, blkparse text, fio iolog v2/v3, DiskSim ASCII and fabemu's own
// CSV form; writers for the text forms and SRT; format sniffing; order
// checking; and trace statistics. Every reader yields the same Record, one
// at a time, so a multi-gigabyte trace never sits in memory.
//
// Packet captures (pcap, pcapng) are recognised by the same sniffing, but
// read by tracefmt/pcap, since packets are not block requests. Synthetic
// block traces live in tracefmt/blockgen and the embedded sample trace in
// tracefmt/sample.
package tracefmt

import (
	"errors"
	"fmt"
	"time"
)

// Op is the direction of a block request.
type Op uint8

const (
	// OpRead moves data from the device to the initiator.
	OpRead Op = iota
	// OpWrite moves data from the initiator to the device.
	OpWrite
)

// String returns "R" or "W".
func (o Op) String() string {
	if o == OpRead {
		return "R"
	}
	return "W"
}

// Record is one block request as every reader yields it.
//
// Per-format meaning of Arrival's epoch, Initiator and Device is documented
// on each Format constant and in docs/traces.md.
type Record struct {
	// Arrival is the request's arrival (enqueue) time since the format's
	// epoch; the first record is not necessarily at 0.
	Arrival time.Duration
	// Initiator is who issued the request (pid, host index), 0 when the
	// format does not say.
	Initiator uint32
	// Device is the device or disk index the request addresses.
	Device uint32
	// Offset is the byte offset on the device.
	Offset int64
	// Size is the transfer length in bytes.
	Size int32
	// Op is read or write.
	Op Op
	// Sync reports whether the issuer waited for the request (a synchronous
	// request); false when the format does not say.
	Sync bool
	// Service is the traced service time when HasService is set.
	Service time.Duration
	// HasService reports whether the format carried a service time.
	HasService bool
}

// Format names a trace file format.
type Format string

// The formats tracefmt reads. The comment on each gives the meaning of the
// Record fields for that format.
const (
	// SRT is HP Labs' binary SRT format (cello, snake, hplajw). Arrival is
	// since the header's tracedate (wall clock read as UTC; for several
	// files, since the earliest file's tracedate); record version 7 carries
	// absolute times, so there the epoch is the Unix epoch. Initiator is
	// the pid (record version 5 and later, else 0). Device is
	// (devno>>8)&0xFFFF: controller*16+disk unit, plus the high minor byte.
	// Offset is sectno times the disk's header sectorsize (512 if absent).
	// Service is stop-start (device time, without queueing).
	SRT Format = "srt"
	// MSR is the SNIA MSR Cambridge CSV. Arrival is since the Unix epoch;
	// Initiator is a dense index of host names in order of first appearance;
	// Device is a dense index of (host, disk) pairs in order of first
	// appearance, named "host_disk"; Service is the response time.
	MSR Format = "msr"
	// SPC is the SPC trace format (UMass Financial/WebSearch). Arrival is
	// since trace start; Device is the ASU; Initiator is 0; Offset is
	// LBA*Options.SPCBlockSize (512 by default).
	SPC Format = "spc"
	// Blkparse is blkparse's default text output. Only Q events (or D,
	// Options.BlkparseAction) become records. Arrival is since trace start;
	// Initiator is the pid; Device is a dense index of "major,minor" in order
	// of first appearance; sectors are 512 bytes; Sync is the S flag.
	Blkparse Format = "blkparse"
	// Fio is a fio iolog, version 2 or 3. Arrival is the v3 timestamp (µs
	// since the start of the run) or, for v2, the sum of wait actions;
	// Device is a dense index of file names in order of first appearance.
	Fio Format = "fio"
	// DiskSim is DiskSim's ASCII trace: "arrival_ms devno blkno bcount
	// flags". Device is devno; blocks are 512 bytes; flag 0x1 is read and
	// Sync is "flag 0x100 (async) clear".
	DiskSim Format = "disksim"
	// CSV is fabemu's own lossless CSV form (see docs/traces.md).
	CSV Format = "csv"
	// Pcap is a libpcap packet capture (micro- or nanosecond magic, either
	// byte order) and Pcapng its successor. They are sniffed and named
	// here so that one --format list covers every input, but a capture
	// holds packets, not block requests: NewReader refuses them with an
	// error wrapping ErrCapture, and tracefmt/pcap reads them.
	Pcap   Format = "pcap"
	Pcapng Format = "pcapng"
	// Auto asks Open and NewReader to sniff the format from the content.
	Auto Format = "auto"
)

// Formats lists every concrete format tracefmt reads, in a stable order.
func Formats() []Format {
	return []Format{SRT, MSR, SPC, Blkparse, Fio, DiskSim, CSV}
}

// CaptureFormats lists the packet-capture formats that sniffing recognises
// and tracefmt/pcap reads.
func CaptureFormats() []Format {
	return []Format{Pcap, Pcapng}
}

// IsCapture reports whether f is a packet-capture format.
func IsCapture(f Format) bool { return f == Pcap || f == Pcapng }

// WriterFormats lists the formats tracefmt can write.
func WriterFormats() []Format {
	return []Format{CSV, DiskSim, SRT, SPC, Fio}
}

// ParseFormat checks a format name given by a user.
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return Auto, nil
	}
	f := Format(s)
	if f == Auto {
		return f, nil
	}
	for _, g := range append(Formats(), CaptureFormats()...) {
		if f == g {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown trace format %q (want one of srt, msr, spc, blkparse, fio, disksim, csv, pcap, pcapng, auto)", s)
}

// Options tune reading. The zero value is the default.
type Options struct {
	// BlkparseAction selects the blkparse event that becomes a record:
	// 'Q' (queued at the block layer, the default) or 'D' (issued to the
	// driver).
	BlkparseAction byte
	// SPCBlockSize is the byte size of an SPC LBA (default 512).
	SPCBlockSize int64
	// SortWindow, when positive, reorders arrivals within a window of that
	// many records (a min-heap on arrival time, ties in file order), so a
	// trace that is only locally out of order comes out sorted. Records
	// that are out of order by more than the window are still counted.
	SortWindow int
	// RejectOutOfOrder makes Next return a *ParseError at the first
	// record that arrives before its predecessor (after sorting).
	RejectOutOfOrder bool
}

// Reader yields records one at a time.
type Reader interface {
	// Next returns the next record, or io.EOF after the last one.
	Next() (Record, error)
	// Close releases the underlying file(s).
	Close() error
	// Format is the format being read (never Auto).
	Format() Format
}

// DeviceNamer is implemented by the readers of this package: it names a
// Device index for people ("disk unit 1", "8,16", "hm_0").
type DeviceNamer interface {
	DeviceName(dev uint32) string
}

// DeviceName names dev using r if r can, else "device N".
func DeviceName(r Reader, dev uint32) string {
	if n, ok := r.(DeviceNamer); ok {
		if s := n.DeviceName(dev); s != "" {
			return s
		}
	}
	return fmt.Sprintf("device %d", dev)
}

// OrderReport tells how far a trace departs from non-decreasing arrivals.
type OrderReport struct {
	// Inversions counts records (after any sort window) whose arrival is
	// earlier than the latest arrival before them.
	Inversions int64
	// MaxBackstep is the largest such step back in time.
	MaxBackstep time.Duration
	// FirstRecord is the 1-based record number of the first inversion.
	FirstRecord int64
}

// OrderChecker is implemented by the readers of this package.
type OrderChecker interface {
	Order() OrderReport
}

// ParseError is what every reader returns for malformed input.
type ParseError struct {
	File   string // file name as given to Open or NewReader
	Record int    // 1-based record number for binary formats, else 0
	Line   int    // 1-based line number for text formats, else 0
	Offset int64  // byte offset of the record in the (decompressed) stream
	Msg    string // what was wrong
}

// Error reads "FILE: line N: what" or "FILE: record N (byte offset X): what".
func (e *ParseError) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s: line %d: %s", e.File, e.Line, e.Msg)
	case e.Record > 0:
		return fmt.Sprintf("%s: record %d (byte offset %d): %s", e.File, e.Record, e.Offset, e.Msg)
	default:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
}

// ErrUnknownFormat is wrapped by the error of Auto when sniffing fails.
var ErrUnknownFormat = errors.New("cannot tell the trace format")

// ErrCapture is wrapped by the error NewReader and Open return for a packet
// capture (pcap, pcapng): it is not a block-I/O trace, and tracefmt/pcap
// reads it.
var ErrCapture = errors.New("a packet capture, not a block-I/O trace")
