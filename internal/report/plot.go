package report

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Series is one named curve of a line plot. X and Y must have the same
// length.
type Series struct {
	// Name labels the series in the legend; an empty name leaves it out
	// of the legend.
	Name string
	X, Y []float64
}

// Bar is one bar of a bar plot: a category and its value.
type Bar struct {
	Label string
	Value float64
	// Range draws an error bar from Low to High over the bar (e.g. the
	// minimum and maximum over several runs whose mean is Value); the
	// value label then sits above the error bar.
	Range     bool
	Low, High float64
}

// LegendPosition places a plot's legend. Every position with a legend
// keeps it outside the data area, so that no curve is hidden behind it.
type LegendPosition int

const (
	// LegendRight is the default: the legend in a column to the right of
	// the plot area, its top level with the top of the data area. The plot
	// area narrows to make room for it.
	LegendRight LegendPosition = iota
	// LegendNone hides the legend.
	LegendNone
)

// PlotOptions adjusts a plot. The zero value gives an 800×500 pixel plot
// with linear axes fitted to the data and the legend to the right of the
// plot area.
//
// Axis limits are pointers so that each may be left unset; with Go 1.26
// write them as XMin: new(0.0).
type PlotOptions struct {
	// LogY uses a logarithmic Y axis; every Y value (and YMin) must then
	// be positive. Not available for bar plots.
	LogY bool
	// XMin, XMax, YMin, YMax fix the axis limits; nil means fitted to the
	// data. XMin and XMax do not apply to bar plots.
	XMin, XMax, YMin, YMax *float64
	// WidthPx and HeightPx are the image size in pixels at 96 dpi
	// (an SVG gets the same physical size); zero means 800 and 500.
	WidthPx, HeightPx int
	// Legend places the legend.
	Legend LegendPosition
	// EmbedFonts embeds the font in SVG output (about 0.5 MB more) so
	// the file renders identically everywhere. Without it, SVG text asks
	// for Liberation Sans and falls back to Arial, Helvetica or any
	// sans-serif font; Liberation Sans and Arial have the same metrics.
	// PNG output always uses the embedded font.
	EmbedFonts bool
}

// Plot image defaults and style.
const (
	defaultWidthPx  = 800
	defaultHeightPx = 500
	plotDPI         = 96
	// maxMarkers is how many markers a long series gets, spread evenly
	// along it, so that markers identify the curve without hiding it.
	maxMarkers = 20
)

// plotFont is the typeface of all plot text: gonum/plot embeds the
// Liberation fonts (registered in font.DefaultCache by package plot), so
// nothing depends on fonts installed on the machine.
var plotFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// seriesColors is the Okabe–Ito palette, distinguishable with the common
// forms of colour blindness, ordered so that the yellow, weak on white,
// comes last.
var seriesColors = []color.Color{
	color.RGBA{0x00, 0x72, 0xB2, 0xFF}, // blue
	color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, // vermillion
	color.RGBA{0x00, 0x9E, 0x73, 0xFF}, // bluish green
	color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, // reddish purple
	color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, // orange
	color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, // sky blue
	color.RGBA{0x00, 0x00, 0x00, 0xFF}, // black
	color.RGBA{0xC8, 0xB4, 0x00, 0xFF}, // darkened yellow
}

// seriesShapes are the marker shapes, one per series in turn.
var seriesShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.PlusGlyph{},
}

// seriesDashes are the line dash patterns; the pattern changes each time
// the colours wrap around, so series 9 does not look like series 1.
var seriesDashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(2), vg.Points(2)},
}

// ErrNoData is returned (wrapped) when a plot has nothing to draw.
var ErrNoData = errors.New("no data to plot")

