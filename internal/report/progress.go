package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"golang.org/x/term"
)

// Progress draws a single, self-updating progress line on a terminal:
//
//	replay [########------------]  41.7%  1.25M/3M requests  412k requests/s  ETA 4s
//
// The line is redrawn in place (carriage return) at most ten times a
// second, and only when the writer is a terminal. When it is not (a pipe,
// a file, a CI log) Progress writes nothing at all: commands report their
// results separately, and logs stay free of progress spam. A command's
// --progress asks for it anyway (NewProgressForced): on a writer that is
// not a terminal it then writes whole lines, at most one every
// progressLineInterval.
//
// Events, when given (SetEvents), add the simulator's events per second;
// a note (SetNote) adds what the count does not say (the simulated time of
// a replay counted in requests).
//
// Update is cheap enough to call for every event: it reads the wall clock
// only every so many calls, adapting the stride so that the clock is read
// about once per redraw interval. Progress is an I/O-edge component and
// may read the clock; it must never be called from inside the simulation
// model's logic except through a callback the edge provides.
//
// A Progress is for use by one goroutine. A nil *Progress is valid and
// does nothing, so callers can disable progress by leaving it nil.
type Progress struct {
	w           io.Writer
	label, unit string
	total       float64
	tty         bool
	width       int // terminal width in columns
	now         func() time.Time

	start    time.Time
	lastDraw time.Time
	done     float64
	calls    uint64 // Update calls since the clock was last read
	stride   uint64 // read the clock every stride calls
	drawn    int    // length in runes of the line on screen, 0 if none
	finished bool
	lines    bool   // not a terminal, forced: whole lines, no redraw
	events   uint64 // simulator events so far (SetEvents)
	counted  bool   // SetEvents was called
	note     func() string
}

const (
	// progressInterval is the minimum time between redraws.
	progressInterval = 100 * time.Millisecond
	// maxProgressStride bounds how many Update calls may pass between
	// clock reads.
	maxProgressStride = 1 << 16
	// progressBarWidth is the width of the bar between brackets.
	progressBarWidth = 20
	// progressLineInterval is the minimum time between two lines when
	// progress is forced on a writer that is not a terminal.
	progressLineInterval = 2 * time.Second
)

// NewProgress returns a Progress drawing on w (normally os.Stderr) with
// the given label, for a job of total units (e.g. requests, bytes,
// simulated µs). A total of zero or less means unknown: the line then
// shows the count and rate only, without bar, percentage or ETA. w counts
// as a terminal if it has an Fd method (as *os.File does) and
// term.IsTerminal reports true for that descriptor.
func NewProgress(w io.Writer, label string, total float64, unit string) *Progress {
	tty, width := false, 0
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		fd := int(f.Fd())
		if term.IsTerminal(fd) {
			tty = true
			if cols, _, err := term.GetSize(fd); err == nil {
				width = cols
			}
		}
	}
	return newProgress(w, label, total, unit, tty, width, time.Now)
}

// NewProgressForced is NewProgress, or when force is set and w is not a
// terminal, a Progress writing a whole line at most every 2 s (a
// command's --progress, for a log).
func NewProgressForced(w io.Writer, label string, total float64, unit string, force bool) *Progress {
	p := NewProgress(w, label, total, unit)
	if force && !p.tty {
		p = newProgress(w, label, total, unit, true, 1<<16, time.Now)
		p.lines = true
		p.lastDraw = p.start.Add(-progressLineInterval) // the first Update writes a line
	}
	return p
}

// SetEvents records how many events the simulator has run, for an
// events-per-second figure on the line.
func (p *Progress) SetEvents(n uint64) {
	if p != nil {
		p.events, p.counted = n, true
	}
}

// SetNote sets a function whose text ends the line; it is called only
// when the line is drawn.
func (p *Progress) SetNote(f func() string) {
	if p != nil {
		p.note = f
	}
}

func newProgress(w io.Writer, label string, total float64, unit string, tty bool, width int, now func() time.Time) *Progress {
	if width <= 0 {
		width = 80
	}
	p := &Progress{w: w, label: label, total: total, unit: unit, tty: tty, width: width, now: now, stride: 1}
	if tty {
		p.start = now()
		p.lastDraw = p.start
	}
	return p
}

