package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgsvg"
)

func testSeries(n, points int) []Series {
	var ss []Series
	for i := range n {
		s := Series{Name: fmt.Sprintf("policy %d", i)}
		for k := range points {
			x := float64(k) / float64(max(points-1, 1))
			s.X = append(s.X, x)
			s.Y = append(s.Y, 800+100*float64(i)+3000*math.Pow(x, 6))
		}
		ss = append(ss, s)
	}
	return ss
}

func checkSVG(t *testing.T, path string, wantText ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "<?xml") && !strings.HasPrefix(s, "<svg") {
		t.Errorf("%s does not start like SVG: %.40q", path, s)
	}
	if !strings.Contains(s, "</svg>") {
		t.Errorf("%s has no closing </svg>", path)
	}
	for _, w := range wantText {
		if !strings.Contains(s, w) {
			t.Errorf("%s does not contain %q", path, w)
		}
	}
}

func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s lacks the PNG signature", path)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != w || cfg.Height != h {
		t.Errorf("%s is %dx%d, want %dx%d", path, cfg.Width, cfg.Height, w, h)
	}
}

func TestLinePlot(t *testing.T) {
	dir := t.TempDir()
	ss := testSeries(3, 200)
	svg := filepath.Join(dir, "latency.svg")
	if err := LinePlot(svg, "Latency vs load", "offered load", "latency p99 (ns)", ss, PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg, "Latency vs load", "latency p99 (ns)", "policy 2", "4,000", svgFontFallback)

	pngPath := filepath.Join(dir, "latency.PNG")
	if err := LinePlot(pngPath, "Latency vs load", "offered load", "latency (ns)", ss, PlotOptions{LogY: true}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, pngPath, 800, 500)

	small := filepath.Join(dir, "small.png")
	if err := LinePlot(small, "", "x", "y", ss, PlotOptions{WidthPx: 400, HeightPx: 300, Legend: LegendNone}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, small, 400, 300)
	assertOnly(t, dir, "latency.PNG", "latency.svg", "small.png")
}

func TestLinePlotVariants(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		series []Series
		opts   PlotOptions
	}{
		{"single point", []Series{{Name: "a", X: []float64{1}, Y: []float64{2}}}, PlotOptions{}},
		{"single point log", []Series{{Name: "a", X: []float64{1}, Y: []float64{2}}}, PlotOptions{LogY: true}},
		{"flat log", []Series{{X: []float64{1, 2, 3}, Y: []float64{5, 5, 5}}}, PlotOptions{LogY: true}},
		{"wide log range", []Series{{Name: "a", X: []float64{0, 1, 2}, Y: []float64{1e-3, 1, 1e9}}}, PlotOptions{LogY: true}},
		{"many series", testSeries(11, 5), PlotOptions{}},
		{"limits", testSeries(2, 50), PlotOptions{XMin: new(0.5), YMin: new(0.0), YMax: new(5000.0)}},
		{"log limits", testSeries(2, 50), PlotOptions{LogY: true, YMin: new(100.0)}},
		{"negative values", []Series{{Name: "d", X: []float64{-3, 0, 3}, Y: []float64{-1e6, 0, 2e6}}}, PlotOptions{}},
		{"embedded fonts", testSeries(1, 3), PlotOptions{EmbedFonts: true}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("p%d.svg", i))
			if err := LinePlot(path, tt.name, "x", "y", tt.series, tt.opts); err != nil {
				t.Fatal(err)
			}
			checkSVG(t, path)
			if tt.opts.EmbedFonts {
				checkSVG(t, path, "@font-face")
			}
		})
	}
}

