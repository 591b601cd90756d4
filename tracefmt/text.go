package tracefmt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// lineReader yields the lines of a text trace without allocating: each line
// is valid until the next call.
type lineReader struct {
	br   *bufio.Reader
	name string
	line int
	eof  bool
}

// next returns the next line without its line ending, or io.EOF.
func (l *lineReader) next() ([]byte, error) {
	if l.eof {
		return nil, io.EOF
	}
	b, err := l.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			l.line++
			return nil, l.errf("line longer than %d bytes (not a text trace?)", bufSize)
		}
		if err != io.EOF {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		l.eof = true
		if len(b) == 0 {
			return nil, io.EOF
		}
	}
	l.line++
	b = bytes.TrimRight(b, "\r\n")
	return b, nil
}

func (l *lineReader) errf(format string, args ...any) error {
	return &ParseError{File: l.name, Line: l.line, Msg: fmt.Sprintf(format, args...)}
}

// splitComma splits on commas and trims blanks around each field.
func splitComma(line []byte, out [][]byte) [][]byte {
	for {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return append(out, bytes.TrimSpace(line))
		}
		out = append(out, bytes.TrimSpace(line[:i]))
		line = line[i+1:]
	}
}

// splitSpace splits on runs of blanks, at most cap(out) fields (the last
// field then holds the rest of the line).
func splitSpace(line []byte, out [][]byte) [][]byte {
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		if len(out) == cap(out)-1 {
			return append(out, bytes.TrimRight(line[i:], " \t"))
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		out = append(out, line[i:j])
		i = j
	}
	return out
}

func eqFold(b []byte, s string) bool { return bytes.EqualFold(b, []byte(s)) }

func quote(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "..."
	}
	return strconv.Quote(string(b))
}

// parseUint parses a non-empty decimal number.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// parseInt parses a decimal number with an optional sign.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, ok := parseUint(b)
	if !ok || u > math.MaxInt64 {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

// parseHex parses a hexadecimal number with an optional 0x prefix.
func parseHex(b []byte) (uint64, bool) {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// parseTime parses a non-negative decimal number of units (unit is the
// duration of 1, e.g. time.Second) exactly to the nanosecond, without going
// through float64 for plain "int.frac" input. Digits beyond the nanosecond
// are truncated. Exponent forms fall back to float parsing.
func parseTime(b []byte, unit time.Duration) (time.Duration, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if bytes.ContainsAny(b, "eE") {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil || f < 0 || math.IsNaN(f) || f*float64(unit) >= math.MaxInt64 {
			return 0, false
		}
		return time.Duration(math.Round(f * float64(unit))), true
	}
	ip, fp := b, []byte(nil)
	if i := bytes.IndexByte(b, '.'); i >= 0 {
		ip, fp = b[:i], b[i+1:]
	}
	if len(ip) == 0 && len(fp) == 0 {
		return 0, false
	}
	var whole uint64
	if len(ip) > 0 {
		var ok bool
		if whole, ok = parseUint(ip); !ok {
			return 0, false
		}
	}
	if whole > uint64(math.MaxInt64/int64(unit)) {
		return 0, false
	}
	d := time.Duration(whole) * unit
	// fractional part: unit/10, unit/100, ... down to 1 ns
	scale := unit
	for _, c := range fp {
		if c < '0' || c > '9' {
			return 0, false
		}
		scale /= 10
		d += time.Duration(c-'0') * scale
	}
	if d < 0 {
		return 0, false
	}
	return d, true
}
