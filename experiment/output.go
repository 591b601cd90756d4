package experiment

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/nic"
	"github.com/fabemu/fabemu/workload/replay"
	"github.com/fabemu/fabemu/workload/synth"
)

// view is one run seen by the metrics: a replay, or a sim at a load.
type view struct {
	rep  *replay.ReplaySummary
	sim  *synth.Summary
	load float64
}

func (v view) delivery() nic.DeliveryReport {
	if v.rep != nil {
		return v.rep.DeliveryReport
	}
	if v.sim != nil {
		return v.sim.DeliveryReport
	}
	return nic.DeliveryReport{}
}

func (v view) inorder() bool { return v.delivery().Delivery == string(nic.DeliveryAdaptiveInOrder) }

// metric is a number taken from a run, with its unit.
type metric struct {
	unit string
	get  func(view) float64
}

// metrics are what tables and plots can show.
var metrics = map[string]metric{
	"time": {"ns", func(v view) float64 {
		if v.rep != nil {
			return v.rep.TraceExecutionTimeNs
		}
		return 0
	}},
	"waste": {"%", func(v view) float64 { return v.delivery().WasteTrafficPct }},
	"mbs":   {"bytes", func(v view) float64 { return float64(v.delivery().MBSBytes) }},
	"mms":   {"bytes", func(v view) float64 { return float64(v.delivery().MMSBytes) }},
	"accepted": {"bytes/ns/switch", func(v view) float64 {
		if v.rep != nil {
			return v.rep.AcceptedBytesPerNsPerSwitch
		}
		if v.sim != nil {
			return v.sim.AcceptedBytesPerNsPerSwitch
		}
		return 0
	}},
	"latency": {"ns", func(v view) float64 {
		if v.rep != nil {
			return v.rep.PacketLatencyNs.Mean
		}
		if v.sim != nil {
			return v.sim.LatencyNs.Mean
		}
		return 0
	}},
	"load":      {"", func(v view) float64 { return v.load }},
	"reordered": {"", func(v view) float64 { return v.delivery().ReorderedRatio }},
	// accepted_load is the accepted load as a fraction of the host link
	// (paper 002's phits/node/cycle); the lane figures need run.lane_stats.
	"accepted_load": {"of link", func(v view) float64 {
		if v.sim != nil {
			return v.sim.AcceptedLoad
		}
		return 0
	}},
	// accepted_phits is the same figure in paper 002's unit: a link
	// carries one phit per cycle, so a fraction of the host link is
	// phits/node/cycle whatever the phit's size.
	"accepted_phits": {"phits/node/cycle", func(v view) float64 {
		if v.sim != nil {
			return v.sim.AcceptedLoad
		}
		return 0
	}},
	"esc_occupancy": {"packets", func(v view) float64 {
		return laneFigure(v, func(l *fabric.LaneReport) float64 { return l.EscapeOccupancy })
	}},
	"ad_occupancy": {"packets", func(v view) float64 {
		return laneFigure(v, func(l *fabric.LaneReport) float64 { return l.AdaptiveOccupancy })
	}},
	"esc_util": {"", func(v view) float64 {
		return laneFigure(v, func(l *fabric.LaneReport) float64 { return l.EscapeUtilisation })
	}},
	"ad_util": {"", func(v view) float64 {
		return laneFigure(v, func(l *fabric.LaneReport) float64 { return l.AdaptiveUtilisation })
	}},
}

// laneFigure reads a figure of a sim's lanes report (0 without one).
func laneFigure(v view, get func(*fabric.LaneReport) float64) float64 {
	if v.sim == nil || v.sim.Lanes == nil {
		return 0
	}
	return get(v.sim.Lanes)
}