// LinePlot draws series as lines with markers, a legend and a grid, and
// writes the plot to path as SVG or PNG according to its extension
// (".svg" or ".png", any letter case; anything else is an error). The file
// is written atomically, as [WriteFile] does.
//
// It returns an error, without writing anything, if there is no series,
// a series has no points, X and Y lengths differ, a value is NaN or
// infinite, a Y value is not positive on a log axis, an axis limit is
// inconsistent, or an axis label is empty: a reader must be able to tell
// what each axis measures and in which unit ("time (µs)"), so every line
// plot names both.
func LinePlot(path, title, xlabel, ylabel string, series []Series, opts PlotOptions) error {
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	p, err := linePlot(title, xlabel, ylabel, series, opts)
	if err != nil {
		return fmt.Errorf("report: plot %s: %w", path, err)
	}
	return savePlot(p, path, format, opts)
}

// linePlot builds the plot [LinePlot] draws.
func linePlot(title, xlabel, ylabel string, series []Series, opts PlotOptions) (*plot.Plot, error) {
	if strings.TrimSpace(xlabel) == "" || strings.TrimSpace(ylabel) == "" {
		return nil, fmt.Errorf("x label %q, y label %q: both axes need a label (with the unit)", xlabel, ylabel)
	}
	if err := checkSeries(series, opts.LogY); err != nil {
		return nil, err
	}
	p := newPlot(title, xlabel, ylabel)
	p.Add(gridLines(true))
	for i, s := range series {
		line, marks, err := seriesPlotters(s, i)
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
		p.Add(line, marks)
		if s.Name != "" {
			p.Legend.Add(s.Name, line, marks)
		}
	}
	if opts.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		if p.Y.Min == p.Y.Max { // a flat curve: give the log axis a decade
			p.Y.Min, p.Y.Max = p.Y.Min/math.Sqrt(10), p.Y.Max*math.Sqrt(10)
		}
	}
	if err := applyLimits(&p.X, opts.XMin, opts.XMax, false); err != nil {
		return nil, fmt.Errorf("x axis: %w", err)
	}
	if err := applyLimits(&p.Y, opts.YMin, opts.YMax, opts.LogY); err != nil {
		return nil, fmt.Errorf("y axis: %w", err)
	}
	p.X.Tick.Marker = readableTicks{p.X.Tick.Marker}
	if !opts.LogY { // logTicks labels its own ticks
		p.Y.Tick.Marker = readableTicks{p.Y.Tick.Marker}
	}
	placeLegend(p, opts.Legend)
	return p, nil
}

