package pcap

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/fabemu/fabemu/tracefmt"
)

// A guard sits between the (decompressed) file and gopacket's reader. It
// hands the reader one record (pcap) or one block (pcapng) at a time,
// after checking its declared lengths, so that
//   - a length over the bounds is refused before anything is allocated for it,
//   - a record cut short by the end of the file is reported as truncated,
//   - every error, the guard's or the reader's, can name the record and
//     the byte offset where it starts: gopacket's reader buffers what it
//     reads, but since a guard's Read never returns bytes past the end of
//     the current unit, the reader is never more than one unit ahead.
//
// Its buffer grows to the largest unit seen, at most maxBlock bytes.
type guard struct {
	r    io.Reader
	name string
	ng   bool // pcapng, else pcap

	order   binary.ByteOrder
	buf     []byte // the current unit
	pos     int
	off     int64 // byte offset of the current unit
	next    int64 // byte offset of the next unit
	packets int64 // packet records begun so far
	packet  bool  // the current unit is a packet record
	started bool
	err     error // sticky

	snaplens []uint32 // pcapng: per interface of the current section
}

// Bounds on what a capture may declare. MaxFrame is libpcap's largest snap
// length (MAXIMUM_SNAPLEN); frames captured longer than that are refused.
const (
	MaxFrame = 256 << 10
	// MaxOrigLen bounds a frame's declared original length (what was on
	// the wire before the snap length cut it): 16 MiB, four times Linux's
	// largest BIG TCP aggregate.
	MaxOrigLen = 16 << 20
	// maxBlock bounds a pcapng block: a frame plus 64 KiB of options.
	maxBlock = MaxFrame + 64<<10
)

const (
	ngSHB = 0x0A0D0D0A
	ngIDB = 1
	ngPB  = 2 // obsolete Packet Block
	ngSPB = 3
	ngEPB = 6
	ngBOM = 0x1A2B3C4D
)

func (g *guard) Read(p []byte) (int, error) {
	if g.pos == len(g.buf) {
		if g.err != nil {
			return 0, g.err
		}
		var err error
		if g.ng {
			err = g.loadBlock()
		} else {
			err = g.loadRecord()
		}
		if err != nil {
			g.err = err
			return 0, err
		}
	}
	n := copy(p, g.buf[g.pos:])
	g.pos += n
	return n, nil
}

// where is the record number and offset to blame for an error now: the
// packet record being read, or, in a non-packet block, the next one.
func (g *guard) where() (int64, int64) {
	if g.packet {
		return g.packets, g.off
	}
	return g.packets + 1, g.off
}

func (g *guard) fail(format string, a ...any) error {
	rec, off := g.where()
	if !g.started || (rec == 1 && off == 0 && !g.packet) {
		return &tracefmt.ParseError{File: g.name, Msg: fmt.Sprintf(format, a...)}
	}
	return &tracefmt.ParseError{File: g.name, Record: int(rec), Offset: off, Msg: fmt.Sprintf(format, a...)}
}

// unit names the current record or block for an error message.
func (g *guard) unit() string {
	if !g.ng {
		if g.packet && len(g.buf) >= 16 {
			return fmt.Sprintf("the record (%d captured bytes)", g.order.Uint32(g.buf[8:12]))
		}
		return "the file header"
	}
	typ := binary.LittleEndian.Uint32(g.buf)
	if typ != ngSHB && g.order != nil {
		typ = g.order.Uint32(g.buf)
	}
	return "the " + blockName(typ)
}

// fill reads n more bytes of the current unit onto g.buf; a short read is
// a truncated file.
func (g *guard) fill(n int) error {
	have := len(g.buf)
	if cap(g.buf) < have+n {
		nb := make([]byte, have, have+n)
		copy(nb, g.buf)
		g.buf = nb
	}
	g.buf = g.buf[:have+n]
	m, err := io.ReadFull(g.r, g.buf[have:])
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return g.fail("truncated: %s is %d bytes long, the file ends %d bytes into it", g.unit(), have+n, have+m)
	}
	if err != nil {
		return g.fail("%s: %v", g.unit(), err)
	}
	return nil
}

// begin starts a new unit at g.next with its first n header bytes; it
// returns io.EOF if the file ends exactly there.
func (g *guard) begin(n int, what string) error {
	if cap(g.buf) < n {
		g.buf = make([]byte, 0, 4096)
	}
	g.buf, g.pos, g.off = g.buf[:n], 0, g.next
	m, err := io.ReadFull(g.r, g.buf)
	switch {
	case m == 0 && err == io.EOF:
		return io.EOF
	case err == io.ErrUnexpectedEOF:
		return g.fail("truncated: %s is %d bytes long, the file ends %d bytes into it", what, n, m)
	case err != nil:
		return g.fail("%s: %v", what, err)
	}
	return nil
}

// loadRecord loads the pcap file header or the next record.
func (g *guard) loadRecord() error {
	if !g.started {
		if err := g.begin(24, "the file header"); err != nil {
			if err == io.EOF {
				return g.fail("empty file")
			}
			return err
		}
		g.started = true
		switch binary.BigEndian.Uint32(g.buf) {
		case 0xA1B2C3D4, 0xA1B23C4D:
			g.order = binary.BigEndian
		case 0xD4C3B2A1, 0x4D3CB2A1:
			g.order = binary.LittleEndian
		default:
			return g.fail("not a pcap file (magic % x)", g.buf[:4])
		}
		g.next = 24
		return nil
	}
	g.packets++
	g.packet = true
	if err := g.begin(16, "the record header"); err != nil {
		if err == io.EOF {
			g.packets--
		}
		return err
	}
	capLen := g.order.Uint32(g.buf[8:12])
	origLen := g.order.Uint32(g.buf[12:16])
	if err := checkLens(g, capLen, origLen); err != nil {
		return err
	}
	if err := g.fill(int(capLen)); err != nil {
		return err
	}
	g.next = g.off + int64(len(g.buf))
	return nil
}

