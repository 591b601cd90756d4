package experiment

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestQuickCorners runs the paper 000 corner-case experiments with
// --quick: rows named by mechanism, a throughput series per row covering
// the scaled tree (80-97 us), the queue state of each queue scheme (and
// RECN's and RECN-IQ's reports for their rows), and the time-series plot.
func TestQuickCorners(t *testing.T) {
	rows := []string{"IQ", "4Q", "VOQsw", "VOQnet", "RECN", "RECN-IQ"}
	queues := map[string]int{"IQ": 1, "4Q": 4, "VOQsw": 8, "VOQnet": 64}
	for _, name := range []string{"paper000-corner1", "paper000-corner2"} {
		t.Run(name, func(t *testing.T) {
			res := runQuick(t, name, rows)
			checkTimeseriesSVG(t, res, rows)
			for _, r := range res.Rows {
				s := r.Throughput
				if s == nil || s.Unit != "bytes/ns" || len(s.Values) != len(s.TimeUs) || len(s.Values) < 50 {
					t.Fatalf("row %s: throughput series %+v", r.Name, s)
				}
				if s.HotStartUs == nil || *s.HotStartUs != 80 || *s.HotEndUs != 97 {
					t.Errorf("row %s: hot window %v..%v, want 80..97 us", r.Name, s.HotStartUs, s.HotEndUs)
				}
				if m, ok := s.windowMean(20, 80); !ok || m < 10 {
					t.Errorf("row %s: throughput before the tree %g bytes/ns", r.Name, m)
				}
				if r.Name == "RECN" {
					if r.sim.RECN == nil {
						t.Errorf("row RECN: no RECN report")
					}
					continue
				}
				if r.Name == "RECN-IQ" {
					if r.sim.RECNIQ == nil {
						t.Errorf("row RECN-IQ: no RECN-IQ report")
					}
					continue
				}
				if q := r.sim.Queues; q == nil || q.QueuesPerInput != queues[r.Name] {
					t.Errorf("row %s: queues %+v, want %d per input", r.Name, q, queues[r.Name])
				}
			}
		})
	}
}

func TestTimeseriesPlotValidation(t *testing.T) {
	sim := strings.Replace(strings.Replace(goodYAML, "kind: replay", "kind: sim", 1), "columns: [time, waste, impr]", "columns: [throughput]", 1)
	cases := []struct{ name, yaml, wantErr string }{
		{"unknown series", strings.Replace(sim, "kind: bar, y: time", "kind: timeseries, y: speed", 1), `unknown time series "speed"`},
		{"on a replay", strings.Replace(goodYAML, "kind: bar, y: time", "kind: timeseries, y: throughput", 1), "only sim experiments"},
		{"on a sweep", strings.Replace(strings.Replace(sim, "kind: bar, y: time", "kind: timeseries, y: throughput", 1), "kind: sim", "kind: sim\nloads: [0.5]", 1), "not for a load sweep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), "tiny.yaml")
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

// checkTimeseriesSVG draws res's time-series plot as SVG and checks what
// a reader needs to lay it beside the paper's figure: both axis labels
// with their units, and a legend entry per row drawn right of the data
// area (right of the x axis line's end), not over the curves.
// internal/report's TestLegendOutsideData checks the layout itself.
func checkTimeseriesSVG(t *testing.T, res *Result, rows []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ts.svg")
	files, err := res.WritePlot(path)
	if err != nil || len(files) != 1 {
		t.Fatalf("plot: files %v, error %v", files, err)
	}
	svg, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]float64{}
	re := regexp.MustCompile(`<text x="([-0-9.e]+)"[^>]*>\s*([^<]*?)\s*</text>`)
	for _, m := range re.FindAllSubmatch(svg, -1) {
		x, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatalf("text x %q: %v", m[1], err)
		}
		texts[html.UnescapeString(string(m[2]))] = x
	}
	// The x axis is the longest horizontal black line (the grid is grey,
	// the legend's samples are short and coloured); its right end is the
	// data area's.
	axisEnd, axisLen := 0.0, 0.0
	line := regexp.MustCompile(`<path d="M([-0-9.e]+),([-0-9.e]+)L([-0-9.e]+),([-0-9.e]+)" style="fill:none;stroke:#000000;`)
	for _, m := range line.FindAllSubmatch(svg, -1) {
		var v [4]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(string(m[i+1]), 64)
		}
		if v[1] == v[3] && v[2]-v[0] > axisLen {
			axisEnd, axisLen = v[2], v[2]-v[0]
		}
	}
	if axisLen < 200 {
		t.Fatalf("no x axis line found in the SVG (longest %g points)", axisLen)
	}
	for _, want := range []string{"time (µs)", "network throughput (bytes/ns)"} {
		if _, ok := texts[want]; !ok {
			t.Errorf("plot has no axis label %q; its texts: %v", want, texts)
		}
	}
	for _, r := range rows {
		x, ok := texts[r]
		if !ok {
			t.Errorf("no legend entry %q", r)
		} else if x <= axisEnd {
			t.Errorf("legend entry %q at x=%g, left of the x axis' end at %g: it is over the data", r, x, axisEnd)
		}
	}
}

// TestAxisLabelsHaveUnits: every metric a plot may put on an axis has a
// label naming it and its unit in parentheses.
func TestAxisLabelsHaveUnits(t *testing.T) {
	keys := []string{}
	for k := range metrics {
		keys = append(keys, k)
	}
	for k := range seriesMetrics {
		keys = append(keys, k)
	}
	unit := regexp.MustCompile(`^[a-z][a-zA-Z ]+ \([^()]+\)$`)
	for _, k := range keys {
		if l := axisLabel(k); !unit.MatchString(l) {
			t.Errorf("metric %q: axis label %q has no name and unit", k, l)
		}
	}
}