// BarPlot draws one bar per category with its value printed above it
// (e.g. trace execution time per configuration), and writes the plot to
// path as SVG or PNG according to its extension, as [LinePlot] does.
// Long or many category labels are slanted to stay legible. Of opts,
// LogY is refused and XMin, XMax are ignored.
func BarPlot(path, title, ylabel string, bars []Bar, opts PlotOptions) error {
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	if len(bars) == 0 {
		return fmt.Errorf("report: plot %s: %w: no bars", path, ErrNoData)
	}
	if opts.LogY {
		return fmt.Errorf("report: plot %s: log scale is not supported for bar plots", path)
	}
	values := make(plotter.Values, len(bars))
	labels := make([]string, len(bars))
	lo, hi := 0.0, 0.0
	longest := 0
	for i, b := range bars {
		if math.IsNaN(b.Value) || math.IsInf(b.Value, 0) {
			return fmt.Errorf("report: plot %s: bar %d (%q) has value %v", path, i+1, b.Label, b.Value)
		}
		values[i] = b.Value
		labels[i] = b.Label
		lo, hi = min(lo, b.Value), max(hi, b.Value)
		if b.Range {
			if bad := [2]float64{b.Low, b.High}; math.IsNaN(bad[0]) || math.IsNaN(bad[1]) || math.IsInf(bad[0], 0) || math.IsInf(bad[1], 0) || b.Low > b.Value || b.High < b.Value {
				return fmt.Errorf("report: plot %s: bar %d (%q): range %v..%v must be finite and hold the value %v", path, i+1, b.Label, b.Low, b.High, b.Value)
			}
			lo, hi = min(lo, b.Low), max(hi, b.High)
		}
		longest = max(longest, textWidth(b.Label))
	}

	w, _ := plotSize(opts)
	p := newPlot(title, "", ylabel)
	p.Add(gridLines(false))
	slot := (w - vg.Points(80)) / vg.Length(len(bars))
	chart, err := plotter.NewBarChart(values, min(slot*0.7, vg.Points(80)))
	if err != nil {
		return fmt.Errorf("report: plot %s: %w", path, err)
	}
	chart.Color = seriesColors[0]
	chart.LineStyle.Width = 0
	p.Add(chart)

	if lo < 0 {
		// Bars go both ways: draw the zero baseline they grow from.
		base, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 0}, {X: float64(len(bars)) - 0.5, Y: 0}})
		if err != nil {
			return fmt.Errorf("report: plot %s: %w", path, err)
		}
		base.Width = vg.Points(0.75)
		p.Add(base)
	}
	if err := addRanges(p, bars); err != nil {
		return fmt.Errorf("report: plot %s: %w", path, err)
	}
	if err := addValueLabels(p, bars); err != nil {
		return fmt.Errorf("report: plot %s: %w", path, err)
	}
	p.NominalX(labels...)
	p.Y.Padding = vg.Points(2)
	p.X.Min, p.X.Max = -0.5, float64(len(bars))-0.5
	if slant := float64(longest) * 6.5; vg.Points(slant) > slot {
		p.X.Tick.Label.Rotation = math.Pi / 6
		p.X.Tick.Label.XAlign = text.XRight
		p.X.Tick.Label.YAlign = text.YCenter
	}

	// Room above (and below) the bars for the value labels.
	span := hi - lo
	if span == 0 {
		span = 1
	}
	p.Y.Min, p.Y.Max = lo, hi
	if hi > 0 {
		p.Y.Max = hi + 0.1*span
	}
	if lo < 0 {
		p.Y.Min = lo - 0.1*span
	}
	if err := applyLimits(&p.Y, opts.YMin, opts.YMax, false); err != nil {
		return fmt.Errorf("report: plot %s: y axis: %w", path, err)
	}
	p.Y.Tick.Marker = readableTicks{p.Y.Tick.Marker}
	return savePlot(p, path, format, opts)
}

// addRanges draws the error bars of the bars that have a range.
func addRanges(p *plot.Plot, bars []Bar) error {
	var pts errorPoints
	for i, b := range bars {
		if b.Range {
			pts = append(pts, errorPoint{x: float64(i), y: b.Value, low: b.Value - b.Low, high: b.High - b.Value})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	eb, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return err
	}
	eb.LineStyle.Width = vg.Points(1)
	eb.CapWidth = vg.Points(8)
	p.Add(eb)
	return nil
}

// errorPoint is a bar's value and its distances to the range ends.
type errorPoint struct{ x, y, low, high float64 }

type errorPoints []errorPoint

func (e errorPoints) Len() int                        { return len(e) }
func (e errorPoints) XY(i int) (float64, float64)     { return e[i].x, e[i].y }
func (e errorPoints) YError(i int) (float64, float64) { return e[i].low, e[i].high }

// addValueLabels prints each bar's value just above it (below it for a
// negative value), above the top of its range if it has one.
func addValueLabels(p *plot.Plot, bars []Bar) error {
	var up, down plotter.XYLabels
	for i, b := range bars {
		xy := plotter.XY{X: float64(i), Y: b.Value}
		if b.Range && b.Value >= 0 {
			xy.Y = b.High
		} else if b.Range {
			xy.Y = b.Low
		}
		l := FormatFloat(b.Value, 4)
		if b.Value >= 0 {
			up.XYs, up.Labels = append(up.XYs, xy), append(up.Labels, l)
		} else {
			down.XYs, down.Labels = append(down.XYs, xy), append(down.Labels, l)
		}
	}
	for _, set := range []struct {
		d     plotter.XYLabels
		align text.YAlignment
		dy    vg.Length
	}{{up, text.YBottom, vg.Points(2)}, {down, text.YTop, -vg.Points(2)}} {
		if len(set.d.XYs) == 0 {
			continue
		}
		ls, err := plotter.NewLabels(set.d)
		if err != nil {
			return err
		}
		for i := range ls.TextStyle {
			ls.TextStyle[i].Font = font.From(plotFont, 10)
			ls.TextStyle[i].XAlign = text.XCenter
			ls.TextStyle[i].YAlign = set.align
		}
		ls.Offset = vg.Point{Y: set.dy}
		p.Add(ls)
	}
	return nil
}

// plotFormat returns "svg" or "png" for path's extension.
func plotFormat(path string) (string, error) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".svg", ".png":
		return ext[1:], nil
	}
	return "", fmt.Errorf("report: plot %s: unsupported file extension %q (want .svg or .png)", path, filepath.Ext(path))
}

