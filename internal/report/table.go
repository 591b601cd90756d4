package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Align says how a column's cells are aligned.
type Align int

const (
	// AlignAuto, the zero value, right-aligns a column when every non-empty
	// cell in it is a number (as [FormatFloat], [FormatInt] and
	// [FormatPercent] produce them) and left-aligns it otherwise.
	AlignAuto Align = iota
	// AlignLeft left-aligns the column.
	AlignLeft
	// AlignRight right-aligns the column.
	AlignRight
)

// Column describes one table column.
type Column struct {
	// Name is the header text, e.g. "latency p99".
	Name string
	// Unit, if not empty, is shown after the name in parentheses:
	// "latency p99 (ns)".
	Unit string
	// Align is the alignment of the column's header and cells.
	Align Align
}

// Header returns the column's header text with its unit.
func (c Column) Header() string {
	if c.Unit == "" {
		return c.Name
	}
	return c.Name + " (" + c.Unit + ")"
}

// Table is a plain-text table for terminals and logs.
//
// Rendered, it looks like
//
//	Trace execution time
//	configuration   time (ms)  reorder memory (KiB)
//	--------------  ---------  --------------------
//	torus adaptive      1,234                   256
//	torus DOR           1,502                     0
//	times include the final ACKs
//
// Cells are strings so callers choose the formatting; use [FormatFloat] and
// friends for numbers. Rows shorter than Columns are padded with empty
// cells.
type Table struct {
	// Title, if not empty, is printed on its own line above the header.
	Title string
	// Columns are the table's columns, left to right.
	Columns []Column
	// Rows holds the cells, one slice per row.
	Rows [][]string
	// Notes are printed one per line below the table.
	Notes []string
}

// AddRow appends a row of cells.
func (t *Table) AddRow(cells ...string) {
	t.Rows = append(t.Rows, cells)
}

// columnGap separates table columns.
const columnGap = "  "

// Write renders the table to w. It returns an error if a row has more cells
// than there are columns, or if writing fails.
func (t *Table) Write(w io.Writer) error {
	if len(t.Columns) == 0 {
		return fmt.Errorf("report: table %q has no columns", t.Title)
	}
	for i, row := range t.Rows {
		if len(row) > len(t.Columns) {
			return fmt.Errorf("report: table %q row %d has %d cells, but the table has %d columns",
				t.Title, i+1, len(row), len(t.Columns))
		}
	}
	headers := make([]string, len(t.Columns))
	widths := make([]int, len(t.Columns))
	right := make([]bool, len(t.Columns))
	for c, col := range t.Columns {
		headers[c] = col.Header()
		widths[c] = textWidth(headers[c])
		switch col.Align {
		case AlignRight:
			right[c] = true
		case AlignLeft:
			right[c] = false
		default:
			right[c] = t.numericColumn(c)
		}
	}
	for _, row := range t.Rows {
		for c, cell := range row {
			widths[c] = max(widths[c], textWidth(cell))
		}
	}

	bw := bufio.NewWriter(w)
	if t.Title != "" {
		bw.WriteString(t.Title)
		bw.WriteByte('\n')
	}
	writeCells(bw, headers, widths, right)
	rules := make([]string, len(widths))
	for c, wd := range widths {
		rules[c] = strings.Repeat("-", wd)
	}
	writeCells(bw, rules, widths, right)
	for _, row := range t.Rows {
		writeCells(bw, row, widths, right)
	}
	for _, n := range t.Notes {
		bw.WriteString(n)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// numericColumn reports whether every non-empty cell of column c is a
// number.
func (t *Table) numericColumn(c int) bool {
	seen := false
	for _, row := range t.Rows {
		if c >= len(row) || row[c] == "" {
			continue
		}
		if !isNumeric(row[c]) {
			return false
		}
		seen = true
	}
	return seen
}

// isNumeric reports whether s reads as a number: digits with optional
// sign, thousands separators, decimal point, exponent or trailing percent
// sign, or one of NaN, +Inf, -Inf, or a dash standing for "no value".
func isNumeric(s string) bool {
	s = strings.TrimSpace(s)
	if s == "-" || s == "—" {
		return true
	}
	s = strings.TrimSuffix(s, "%")
	s = strings.ReplaceAll(s, ",", "")
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// writeCells writes one line of cells padded to widths, trimming trailing
// blanks so lines end cleanly.
func writeCells(bw *bufio.Writer, cells []string, widths []int, right []bool) {
	var b strings.Builder
	for c, wd := range widths {
		cell := ""
		if c < len(cells) {
			cell = cells[c]
		}
		if c > 0 {
			b.WriteString(columnGap)
		}
		pad := strings.Repeat(" ", wd-textWidth(cell))
		if right[c] {
			b.WriteString(pad)
			b.WriteString(cell)
		} else {
			b.WriteString(cell)
			b.WriteString(pad)
		}
	}
	bw.WriteString(strings.TrimRight(b.String(), " "))
	bw.WriteByte('\n')
}

// textWidth is the width of s in terminal cells, counting one per rune
// (good enough for the units and names fabemu prints, such as "µs").
func textWidth(s string) int {
	return utf8.RuneCountInString(s)
}

// KV is one line of a [Section]: a key, a formatted value and its unit.
type KV struct {
	Key   string
	Value string
	Unit  string
}

// Section is a titled list of key/value lines for summaries:
//
//	Summary
//	  trace execution time  12,345,678 ns
//	  accepted traffic            0.87 bytes/ns
//	  delivery mode           adaptive
//
// Keys are left-aligned, values right-aligned and followed by their unit.
type Section struct {
	// Title, if not empty, is printed above the items, which are then
	// indented by two spaces.
	Title string
	// Items are the section's lines in order.
	Items []KV
}

// Add appends a line to the section.
func (s *Section) Add(key, value, unit string) {
	s.Items = append(s.Items, KV{Key: key, Value: value, Unit: unit})
}

// Write renders the section to w.
func (s *Section) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	indent := ""
	if s.Title != "" {
		bw.WriteString(s.Title)
		bw.WriteByte('\n')
		indent = "  "
	}
	kw, vw := 0, 0
	for _, it := range s.Items {
		kw = max(kw, textWidth(it.Key))
		vw = max(vw, textWidth(it.Value))
	}
	for _, it := range s.Items {
		var b strings.Builder
		b.WriteString(indent)
		b.WriteString(it.Key)
		b.WriteString(strings.Repeat(" ", kw-textWidth(it.Key)))
		b.WriteString(columnGap)
		b.WriteString(strings.Repeat(" ", vw-textWidth(it.Value)))
		b.WriteString(it.Value)
		if it.Unit != "" {
			b.WriteString(" ")
			b.WriteString(it.Unit)
		}
		bw.WriteString(strings.TrimRight(b.String(), " "))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WriteSections renders sections one after another, separated by blank
// lines.
func WriteSections(w io.Writer, sections ...Section) error {
	for i := range sections {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := sections[i].Write(w); err != nil {
			return err
		}
	}
	return nil
}