func TestLinePlotErrors(t *testing.T) {
	dir := t.TempDir()
	good := testSeries(1, 3)
	tests := []struct {
		name   string
		file   string
		series []Series
		opts   PlotOptions
		want   string
	}{
		{"pdf", "p.pdf", good, PlotOptions{}, `unsupported file extension ".pdf"`},
		{"no extension", "p", good, PlotOptions{}, `unsupported file extension ""`},
		{"stdout", "-", good, PlotOptions{}, "unsupported file extension"},
		{"no series", "p.svg", nil, PlotOptions{}, "no series"},
		{"empty series", "p.svg", []Series{good[0], {Name: "idle"}}, PlotOptions{}, `series "idle" has no points`},
		{"length mismatch", "p.svg", []Series{{X: []float64{1, 2}, Y: []float64{1}}}, PlotOptions{}, `series "#1" has 2 x values and 1 y values`},
		{"NaN y", "p.png", []Series{{Name: "l", X: []float64{1, 2}, Y: []float64{1, math.NaN()}}}, PlotOptions{}, `series "l" point 2 has y = NaN`},
		{"Inf x", "p.svg", []Series{{Name: "l", X: []float64{math.Inf(1)}, Y: []float64{1}}}, PlotOptions{}, "point 1 has x = +Inf"},
		{"log of zero", "p.svg", []Series{{Name: "l", X: []float64{1, 2}, Y: []float64{1, 0}}}, PlotOptions{LogY: true}, "log scale needs y > 0"},
		{"log min", "p.svg", good, PlotOptions{LogY: true, YMin: new(0.0)}, "not positive"},
		{"inverted limits", "p.svg", good, PlotOptions{XMin: new(2.0), XMax: new(1.0)}, "x axis: minimum 2 is not below maximum 1"},
		{"NaN limit", "p.svg", good, PlotOptions{YMax: new(math.NaN())}, "y axis: maximum is NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := LinePlot(filepath.Join(dir, tt.file), "t", "x", "y", tt.series, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if err := LinePlot(filepath.Join(dir, "p.svg"), "t", "x", "y", nil, PlotOptions{}); !errors.Is(err, ErrNoData) {
		t.Errorf("err = %v, want ErrNoData", err)
	}
	assertOnly(t, dir)
}

func TestBarPlot(t *testing.T) {
	dir := t.TempDir()
	bars := []Bar{
		{Label: "torus DOR", Value: 1234567}, {Label: "torus adaptive 256 KB", Value: 987654},
		{Label: "fat tree", Value: 876543.2}, {Label: "irregular 16 switches", Value: 1.5e6},
	}
	svg := filepath.Join(dir, "exec.svg")
	if err := BarPlot(svg, "Trace execution time", "execution time (ms)", bars, PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, svg, "Trace execution time", "torus adaptive 256 KB", "1,234,567", "876,543")
	pngPath := filepath.Join(dir, "exec.png")
	if err := BarPlot(pngPath, "Trace execution time", "execution time (ms)", bars, PlotOptions{}); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, pngPath, 800, 500)

	for i, bs := range [][]Bar{
		{{Label: "only", Value: 3}},
		{{Label: "zero", Value: 0}},
		{{Label: "up", Value: 3}, {Label: "down", Value: -1.5}},
		{{Label: "a", Value: 1}, {Label: "b", Value: 2}},
	} {
		path := filepath.Join(dir, fmt.Sprintf("b%d.svg", i))
		if err := BarPlot(path, "", "v", bs, PlotOptions{YMax: new(10.0)}); err != nil {
			t.Errorf("bars %v: %v", bs, err)
			continue
		}
		checkSVG(t, path)
	}
}