// checkSeries validates line plot data before gonum/plot sees it.
func checkSeries(series []Series, logY bool) error {
	if len(series) == 0 {
		return fmt.Errorf("%w: no series", ErrNoData)
	}
	for i, s := range series {
		name := s.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("series %q has %d x values and %d y values", name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			return fmt.Errorf("%w: series %q has no points", ErrNoData, name)
		}
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			switch {
			case math.IsNaN(x) || math.IsInf(x, 0):
				return fmt.Errorf("series %q point %d has x = %v", name, j+1, x)
			case math.IsNaN(y) || math.IsInf(y, 0):
				return fmt.Errorf("series %q point %d has y = %v", name, j+1, y)
			case logY && y <= 0:
				return fmt.Errorf("series %q point %d has y = %v, but a log scale needs y > 0", name, j+1, y)
			}
		}
	}
	return nil
}

// seriesPlotters builds the line and the markers of series number i.
func seriesPlotters(s Series, i int) (*plotter.Line, *plotter.Scatter, error) {
	xys := make(plotter.XYs, len(s.X))
	for j := range s.X {
		xys[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return nil, nil, err
	}
	clr := seriesColors[i%len(seriesColors)]
	line.Color = clr
	line.Width = vg.Points(1.5)
	line.Dashes = seriesDashes[(i/len(seriesColors))%len(seriesDashes)]

	marked := xys
	if len(xys) > maxMarkers {
		marked = make(plotter.XYs, 0, maxMarkers)
		for k := range maxMarkers {
			// Spread evenly, offset per series so markers of
			// overlapping curves do not sit on top of each other.
			j := (k*(len(xys)-1) + (i%3)*(len(xys)-1)/(3*maxMarkers)) / (maxMarkers - 1)
			marked = append(marked, xys[min(j, len(xys)-1)])
		}
	}
	marks, err := plotter.NewScatter(marked)
	if err != nil {
		return nil, nil, err
	}
	marks.Color = clr
	marks.Shape = seriesShapes[i%len(seriesShapes)]
	marks.Radius = vg.Points(3)
	return line, marks, nil
}

// newPlot returns a plot with fabemu's fonts and labels.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(plotFont, 15)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(plotFont, 12)
		ax.Tick.Label.Font = font.From(plotFont, 11)
		ax.Padding = vg.Points(2)
	}
	p.Legend.TextStyle.Font = font.From(plotFont, 11)
	p.Legend.ThumbnailWidth = vg.Points(30)
	return p
}

// gridLines returns a light grid; vertical lines only if vertical is set.
func gridLines(vertical bool) *plotter.Grid {
	g := plotter.NewGrid()
	g.Horizontal.Color = color.Gray{Y: 0xDD}
	g.Horizontal.Width = vg.Points(0.5)
	g.Horizontal.Dashes = nil
	g.Vertical = g.Horizontal
	if !vertical {
		g.Vertical.Color = nil
	}
	return g
}