func metricNames() []string {
	var ns []string
	for n := range metrics {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// column is a table column: header, unit and cell text.
type column struct {
	name, unit string
	cell       func(r *Result, v view) string
}

// columns are the table columns; time, waste, mbs, mms and impr are
// printed as paper 004 prints Tables 1 and 2 (time in millions of ns with
// an M suffix, "-" for MBS and MMS without a rearrangement mechanism).
var columns = map[string]column{
	"time": {"Time", "ns", func(_ *Result, v view) string {
		return fmt.Sprintf("%.2fM", metrics["time"].get(v)/1e6)
	}},
	"waste": {"Waste", "%", func(_ *Result, v view) string {
		return fmt.Sprintf("%.1f%%", v.delivery().WasteTrafficPct)
	}},
	"mbs": {"MBS", "bytes", func(_ *Result, v view) string {
		if !v.inorder() {
			return "-"
		}
		return fmt.Sprint(v.delivery().MBSBytes)
	}},
	"mms": {"MMS", "bytes", func(_ *Result, v view) string {
		if !v.inorder() {
			return "-"
		}
		return fmt.Sprint(v.delivery().MMSBytes)
	}},
	"impr": {"Impr.", "%", func(r *Result, v view) string {
		base := r.baseline()
		if base == nil || v.rep == base.rep {
			return "-"
		}
		return fmt.Sprintf("%.2f%%", r.improvement(v))
	}},
	"accepted": {"Accepted", "bytes/ns/switch", func(_ *Result, v view) string {
		return report.FormatFloat(metrics["accepted"].get(v), 4)
	}},
	"latency": {"Latency mean", "ns", func(_ *Result, v view) string {
		return report.FormatFloat(metrics["latency"].get(v), 4)
	}},
	"load": {"Offered load", "", func(_ *Result, v view) string { return report.FormatFloat(v.load, 3) }},
	"buffer": {"Max buffer/conn", "bytes", func(_ *Result, v view) string {
		if !v.inorder() {
			return "0"
		}
		return fmt.Sprint(v.delivery().MBSBytes)
	}},
	"reordered": {"Reordered", "ratio", func(_ *Result, v view) string {
		return report.FormatFloat(v.delivery().ReorderedRatio, 3)
	}},
	"accepted_load":  metricColumn("Accepted load", "accepted_load"),
	"accepted_phits": metricColumn("Accepted", "accepted_phits"),
	"esc_occupancy":  metricColumn("Escape queue", "esc_occupancy"),
	"ad_occupancy":   metricColumn("Adaptive queue", "ad_occupancy"),
	"esc_util":       metricColumn("Escape util.", "esc_util"),
	"ad_util":        metricColumn("Adaptive util.", "ad_util"),
}

// spreadFormats format the mean and the range of a seeded replay row's
// column (see RowResult.Spread), in the column's own format.
var spreadFormats = map[string]func(float64) string{
	"time":     func(v float64) string { return fmt.Sprintf("%.2fM", v/1e6) },
	"waste":    func(v float64) string { return fmt.Sprintf("%.1f%%", v) },
	"mbs":      func(v float64) string { return report.FormatInt(int64(math.Round(v))) },
	"mms":      func(v float64) string { return report.FormatInt(int64(math.Round(v))) },
	"impr":     func(v float64) string { return fmt.Sprintf("%.2f%%", v) },
	"accepted": func(v float64) string { return report.FormatFloat(v, 4) },
	"latency":  func(v float64) string { return report.FormatFloat(v, 4) },
}

// spreadCell is a seeded row's cell of column c: the mean over the seeds
// and, in brackets, the smallest and the largest value ("12.34M
// [11.90M..12.80M]"); ok is false for a column without a spread. The
// improvement is taken per seed, against the baseline's run on the same
// topology, then summarised.
func (r *Result) spreadCell(row *RowResult, c string) (string, bool) {
	f, ok := spreadFormats[c]
	if !ok || row.Spread == nil {
		return "", false
	}
	if (c == "mbs" || c == "mms") && !(view{rep: row.replay}).inorder() {
		return "-", true
	}
	sp, has := row.Spread[c]
	if !has {
		return "-", true // impr of the baseline row
	}
	return fmt.Sprintf("%s [%s..%s]", f(sp.Mean), f(sp.Min), f(sp.Max)), true
}

// metricColumn shows a metric with four significant digits.
func metricColumn(header, metric string) column {
	return column{header, metrics[metric].unit, func(_ *Result, v view) string {
		return report.FormatFloat(metrics[metric].get(v), 4)
	}}
}

func (r *Result) firstSim() *synth.Summary {
	for _, row := range r.Rows {
		if row.sim != nil {
			return row.sim
		}
		for _, p := range row.Points {
			if p.Summary != nil {
				return p.Summary
			}
		}
	}
	return nil
}

// simSeeds names the seed of the sim points: "seed 1", or "seeds 1, 2"
// when the rows differ (a grid over seeds), in first-seen order.
func (r *Result) simSeeds() string {
	var seeds []string
	seen := map[uint64]bool{}
	add := func(s *synth.Summary) {
		if s != nil && !seen[s.Config.Run.Seed] {
			seen[s.Config.Run.Seed] = true
			seeds = append(seeds, fmt.Sprint(s.Config.Run.Seed))
		}
	}
	for _, row := range r.Rows {
		add(row.sim)
		for _, p := range row.Points {
			add(p.Summary)
		}
	}
	if len(seeds) == 1 {
		return "seed " + seeds[0]
	}
	return "seeds " + strings.Join(seeds, ", ")
}

func (r *Result) baseline() *view {
	for _, row := range r.Rows {
		if row.Name == r.Baseline && row.replay != nil {
			return &view{rep: row.replay}
		}
	}
	return nil
}

// improvement is the reduction of execution time against the baseline
// row, in percent (paper 004 Tables 1-2, "Impr. %").
func (r *Result) improvement(v view) float64 {
	base := r.baseline()
	if base == nil || base.rep.TraceExecutionTimeNs == 0 {
		return 0
	}
	return 100 * (1 - v.rep.TraceExecutionTimeNs/base.rep.TraceExecutionTimeNs)
}

// Improvement returns the named row's improvement over the baseline in
// percent, and whether both rows exist.
func (r *Result) Improvement(row string) (float64, bool) {
	for _, x := range r.Rows {
		if x.Name == row && x.replay != nil && r.baseline() != nil {
			return r.improvement(view{rep: x.replay}), true
		}
	}
	return 0, false
}

// Replay returns the named row's replay summary, or nil.
func (r *Result) Replay(row string) *replay.ReplaySummary {
	for _, x := range r.Rows {
		if x.Name == row {
			return x.replay
		}
	}
	return nil
}

// Sweep returns the named row's sweep points, or nil.
func (r *Result) Sweep(row string) []SweepPoint {
	for _, x := range r.Rows {
		if x.Name == row {
			return x.Points
		}
	}
	return nil
}

// WriteTable writes the experiment's header, calibration and table.
func (r *Result) WriteTable(w io.Writer) error {
	e := r.exp
	fmt.Fprintf(w, "Experiment %s (%s)\n%s\n\n", e.Name, e.Source, wrap(e.Description, 100))
	head := report.Section{Title: "Setup"}
	if r.Quick {
		head.Add("workload", "QUICK: shrunk for a smoke run (--quick); not the documented figures", "")
	}
	if t := r.Trace; t != nil {
		head.Add("trace", fmt.Sprintf("%s (%s records replayed)", t.Name, report.FormatInt(t.Records)), "")
	}
	if c := r.Calibration; c != nil {
		for _, p := range c.Points {
			head.Add(fmt.Sprintf("calibration: %s at compression %g", c.Row, p.Factor), report.FormatFloat(p.AcceptedBytesPerNsPerSwitch, 4),
				fmt.Sprintf("bytes/ns/switch accepted; execution time %.2f x compressed span", p.Backlog))
		}
		head.Add(c.Row+" saturation throughput", report.FormatFloat(c.SaturationBytesPerNsPerSwitch, 4),
			fmt.Sprintf("bytes/ns/switch (at compression %g)", c.SaturationFactor))
		head.Add("compression factor", fmt.Sprint(c.Chosen),
			fmt.Sprintf("the smallest with %s accepted >= %g x saturation and execution time >= %g x span", c.Row, c.MinUtilisation, c.MinBacklog))
		head.Add(c.Row+" utilisation", fmt.Sprintf("%.1f%%", 100*c.Utilisation), "of its saturation throughput")
	} else if r.Kind == KindReplay {
		head.Add("compression factor", fmt.Sprint(r.Compression), "")
	}
	if len(r.Rows) > 0 {
		if s := r.Rows[0].replay; s != nil {
			if seeds := r.Rows[0].Seeds; len(seeds) > 0 {
				head.Add("network", s.Topology.Describe, fmt.Sprintf("topology seed %d of %d", seeds[0].Seed, len(seeds)))
				var ss []string
				for _, sr := range seeds {
					ss = append(ss, fmt.Sprint(sr.Seed))
				}
				head.Add("topology seeds", strings.Join(ss, ", "), "each row runs once per seed (topology.seed and run.seed); cells are mean [min..max] over them")
			} else {
				head.Add("network", s.Topology.Describe, "")
			}
		}
	}
	if r.Kind == KindSim {
		if s := r.firstSim(); s != nil {
			head.Add("run", fmt.Sprintf("%g us measured after %g us of warm-up, %s", s.SimTimeNs/1e3, s.WarmupNs/1e3, r.simSeeds()), "per point")
		}
	}
	if len(head.Items) > 0 {
		if err := head.Write(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	t := report.Table{Title: e.Name}
	t.Columns = append(t.Columns, report.Column{Name: "Row", Align: report.AlignLeft})
	if r.Kind == KindSim && e.sweep() {
		t.Columns = append(t.Columns, report.Column{Name: "Load", Align: report.AlignRight})
	}
	for _, c := range e.Columns {
		col := columns[c]
		t.Columns = append(t.Columns, report.Column{Name: col.name, Unit: col.unit, Align: report.AlignRight})
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		if row.Spread != nil {
			cells := []string{row.Name}
			for _, c := range e.Columns {
				cell, ok := r.spreadCell(row, c)
				if !ok {
					cell = columns[c].cell(r, view{rep: row.replay})
				}
				cells = append(cells, cell)
			}
			t.AddRow(cells...)
			continue
		}
		views := []view{{rep: row.replay, sim: row.sim}}
		if row.Points != nil {
			views = views[:0]
			for _, p := range row.Points {
				views = append(views, view{sim: p.Summary, load: p.Load})
			}
		}
		for _, v := range views {
			if v.rep == nil && v.sim == nil {
				continue
			}
			cells := []string{row.Name}
			if r.Kind == KindSim && e.sweep() {
				cells = append(cells, report.FormatFloat(v.load, 3))
			}
			for _, c := range e.Columns {
				cells = append(cells, columns[c].cell(r, v))
			}
			t.AddRow(cells...)
		}
	}
	if ok, bad := r.InvariantsOK(); ok {
		t.Notes = append(t.Notes, "invariants: OK on every run")
	} else {
		t.Notes = append(t.Notes, "invariants VIOLATED: "+strings.Join(bad, "; "))
	}
	if r.Quick {
		t.Notes = append(t.Notes, "QUICK run (--quick): smaller workload, figures are not comparable with the paper's")
	}
	return t.Write(w)
}

// WritePlot draws the experiment's plot to path (.svg or .png). A sweep
// with several groups writes one file per group, named PATH-GROUP.EXT; it
// returns the files written.
func (r *Result) WritePlot(path string) ([]string, error) {
	e := r.exp
	ps := e.Plot
	suffix := ""
	if r.Quick {
		suffix = " (quick run)"
	}
	switch ps.Kind {
	case "bar":
		var bars []report.Bar
		m := metrics[ps.Y]
		div, unit := 1.0, m.unit
		if ps.Y == "time" {
			div, unit = 1e6, "ms"
		}
		for _, row := range r.Rows {
			if sp, ok := row.Spread[ps.Y]; ok {
				bars = append(bars, report.Bar{Label: row.Name, Value: sp.Mean / div, Range: true, Low: sp.Min / div, High: sp.Max / div})
				continue
			}
			bars = append(bars, report.Bar{Label: row.Name, Value: m.get(view{rep: row.replay, sim: row.sim}) / div})
		}
		title := ps.Title
		if n := len(r.Rows[0].Seeds); n > 0 {
			title += fmt.Sprintf(", mean and range over %d topologies", n)
		}
		if r.Kind == KindReplay {
			title += fmt.Sprintf(", compression %g", r.Compression)
		}
		return []string{path}, report.BarPlot(path, title+suffix, ps.Y+" ("+unit+")", bars, report.PlotOptions{})
	case "timeseries":
		return r.timeseriesPlot(path, suffix)
	case "line":
		groups := map[string][]report.Series{}
		var order []string
		for _, row := range r.Rows {
			name := row.Series
			if name == "" {
				name = row.Name
			}
			s := report.Series{Name: name}
			for _, p := range row.Points {
				v := view{sim: p.Summary, load: p.Load}
				s.X = append(s.X, metrics[ps.X].get(v))
				s.Y = append(s.Y, metrics[ps.Y].get(v))
			}
			if _, ok := groups[row.Group]; !ok {
				order = append(order, row.Group)
			}
			groups[row.Group] = append(groups[row.Group], s)
		}
		var files []string
		used := map[string]bool{}
		for _, g := range order {
			p := path
			title := ps.Title
			if len(order) > 1 {
				ext := filepath.Ext(path)
				name := fileSafe(g)
				for i := 2; used[name]; i++ { // two groups that sanitize alike
					name = fmt.Sprintf("%s-%d", fileSafe(g), i)
				}
				used[name] = true
				p = strings.TrimSuffix(path, ext) + "-" + name + ext
			}
			if g != "" {
				title += ", " + g
			}
			err := report.LinePlot(p, title+suffix, axisLabel(ps.X), axisLabel(ps.Y), groups[g], report.PlotOptions{})
			if err != nil {
				return files, err
			}
			files = append(files, p)
		}
		return files, nil
	}
	return nil, fmt.Errorf("experiment %s has no plot", e.Name)
}

// fileSafe turns a group name (data, not a path) into a file name part:
// letters, digits, '.', '_' and '-' are kept, anything else (a '/', a
// space) becomes '_', and a leading '.' too, so that "../../evil" cannot
// leave the plot's directory or hide the file.
func fileSafe(g string) string {
	b := []byte(g)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' && i > 0
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "_"
	}
	return string(b)
}

// axisLabels name every metric a line plot may put on an axis, with its
// unit; a figure without its unit cannot be laid beside the paper's.
// Dimensionless metrics say what they are a fraction of.
var axisLabels = map[string]string{
	"accepted":       "accepted traffic (bytes/ns/switch)",
	"accepted_load":  "accepted load (fraction of link rate)",
	"accepted_phits": "accepted traffic (phits/node/cycle)",
	"ad_occupancy":   "adaptive queue occupancy (packets)",
	"ad_util":        "adaptive lane utilisation (fraction of time)",
	"drain":          "all delivered at (µs)",
	"efficiency":     "switch efficiency (fraction of link rate)",
	"esc_occupancy":  "escape queue occupancy (packets)",
	"esc_util":       "escape lane utilisation (fraction of time)",
	"latency":        "mean latency (ns)",
	"load":           "offered load (fraction of link rate)",
	"mbs":            "max buffer per connection (bytes)",
	"mms":            "max memory per NIC (bytes)",
	"reordered":      "reordered ratio (fraction of packets received)",
	"saqs_total":     "max SAQs in the network (SAQs)",
	"stage_util":     "link utilisation, mean over the stage's links (fraction of time busy)",
	"throughput":     "network throughput (bytes/ns)",
	"time":           "trace execution time (ns)",
	"waste":          "waste traffic (%)",
}

// axisLabel is the axis label of metric m: its entry in axisLabels, or,
// for a metric added without one, its key and unit.
func axisLabel(m string) string {
	if l, ok := axisLabels[m]; ok {
		return l
	}
	if u := metrics[m].unit; u != "" {
		return m + " (" + u + ")"
	}
	return m
}

// wrap breaks text into lines of at most width characters.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