// Update records that done units of the total are complete and redraws
// the line if the last redraw is at least 100 ms old.
func (p *Progress) Update(done float64) {
	if p == nil || !p.tty || p.finished {
		return
	}
	p.done = done
	p.calls++
	if p.calls < p.stride {
		return
	}
	p.calls = 0
	now := p.now()
	since := now.Sub(p.lastDraw)
	interval := progressInterval
	if p.lines {
		interval = progressLineInterval
	}
	if since < interval {
		// Read the clock too early: read it less often.
		if p.stride < maxProgressStride {
			p.stride *= 2
		}
		return
	}
	if since > 2*interval && p.stride > 1 {
		// Updates have slowed down: read the clock more often.
		p.stride /= 2
	}
	p.draw(now)
}

// Done erases the progress line, leaving the cursor at the start of an
// empty line for whatever the command prints next. Later Updates do
// nothing.
func (p *Progress) Done() {
	if p == nil || p.finished {
		return
	}
	p.finished = true
	if p.tty && !p.lines && p.drawn > 0 {
		fmt.Fprint(p.w, "\r"+strings.Repeat(" ", p.drawn)+"\r")
		p.drawn = 0
	}
}

// draw writes the line for time now, padding over any longer previous
// line.
func (p *Progress) draw(now time.Time) {
	p.lastDraw = now
	line := p.line(now.Sub(p.start))
	if p.lines {
		fmt.Fprintln(p.w, line)
		return
	}
	n := textWidth(line)
	pad := ""
	if p.drawn > n {
		pad = strings.Repeat(" ", p.drawn-n)
	}
	fmt.Fprint(p.w, "\r"+line+pad)
	p.drawn = n
}

// line renders the progress line for the given elapsed time, fitted to
// the terminal width (without the last column, so the terminal never
// wraps).
func (p *Progress) line(elapsed time.Duration) string {
	known := p.total > 0 && !math.IsInf(p.total, 0)
	rate := math.NaN()
	if s := elapsed.Seconds(); s > 0 {
		rate = p.done / s
	}
	unit := ""
	if p.unit != "" {
		unit = " " + p.unit
	}
	var parts []string
	if p.label != "" {
		parts = append(parts, p.label)
	}
	bar := ""
	if known {
		frac := min(max(p.done/p.total, 0), 1)
		fill := int(frac * progressBarWidth)
		bar = "[" + strings.Repeat("#", fill) + strings.Repeat("-", progressBarWidth-fill) + "]"
		parts = append(parts, bar, fmt.Sprintf("%5.1f%%", frac*100),
			compactNumber(p.done)+"/"+compactNumber(p.total)+unit)
	} else {
		parts = append(parts, compactNumber(p.done)+unit)
	}
	if !math.IsNaN(rate) {
		parts = append(parts, compactNumber(rate)+unit+"/s")
	}
	if s := elapsed.Seconds(); p.counted && s > 0 {
		parts = append(parts, compactNumber(float64(p.events)/s)+" events/s")
	}
	if p.note != nil {
		if n := p.note(); n != "" {
			parts = append(parts, n)
		}
	}
	if known && rate > 0 && p.done < p.total {
		parts = append(parts, "ETA "+formatETA((p.total-p.done)/rate))
	} else if !known {
		parts = append(parts, formatETA(elapsed.Seconds())+" elapsed")
	}
	line := strings.Join(parts, "  ")
	limit := p.width - 1
	if textWidth(line) > limit && bar != "" {
		// Drop the bar before cutting text.
		line = strings.Replace(line, bar+"  ", "", 1)
	}
	if r := []rune(line); len(r) > limit {
		line = string(r[:max(limit, 0)])
	}
	return line
}

// compactNumber formats v with three significant digits and an SI suffix
// (k, M, G, T) for progress lines: 1234567 -> "1.23M".
func compactNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return FormatFloat(v, 3)
	case a >= 999.5e9: // thresholds so that rounding never shows "1,000k"
		return FormatFloat(v/1e12, 3) + "T"
	case a >= 999.5e6:
		return FormatFloat(v/1e9, 3) + "G"
	case a >= 999.5e3:
		return FormatFloat(v/1e6, 3) + "M"
	case a >= 999.5:
		return FormatFloat(v/1e3, 3) + "k"
	}
	return FormatFloat(v, 3)
}

// formatETA renders a number of seconds as "45s", "3m05s", "2h07m" or,
// beyond 100 hours, ">100h".
func formatETA(sec float64) string {
	if !(sec >= 0) { // also NaN
		sec = 0
	}
	if sec >= 100*3600 {
		return ">100h"
	}
	s := int64(math.Round(sec))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
}
