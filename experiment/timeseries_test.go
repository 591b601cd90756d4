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
			if name == "paper000-corner2" {
				checkStagePlots(t, res, rows)
			}
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

// checkStagePlots: paper000-corner2 measures run.stage_series, so --plot
// also writes each row's link utilisation per stage (PATH-stages-ROW.svg)
// with the 64-host MIN's six link classes in the legend, and the series
// show the tree: the 16 hot sources start at 80 us, so the injection links
// are busier during the tree (80-97 us) than before it (20-80 us), by
// 0.05 at least (16 of 64 hosts start at the full rate). Not under
// RECN-IQ: its NIC SAQs, stopped by Xoff, hold the hot packets at the
// NIC (measured 0.77 -> 0.80).
func checkStagePlots(t *testing.T, res *Result, rows []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c2.svg")
	files, err := res.WritePlot(path)
	if err != nil {
		t.Fatal(err)
	}
	classes := []string{"injection", "up 0-1", "up 1-2", "down 2-1", "down 1-0", "ejection"}
	for _, r := range res.Rows {
		st := r.sim.Stages
		if st == nil || strings.Join(st.Classes, ",") != strings.Join(classes, ",") {
			t.Fatalf("row %s: stage series %+v", r.Name, st)
		}
		for c := range st.Classes {
			if st.Links[c] != 64 || len(st.Utilisation[c]) != len(st.TimeUs) {
				t.Fatalf("row %s class %s: %d links, %d of %d bins", r.Name, st.Classes[c], st.Links[c], len(st.Utilisation[c]), len(st.TimeUs))
			}
		}
		win := func(from, to float64) float64 {
			sum, n := 0.0, 0
			for i, tu := range st.TimeUs {
				if tu >= from && tu < to {
					sum, n = sum+st.Utilisation[0][i], n+1
				}
			}
			return sum / float64(n)
		}
		if before, tree := win(20, 80), win(80, 97); r.Name != "RECN-IQ" && tree < before+0.05 {
			t.Errorf("row %s: injection links busy %.3f during the tree, %.3f before: the hot sources do not show", r.Name, tree, before)
		}
	}
	for _, row := range rows {
		want := strings.TrimSuffix(path, ".svg") + "-stages-" + row + ".svg"
		found := false
		for _, f := range files {
			found = found || f == want
		}
		if !found {
			t.Errorf("no stage plot %s among %v", want, files)
			continue
		}
		b, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		if svg := html.UnescapeString(string(b)); !strings.Contains(svg, "Link utilisation per stage, "+row) {
			t.Errorf("%s lacks its title", want)
		}
		var legend []string
		for _, c := range classes {
			legend = append(legend, c+" (64 links)")
		}
		checkLegendOutside(t, want, axisLabels["stage_util"], legend)
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
	if err != nil || len(files) == 0 || files[0] != path {
		t.Fatalf("plot: files %v, error %v", files, err)
	}
	checkLegendOutside(t, path, "network throughput (bytes/ns)", rows)
}

// checkLegendOutside checks that the SVG at path has the x axis label
// "time (µs)" and ylabel, and that every legend entry sits right of the x
// axis' end, outside the data.
func checkLegendOutside(t *testing.T, path, ylabel string, entries []string) {
	t.Helper()
	svg, err := os.ReadFile(path)
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
	for _, want := range []string{"time (µs)", ylabel} {
		if _, ok := texts[want]; !ok {
			t.Errorf("plot %s has no axis label %q; its texts: %v", path, want, texts)
		}
	}
	for _, r := range entries {
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