// placeLegend sets the legend's style for its column outside the data
// area (see [plotLayout]) or removes it.
func placeLegend(p *plot.Plot, pos LegendPosition) {
	if pos == LegendNone {
		p.Legend = plot.NewLegend() // no entries: nothing drawn
		return
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs, p.Legend.YOffs = 0, 0
	p.Legend.Padding = vg.Points(2)
}

// legendGap is the space between the plot area (the Y axis's right end
// and the rightmost markers) and the legend column.
var legendGap = vg.Points(12)

// plotLayout divides canvas c between the title, the plot (axes and
// data) and the legend: the title takes a strip across the top of c, as
// wide as c; with a legend, the plot gets the rest less a column on the
// right as wide as the widest legend entry, and the legend that column,
// its top level with the top of the data area. Without a legend, the plot
// gets all of the rest and legendC is the zero canvas. Drawing uses this
// layout, and the tests check it: the legend lies outside
// p.DataCanvas(plotC).
func plotLayout(p *plot.Plot, c draw.Canvas) (titleC, plotC, legendC draw.Canvas, hasLegend bool) {
	titleC, plotC = c, c
	if p.Title.Text != "" {
		top := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		plotC = draw.Crop(c, 0, 0, 0, -top)
	}
	legend := p.Legend
	if legend.Rectangle(c).Size().Y == 0 { // no entries
		return titleC, plotC, draw.Canvas{}, false
	}
	width := legend.Rectangle(c).Size().X
	legendC = draw.Crop(plotC, plotC.Size().X-width, 0, 0, 0)
	plotC = draw.Crop(plotC, 0, -(width + legendGap), 0, 0)
	return titleC, plotC, legendC, true
}

// drawPlot draws p on c as [plotLayout] lays it out: the title centred
// on the whole width, the legend outside the data area.
func drawPlot(p *plot.Plot, c draw.Canvas) {
	titleC, plotC, legendC, hasLegend := plotLayout(p, c)
	if p.Title.Text != "" {
		descent := p.Title.TextStyle.FontExtents().Descent
		titleC.FillText(p.Title.TextStyle, vg.Point{X: titleC.Center().X, Y: titleC.Max.Y + descent}, p.Title.Text)
	}
	title, legend := p.Title.Text, p.Legend
	p.Title.Text = ""           // drawn above
	p.Legend = plot.NewLegend() // drawn below, outside the data area
	defer func() { p.Title.Text, p.Legend = title, legend }()
	p.Draw(plotC)
	if hasLegend {
		legend.Draw(legendC)
	}
}

// applyLimits sets the axis limits that are given and checks the result.
func applyLimits(ax *plot.Axis, lo, hi *float64, logScale bool) error {
	if lo != nil {
		if math.IsNaN(*lo) || math.IsInf(*lo, 0) {
			return fmt.Errorf("minimum is %v", *lo)
		}
		ax.Min = *lo
	}
	if hi != nil {
		if math.IsNaN(*hi) || math.IsInf(*hi, 0) {
			return fmt.Errorf("maximum is %v", *hi)
		}
		ax.Max = *hi
	}
	if (lo != nil || hi != nil) && ax.Min >= ax.Max {
		return fmt.Errorf("minimum %v is not below maximum %v", ax.Min, ax.Max)
	}
	if logScale && ax.Min <= 0 {
		return fmt.Errorf("minimum %v is not positive, but the axis is logarithmic", ax.Min)
	}
	return nil
}

// logTicks places ticks on a logarithmic axis so that every range gets
// a few labels: 1-2-5 steps within two decades, powers of ten up to six
// decades, every few powers of ten beyond, with unlabelled minor ticks in
// between. plot.LogTicks labels only powers of ten, which leaves a
// range such as 800..4,000 with a single label.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	d0 := int(math.Floor(math.Log10(lo)))
	d1 := int(math.Ceil(math.Log10(hi)))
	span := d1 - d0
	var labelled func(m, d int) bool
	switch {
	case span <= 2:
		labelled = func(m, _ int) bool { return m == 1 || m == 2 || m == 5 }
	case span <= 6:
		labelled = func(m, _ int) bool { return m == 1 }
	default:
		step := (span + 5) / 6
		labelled = func(m, d int) bool { return m == 1 && (d-d0)%step == 0 }
	}
	var ticks []plot.Tick
	majors := 0
	for d := d0; d <= d1; d++ {
		for m := 1; m <= 9; m++ {
			if span > 6 && m > 1 {
				break // minor ticks per decade only
			}
			v := float64(m) * math.Pow(10, float64(d))
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if labelled(m, d) {
				t.Label = FormatFloat(v, 6)
				majors++
			}
			ticks = append(ticks, t)
		}
	}
	if majors >= 3 {
		return ticks
	}
	// A narrow range: label every multiple in it, or fall back to
	// linear ticks if there are fewer than two.
	n := 0
	for i := range ticks {
		ticks[i].Label = FormatFloat(ticks[i].Value, 6)
		n++
	}
	if n >= 2 {
		return ticks
	}
	ticks = plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = FormatFloat(ticks[i].Value, 6)
		}
	}
	return ticks
}