// TestBarPlotRanges: bars with a range get an error bar (drawn as extra
// paths), the axis reaches the top of the range, and the value label
// sits above it.
func TestBarPlotRanges(t *testing.T) {
	dir := t.TempDir()
	plain := []Bar{{Label: "DET", Value: 4}, {Label: "Adap-OOO", Value: 3}}
	ranged := []Bar{{Label: "DET", Value: 4, Range: true, Low: 3.5, High: 37}, {Label: "Adap-OOO", Value: 3, Range: true, Low: 1, High: 5}}
	count := func(bars []Bar) (int, string) {
		path := filepath.Join(dir, "r.svg")
		if err := BarPlot(path, "t", "time (ms)", bars, PlotOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "<path"), string(b)
	}
	n0, svg0 := count(plain)
	n1, svg1 := count(ranged)
	// Two error bars: a vertical line and two caps each.
	if n1 < n0+2 {
		t.Errorf("%d paths with ranges, %d without: want the error bars drawn", n1, n0)
	}
	// The y axis of the ranged plot reaches the top of DET's range (37):
	// a tick at 40 exists there and not on the plain plot (max 4).
	if !strings.Contains(svg1, ">40<") || strings.Contains(svg0, ">40<") {
		t.Errorf("the y axis does not follow the range tops")
	}
}

func TestBarPlotErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		file string
		bars []Bar
		opts PlotOptions
		want string
	}{
		{"extension", "b.jpg", []Bar{{Label: "a", Value: 1}}, PlotOptions{}, "unsupported file extension"},
		{"no bars", "b.svg", nil, PlotOptions{}, "no bars"},
		{"NaN", "b.png", []Bar{{Label: "a", Value: 1}, {Label: "b", Value: math.NaN()}}, PlotOptions{}, `bar 2 ("b") has value NaN`},
		{"log", "b.svg", []Bar{{Label: "a", Value: 1}}, PlotOptions{LogY: true}, "log scale is not supported"},
		{"limits", "b.svg", []Bar{{Label: "a", Value: 1}}, PlotOptions{YMin: new(5.0), YMax: new(1.0)}, "not below maximum"},
		{"range below value", "b.svg", []Bar{{Label: "a", Value: 1, Range: true, Low: 2, High: 3}}, PlotOptions{}, `bar 1 ("a"): range 2..3 must be finite and hold the value 1`},
		{"range NaN", "b.svg", []Bar{{Label: "a", Value: 1, Range: true, Low: 0, High: math.NaN()}}, PlotOptions{}, "must be finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := BarPlot(filepath.Join(dir, tt.file), "t", "y", tt.bars, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	assertOnly(t, dir)
}

func TestLogTicks(t *testing.T) {
	labels := func(ts []plot.Tick) string {
		var ls []string
		for _, t := range ts {
			if t.Label != "" {
				ls = append(ls, t.Label)
			}
		}
		return strings.Join(ls, " ")
	}
	tests := []struct {
		lo, hi float64
		want   string
	}{
		{1, 100, "1 2 5 10 20 50 100"},
		{800, 4400, "800 900 1,000 2,000 3,000 4,000"},
		{1, 1e5, "1 10 100 1,000 10,000 100,000"},
		{1e-3, 1e9, "0.001 0.1 10 1,000 100,000 10,000,000 1,000,000,000"},
		// No power-of-ten multiple inside: linear ticks.
		{1100, 1900, "1,200 1,500 1,800"},
		{1.1, 1.2, "1.11 1.14 1.17 1.2"},
		{0, 10, ""},
	}
	for _, tt := range tests {
		got := labels(logTicks{}.Ticks(tt.lo, tt.hi))
		if got != tt.want {
			t.Errorf("logTicks(%v, %v) labels %q, want %q", tt.lo, tt.hi, got, tt.want)
		}
	}
}

func TestReadableTicks(t *testing.T) {
	ts := readableTicks{plot.DefaultTicks{}}.Ticks(-0.3, 0.3)
	for _, tk := range ts {
		if tk.Label == "" {
			continue
		}
		if len(tk.Label) > 5 {
			t.Errorf("tick %v labelled %q", tk.Value, tk.Label)
		}
	}
}

// TestLegendOutsideData checks the layout of a time-series line plot like
// the corner-case figures (curves that dip to the bottom right, six named
// series, a long title): the y label and its unit are in the SVG, and the
// legend's column, and every legend entry as drawn, lie right of the data
// area, so no curve is hidden behind the legend.
func TestLegendOutsideData(t *testing.T) {
	var ss []Series
	for i, name := range []string{"IQ", "4Q", "VOQsw", "VOQnet", "RECN", "RECN-IQ"} {
		s := Series{Name: name}
		for k := range 160 {
			tus := 100 + 10*float64(k)
			y := 44.0
			if tus >= 800 && i < 3 { // a congestion tree that stays
				y = 10 + 5*float64(i)
			}
			s.X, s.Y = append(s.X, tus), append(s.Y, y)
		}
		ss = append(ss, s)
	}
	const title, xlabel, ylabel = "Network throughput, corner case 2 (paper 000 Fig. 2.b)", "time (µs)", "network throughput (bytes/ns)"
	opts := PlotOptions{YMin: new(0.0), WidthPx: 720, HeightPx: 400}
	p, err := linePlot(title, xlabel, ylabel, ss, opts)
	if err != nil {
		t.Fatal(err)
	}
	w, h := plotSize(opts)
	c := margin(vgsvg.NewWith(vgsvg.UseWH(w, h)))
	_, plotC, legendC, ok := plotLayout(p, c)
	if !ok {
		t.Fatal("no legend laid out for six named series")
	}
	data := p.DataCanvas(plotC).Rectangle
	if data.Size().X < w/2 || data.Size().Y < h/2 {
		t.Errorf("data area %v is less than half the %vx%v canvas", data.Size(), w, h)
	}
	if legendC.Min.X < data.Max.X+legendGap {
		t.Errorf("legend column starts at x=%v, inside the data area or its gap (data area ends at %v)", legendC.Min.X, data.Max.X)
	}
	if legendC.Max.X > c.Max.X || legendC.Max.Y > c.Max.Y {
		t.Errorf("legend column %v leaves the canvas %v", legendC.Rectangle, c.Rectangle)
	}
	if lr := p.Legend.Rectangle(legendC); lr.Size().Y > legendC.Size().Y || lr.Size().X > legendC.Size().X+1e-9 {
		t.Errorf("legend %v does not fit its column %v", lr.Size(), legendC.Size())
	}

	img, err := renderPlot(p, "svg", opts)
	if err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, img)
	for _, want := range []string{title, xlabel, ylabel} {
		if _, ok := texts[want]; !ok {
			t.Errorf("SVG has no text %q; texts: %v", want, texts)
		}
	}
	// The title (x is where its text starts) must fit the canvas.
	if tw := p.Title.TextStyle.Rectangle(title).Size().X; vg.Length(texts[title]) < c.Min.X || vg.Length(texts[title])+tw > c.Max.X {
		t.Errorf("title drawn from x=%v, %v wide, leaves the canvas %v", texts[title], tw, c.Rectangle)
	}
	for _, s := range ss {
		x, ok := texts[s.Name]
		if !ok {
			t.Errorf("legend entry %q not drawn", s.Name)
			continue
		}
		if vg.Length(x) < data.Max.X {
			t.Errorf("legend entry %q drawn at x=%v, inside the data area (which ends at x=%v)", s.Name, x, data.Max.X)
		}
	}
}

// svgTexts returns the x coordinate (in points, as vgsvg writes them) of
// each text element of an SVG made by renderPlot.
func svgTexts(t *testing.T, svg []byte) map[string]float64 {
	t.Helper()
	re := regexp.MustCompile(`<text x="([-0-9.e]+)"[^>]*>\s*([^<]*?)\s*</text>`)
	out := map[string]float64{}
	for _, m := range re.FindAllSubmatch(svg, -1) {
		x, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Fatalf("text x %q: %v", m[1], err)
		}
		out[html.UnescapeString(string(m[2]))] = x
	}
	if len(out) == 0 {
		t.Fatalf("no text elements in the SVG: %.200q", svg)
	}
	return out
}
