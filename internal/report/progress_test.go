package report

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeClock is a settable clock for Progress tests.
type fakeClock struct {
	t     time.Time
	reads int
}

func (c *fakeClock) now() time.Time { c.reads++; return c.t }

func TestProgressSilentWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, "replay", 100, "requests")
	for i := range 100 {
		p.Update(float64(i))
	}
	p.Done()
	if buf.Len() != 0 {
		t.Errorf("wrote %q to a buffer", buf.String())
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p = NewProgress(w, "replay", 100, "requests")
	if p.tty {
		t.Fatal("a pipe counts as a terminal")
	}
	p.Update(50)
	p.Done()
	w.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	if got.Len() != 0 {
		t.Errorf("wrote %q to a pipe", got.String())
	}
}

func TestProgressNil(t *testing.T) {
	var p *Progress
	p.Update(1)
	p.Done()
}

func TestProgressThrottleAndDone(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var buf bytes.Buffer
	p := newProgress(&buf, "replay", 3e6, "requests", true, 120, clk.now)

	// Many fast calls within one interval: nothing drawn, and the clock is
	// read far less often than once per call.
	for i := range 100000 {
		p.Update(float64(i))
	}
	if buf.Len() != 0 {
		t.Fatalf("drew %q before 100 ms passed", buf.String())
	}
	if clk.reads > 40 {
		t.Errorf("clock read %d times for 100000 updates", clk.reads)
	}

	// After the interval the line appears on the next clock read.
	clk.t = clk.t.Add(2 * time.Second)
	for p.calls != 0 || buf.Len() == 0 {
		p.Update(1.25e6)
		if p.calls > maxProgressStride {
			t.Fatal("stride exceeded its bound")
		}
	}
	got := buf.String()
	want := "\rreplay  [########------------]   41.7%  1.25M/3M requests  625k requests/s  ETA 3s"
	if got != want {
		t.Errorf("line:\n%q\nwant\n%q", got, want)
	}

	buf.Reset()
	p.Done()
	if want := "\r" + strings.Repeat(" ", textWidth(got)-1) + "\r"; buf.String() != want {
		t.Errorf("Done wrote %q, want %q", buf.String(), want)
	}
	buf.Reset()
	clk.t = clk.t.Add(time.Minute)
	p.Update(3e6)
	p.Done()
	if buf.Len() != 0 {
		t.Errorf("wrote %q after Done", buf.String())
	}
}

func TestProgressSlowUpdatesDrawEachTime(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	var buf bytes.Buffer
	p := newProgress(&buf, "sim", 0, "µs", true, 80, clk.now)
	for i := range 5 {
		clk.t = clk.t.Add(time.Second)
		p.Update(float64(i+1) * 1000)
	}
	lines := strings.Split(buf.String(), "\r")[1:]
	if len(lines) != 5 {
		t.Fatalf("drew %d lines, want 5: %q", len(lines), buf.String())
	}
	if want := "sim  5k µs  1k µs/s  5s elapsed"; lines[4] != want {
		t.Errorf("last line %q, want %q", lines[4], want)
	}
}

func TestProgressLineFitsWidth(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := newProgress(&bytes.Buffer{}, "a rather long label for a job", 1e9, "bytes", true, 50, clk.now)
	p.done = 5e8
	line := p.line(10 * time.Second)
	if textWidth(line) > 49 {
		t.Errorf("line %q is %d wide, terminal 50", line, textWidth(line))
	}
	if strings.Contains(line, "[") {
		t.Errorf("bar kept in a narrow terminal: %q", line)
	}
}

func TestCompactNumberAndETA(t *testing.T) {
	nums := []struct {
		v    float64
		want string
	}{
		{0, "0"}, {12.34, "12.3"}, {999.4, "999"}, {999.6, "1k"}, {1234, "1.23k"},
		{999999, "1M"}, {2.5e9, "2.5G"}, {7e12, "7T"},
	}
	for _, tt := range nums {
		if got := compactNumber(tt.v); got != tt.want {
			t.Errorf("compactNumber(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
	etas := []struct {
		s    float64
		want string
	}{
		{-1, "0s"}, {0.4, "0s"}, {45, "45s"}, {185, "3m05s"}, {7620, "2h07m"}, {1e12, ">100h"},
	}
	for _, tt := range etas {
		if got := formatETA(tt.s); got != tt.want {
			t.Errorf("formatETA(%v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// TestProgressForcedLines: --progress on a writer that is not a terminal
// writes whole lines (no carriage returns), the first at once and then at
// most one every 2 s, with the events per second and the note; without
// force nothing is written.
func TestProgressForcedLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgressForced(&buf, "sim", 100, "us", false)
	p.SetEvents(10)
	p.Update(1)
	p.Done()
	if buf.Len() != 0 {
		t.Fatalf("unforced progress wrote %q", buf.String())
	}
	clk := &fakeClock{t: time.Unix(0, 0)}
	p = NewProgressForced(&buf, "sim", 100, "us", true)
	p.now, p.start = clk.now, clk.t
	p.lastDraw = p.start.Add(-progressLineInterval)
	p.SetNote(func() string { return "at 1ms simulated" })
	for i := range 10 {
		clk.t = clk.t.Add(500 * time.Millisecond)
		p.SetEvents(uint64(i+1) * 1000)
		p.Update(float64(i + 1))
	}
	p.Done()
	got := buf.String()
	if strings.Contains(got, "\r") {
		t.Errorf("carriage return in forced lines: %q", got)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) < 2 || len(lines) > 4 {
		t.Fatalf("%d lines over 5 s of updates every 0.5 s, want one at once and one per 2 s:\n%s", len(lines), got)
	}
	if want := "sim  [#-------------------]    8.0%  8/100 us  2 us/s  2k events/s  at 1ms simulated  ETA 46s"; lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}
}
