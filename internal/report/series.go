package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fabemu/fabemu/internal/outfile"
)

// SeriesFormat is the on-disk format of a time series.
type SeriesFormat int

const (
	// SeriesJSONLines writes one JSON object per row, keyed by the header
	// names in header order: {"time_ns":1000,"accepted_bytes_per_ns":0.5}.
	// NaN and infinite values are written as null.
	SeriesJSONLines SeriesFormat = iota
	// SeriesCSV writes RFC 4180 CSV with the header as the first record.
	// Numbers use Go's shortest round-trip form; NaN and infinities are
	// written as NaN, +Inf and -Inf.
	SeriesCSV
)

// String names the format.
func (f SeriesFormat) String() string {
	switch f {
	case SeriesJSONLines:
		return "jsonl"
	case SeriesCSV:
		return "csv"
	}
	return "SeriesFormat(" + strconv.Itoa(int(f)) + ")"
}

// SeriesFormatFor chooses the format for path by its extension: ".csv"
// (in any letter case) means CSV; anything else, including "-" and
// ".jsonl", ".ndjson" or ".json", means JSON lines.
func SeriesFormatFor(path string) SeriesFormat {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return SeriesCSV
	}
	return SeriesJSONLines
}

// SeriesWriter writes a time series (or any table of numbers) row by row
// as JSON lines or CSV. Call Header once, then Row or RowStrings for each
// row with exactly one value per header name, then Close.
//
// The first error is sticky: later calls return it, and Close on a
// writer from [CreateSeries] then removes the temporary file instead of
// replacing the target. A SeriesWriter is not safe for concurrent use.
type SeriesWriter struct {
	format SeriesFormat
	bw     *bufio.Writer
	csv    *csv.Writer
	keys   [][]byte // JSON-encoded header names followed by ':'
	ncols  int
	rows   int
	buf    []byte
	cells  []string
	err    error
	file   *outfile.File // set by CreateSeries
	closed bool
}

// NewSeriesWriter returns a SeriesWriter writing to w in the given
// format. Close flushes it but does not close w.
func NewSeriesWriter(w io.Writer, format SeriesFormat) *SeriesWriter {
	s := &SeriesWriter{format: format, bw: bufio.NewWriter(w)}
	if format == SeriesCSV {
		s.csv = csv.NewWriter(s.bw)
	}
	return s
}

// CreateSeries creates a SeriesWriter for path in the format
// [SeriesFormatFor] picks. The file appears atomically when Close
// succeeds (written to a temporary file in the same directory, then
// renamed, as [WriteFile] does). Path "-" writes JSON lines to standard
// output; use NewSeriesWriter(os.Stdout, SeriesCSV) for CSV there.
func CreateSeries(path string) (*SeriesWriter, error) {
	of, err := outfile.Create(path, os.Stdout)
	if err != nil {
		return nil, err
	}
	s := NewSeriesWriter(of, SeriesFormatFor(path))
	s.file = of
	return s, nil
}

// Header sets the column names. It must be called exactly once, before
// any row. Names must be non-empty and distinct.
func (s *SeriesWriter) Header(names []string) error {
	if s.err != nil {
		return s.err
	}
	switch {
	case s.closed:
		return s.fail(errors.New("report: series header after Close"))
	case s.ncols > 0:
		return s.fail(errors.New("report: series header written twice"))
	case len(names) == 0:
		return s.fail(errors.New("report: series header has no columns"))
	}
	seen := make(map[string]int, len(names))
	for i, n := range names {
		if n == "" {
			return s.fail(fmt.Errorf("report: series header column %d has an empty name", i+1))
		}
		if j, dup := seen[n]; dup {
			return s.fail(fmt.Errorf("report: series header columns %d and %d are both named %q", j+1, i+1, n))
		}
		seen[n] = i
	}
	s.ncols = len(names)
	if s.format == SeriesCSV {
		return s.fail(s.csv.Write(names))
	}
	s.keys = make([][]byte, len(names))
	for i, n := range names {
		k, err := json.Marshal(n)
		if err != nil {
			return s.fail(err)
		}
		s.keys[i] = append(k, ':')
	}
	return nil
}

// Row writes one row of numbers, one per header column.
func (s *SeriesWriter) Row(values []float64) error {
	if err := s.checkRow(len(values)); err != nil {
		return err
	}
	s.rows++
	if s.format == SeriesCSV {
		s.cells = s.cells[:0]
		for _, v := range values {
			s.cells = append(s.cells, formatSeriesFloat(v))
		}
		return s.fail(s.csv.Write(s.cells))
	}
	b := append(s.buf[:0], '{')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s.keys[i]...)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	}
	b = append(b, '}', '\n')
	s.buf = b
	_, err := s.bw.Write(b)
	return s.fail(err)
}

// RowStrings writes one row of preformatted cells, one per header column.
// In JSON lines the cells are written as JSON strings.
func (s *SeriesWriter) RowStrings(cells []string) error {
	if err := s.checkRow(len(cells)); err != nil {
		return err
	}
	s.rows++
	if s.format == SeriesCSV {
		return s.fail(s.csv.Write(cells))
	}
	b := append(s.buf[:0], '{')
	for i, c := range cells {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s.keys[i]...)
		v, err := json.Marshal(c)
		if err != nil {
			return s.fail(err)
		}
		b = append(b, v...)
	}
	b = append(b, '}', '\n')
	s.buf = b
	_, err := s.bw.Write(b)
	return s.fail(err)
}

func (s *SeriesWriter) checkRow(n int) error {
	if s.err != nil {
		return s.err
	}
	switch {
	case s.closed:
		return s.fail(errors.New("report: series row after Close"))
	case s.ncols == 0:
		return s.fail(errors.New("report: series row before header"))
	case n != s.ncols:
		return s.fail(fmt.Errorf("report: series row %d has %d values, header has %d columns", s.rows+1, n, s.ncols))
	}
	return nil
}

// Flush writes buffered rows to the underlying writer (for a file from
// [CreateSeries], to the temporary file).
func (s *SeriesWriter) Flush() error {
	if s.err != nil {
		return s.err
	}
	if s.csv != nil {
		s.csv.Flush()
		if err := s.csv.Error(); err != nil {
			return s.fail(err)
		}
	}
	return s.fail(s.bw.Flush())
}

// Close flushes the series. For a writer from [CreateSeries] it then
// renames the temporary file over the target, or removes it if any
// earlier call failed (returning that error). Close is idempotent.
func (s *SeriesWriter) Close() error {
	if s.closed {
		return s.err
	}
	s.closed = true
	err := s.Flush()
	if s.file == nil {
		return err
	}
	if err != nil {
		s.file.Abort()
		return err
	}
	return s.fail(s.file.Commit())
}

// Abort discards a series from [CreateSeries]: the temporary file is
// removed and the target is left untouched. For other writers it only
// marks the writer closed.
func (s *SeriesWriter) Abort() {
	if s.closed {
		return
	}
	s.closed = true
	if s.file != nil {
		s.file.Abort()
	}
}

// fail records the first error and returns the sticky error.
func (s *SeriesWriter) fail(err error) error {
	if err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}

func formatSeriesFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
