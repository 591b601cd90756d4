package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"slices"
)

// SchemaHeader names the schema and version of a JSON document fabemu
// writes. Commands embed it as the first field of their summary types so
// that readers can refuse documents they do not understand:
//
//	type ReplaySummary struct {
//		report.SchemaHeader
//		TraceExecutionTimePs int64 `json:"trace_execution_time_ps"`
//	}
//
// encodes as {"schema": "fabemu.replay.summary", "version": 1, ...}.
// Bump Version whenever a field changes meaning or disappears; adding a
// field does not need a bump.
type SchemaHeader struct {
	// Schema names the document type, e.g. "fabemu.replay.summary".
	Schema string `json:"schema"`
	// Version is the schema's version, starting at 1.
	Version int `json:"version"`
}

// WriteJSON writes v as indented JSON (two spaces, HTML escaping off,
// trailing newline) to path, atomically as [WriteFile] does; path "-"
// means standard output.
//
// encoding/json refuses NaN and infinite floats; summaries that may hold
// them should use pointers or omit the field.
func WriteJSON(path string, v any) error {
	return writeJSONTo(path, os.Stdout, v)
}

func writeJSONTo(path string, stdout io.Writer, v any) error {
	return writeFileTo(path, stdout, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			if isWriteError(err) {
				return err
			}
			return fmt.Errorf("report: write JSON to %s: %w", displayPath(path), err)
		}
		return nil
	})
}

// JSONLinesWriter writes one compact JSON value per line (JSON lines,
// also called NDJSON), with HTML escaping off. It buffers; call Flush when
// done.
type JSONLinesWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
	n   int
}

// NewJSONLinesWriter returns a JSONLinesWriter writing to w.
func NewJSONLinesWriter(w io.Writer) *JSONLinesWriter {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &JSONLinesWriter{bw: bw, enc: enc}
}

// Write appends v as one line.
func (j *JSONLinesWriter) Write(v any) error {
	j.n++
	if err := j.enc.Encode(v); err != nil {
		return fmt.Errorf("report: JSON lines record %d: %w", j.n, err)
	}
	return nil
}

// Flush writes buffered lines to the underlying writer.
func (j *JSONLinesWriter) Flush() error {
	return j.bw.Flush()
}

// WriteJSONLines writes records as JSON lines to path (atomically, as
// [WriteFile]; "-" is standard output).
func WriteJSONLines[T any](path string, records []T) error {
	return WriteJSONLinesSeq(path, slices.Values(records))
}

// WriteJSONLinesSeq writes the records of a sequence as JSON lines to path
// (atomically, as [WriteFile]; "-" is standard output). To write from a
// channel, wrap it:
//
//	func(yield func(T) bool) { for r := range ch { if !yield(r) { return } } }
//
// On an encoding error the sequence is abandoned, so a channel producer
// must not block forever on a send.
func WriteJSONLinesSeq[T any](path string, records iter.Seq[T]) error {
	return writeJSONLinesTo(path, os.Stdout, records)
}

func writeJSONLinesTo[T any](path string, stdout io.Writer, records iter.Seq[T]) error {
	return writeFileTo(path, stdout, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		n := 0
		for r := range records {
			n++
			if err := enc.Encode(r); err != nil {
				if isWriteError(err) {
					return err
				}
				return fmt.Errorf("report: write JSON lines to %s: record %d: %w", displayPath(path), n, err)
			}
		}
		return nil
	})
}

// isWriteError reports an error of the output file itself, which already
// names the path (as opposed to a value encoding/json refused).
func isWriteError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}

// displayPath names path in error messages.
func displayPath(path string) string {
	if path == Stdout {
		return "standard output"
	}
	return path
}