// readableTicks relabels major ticks of a linear axis with FormatFloat:
// thousands separators, no float noise ("0.30000000000000004"), and an
// exact 0 for a tick within 1e-9 of the range from zero.
type readableTicks struct{ plot.Ticker }

func (t readableTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := t.Ticker.Ticks(lo, hi)
	eps := 1e-9 * math.Abs(hi-lo)
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		v := ticks[i].Value
		// Snap float noise to an exact 0 only on an axis that reaches
		// zero; on a logarithmic axis (lo > 0) small values are real.
		if lo <= 0 && math.Abs(v) <= eps {
			v = 0
		}
		ticks[i].Label = FormatFloat(v, 6)
	}
	return ticks
}

// plotSize returns the canvas size for opts.
func plotSize(opts PlotOptions) (w, h vg.Length) {
	wpx, hpx := opts.WidthPx, opts.HeightPx
	if wpx <= 0 {
		wpx = defaultWidthPx
	}
	if hpx <= 0 {
		hpx = defaultHeightPx
	}
	return vg.Length(wpx) * vg.Inch / plotDPI, vg.Length(hpx) * vg.Inch / plotDPI
}

// savePlot draws p and writes it to path atomically.
func savePlot(p *plot.Plot, path, format string, opts PlotOptions) error {
	img, err := renderPlot(p, format, opts)
	if err != nil {
		return fmt.Errorf("report: plot %s: %w", path, err)
	}
	return WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(img)
		return err
	})
}

// margin is the canvas a plot is drawn on: gonum/plot draws the axes'
// far ends flush with the canvas edge, so keep a margin so that end ticks,
// labels and markers are not cut off.
func margin(c vg.CanvasSizer) draw.Canvas {
	return draw.Crop(draw.New(c), vg.Points(4), -vg.Points(16), vg.Points(4), -vg.Points(6))
}

// svgFontFallback makes SVG text fall back to fonts with Liberation
// Sans's metrics, then to any sans-serif, on machines without it.
const svgFontFallback = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// renderPlot draws p into an image in format ("svg" or "png"). gonum/plot
// panics on some inputs that the checks above should already exclude; a
// panic is turned into an error rather than taking the command down.
func renderPlot(p *plot.Plot, format string, opts PlotOptions) (img []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			img, err = nil, fmt.Errorf("drawing failed: %v", r)
		}
	}()
	w, h := plotSize(opts)
	var buf bytes.Buffer
	switch format {
	case "svg":
		c := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(opts.EmbedFonts))
		drawPlot(p, margin(c))
		if _, err := c.WriteTo(&buf); err != nil {
			return nil, err
		}
		if !opts.EmbedFonts {
			return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFontFallback)), nil
		}
	case "png":
		c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI))}
		drawPlot(p, margin(c))
		if _, err := c.WriteTo(&buf); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unsupported format %q", format)
	}
	return buf.Bytes(), nil
}