func checkLens(g *guard, capLen, origLen uint32) error {
	switch {
	case capLen > MaxFrame:
		return g.fail("captured length %d is over the bound of %d bytes", capLen, MaxFrame)
	case origLen > MaxOrigLen:
		return g.fail("original length %d is over the bound of %d bytes", origLen, MaxOrigLen)
	case capLen > origLen:
		return g.fail("captured length %d exceeds the original length %d", capLen, origLen)
	}
	return nil
}

// loadBlock loads the next pcapng block and checks its lengths.
func (g *guard) loadBlock() error {
	g.packet = false
	if err := g.begin(8, "the block header"); err != nil {
		if err == io.EOF && !g.started {
			return g.fail("empty file")
		}
		return err
	}
	first := !g.started
	g.started = true
	typ := binary.LittleEndian.Uint32(g.buf) // the SHB type reads the same in both orders
	if typ == ngSHB {
		if err := g.fill(4); err != nil {
			return err
		}
		switch {
		case binary.BigEndian.Uint32(g.buf[8:]) == ngBOM:
			g.order = binary.BigEndian
		case binary.LittleEndian.Uint32(g.buf[8:]) == ngBOM:
			g.order = binary.LittleEndian
		default:
			return g.fail("section header has no byte-order magic (% x)", g.buf[8:12])
		}
		g.snaplens = g.snaplens[:0]
	} else if first {
		return g.fail("not a pcapng file (first block type %#x, want a section header)", typ)
	} else {
		typ = g.order.Uint32(g.buf)
	}
	length := g.order.Uint32(g.buf[4:])
	minLen := uint32(12)
	switch typ {
	case ngSHB:
		minLen = 28
	case ngIDB:
		minLen = 20
	case ngEPB, ngPB:
		minLen = 32
	case ngSPB:
		minLen = 16
	}
	if typ == ngEPB || typ == ngPB || typ == ngSPB {
		g.packets++
		g.packet = true
	}
	switch {
	case length < minLen:
		return g.fail("%s: total length %d is under its minimum %d", blockName(typ), length, minLen)
	case length%4 != 0:
		return g.fail("%s: total length %d is not a multiple of 4", blockName(typ), length)
	case length > maxBlock:
		return g.fail("%s: total length %d is over the bound of %d bytes", blockName(typ), length, maxBlock)
	}
	if err := g.fill(int(length) - len(g.buf)); err != nil {
		return err
	}
	if end := g.order.Uint32(g.buf[length-4:]); end != length {
		return g.fail("%s: total length %d at its start but %d at its end", blockName(typ), length, end)
	}
	b := g.buf
	switch typ {
	case ngIDB:
		g.snaplens = append(g.snaplens, g.order.Uint32(b[12:16]))
		if err := g.checkTSResol(b[16 : length-4]); err != nil {
			return err
		}
	case ngEPB, ngPB:
		capLen, origLen := g.order.Uint32(b[20:24]), g.order.Uint32(b[24:28])
		if err := checkLens(g, capLen, origLen); err != nil {
			return err
		}
		if int64(capLen) > int64(length)-32 {
			return g.fail("captured length %d does not fit in a block of %d bytes", capLen, length)
		}
	case ngSPB:
		origLen := g.order.Uint32(b[8:12])
		capLen := origLen
		if len(g.snaplens) > 0 && g.snaplens[0] != 0 && capLen > g.snaplens[0] {
			capLen = g.snaplens[0]
		}
		if err := checkLens(g, min(capLen, MaxFrame+1), origLen); err != nil {
			return err
		}
		if int64(capLen) > int64(length)-16 {
			return g.fail("simple packet of %d bytes does not fit in a block of %d bytes", capLen, length)
		}
	}
	g.next = g.off + int64(length)
	return nil
}

// checkTSResol walks the options of an interface description block and
// refuses an if_tsresol of 0: by the pcapng specification that is
// 10^0 s, one-second stamps, but the pcapng reader takes 0 for "absent"
// and reads the stamps as microseconds, which would silently compress the
// capture's time a million-fold.
func (g *guard) checkTSResol(opts []byte) error {
	const ifTSResol = 9
	for len(opts) >= 4 {
		code, n := g.order.Uint16(opts), int(g.order.Uint16(opts[2:]))
		if code == 0 { // opt_endofopt
			return nil
		}
		if 4+n > len(opts) {
			return nil // the reader reports a malformed option
		}
		if code == ifTSResol && n == 1 && opts[4] == 0 {
			return g.fail("the interface description block %d: if_tsresol 0 (one-second timestamps) is not supported: the pcapng reader would take the stamps for microseconds; rewrite the capture with a resolution of 6 (microseconds) or finer", len(g.snaplens)-1)
		}
		opts = opts[4+(n+3)&^3:]
	}
	return nil
}

// blockName names a pcapng block type for error messages.
func blockName(typ uint32) string {
	switch typ {
	case ngSHB:
		return "section header block"
	case ngIDB:
		return "interface description block"
	case ngPB:
		return "packet block"
	case ngSPB:
		return "simple packet block"
	case 4:
		return "name resolution block"
	case 5:
		return "interface statistics block"
	case ngEPB:
		return "enhanced packet block"
	case 10:
		return "decryption secrets block"
	}
	return fmt.Sprintf("block of type %#x", typ)
}
