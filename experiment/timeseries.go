package experiment

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/workload/synth"
	"github.com/fabemu/fabemu/workload/traffic"
)

// Series is a per-bin figure of a sim row over the whole run (warm-up
// included), as the papers draw network throughput against time
// (paper 000 Figs. 2, 3 and 6).
type Series struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit"`
	BinUs  float64   `json:"bin_us"`
	TimeUs []float64 `json:"time_us"` // bin starts
	Values []float64 `json:"values"`
	// HotStartUs and HotEndUs bound the traffic pattern's hot window
	// (the corner cases' congestion tree), when it has one.
	HotStartUs *float64 `json:"hot_start_us,omitempty"`
	HotEndUs   *float64 `json:"hot_end_us,omitempty"`
}

// seriesMetric takes a time series from a sim summary.
type seriesMetric struct {
	unit string
	get  func(s *synth.Summary) (time, values []float64)
}

// seriesMetrics are the time series a timeseries plot may draw.
var seriesMetrics = map[string]seriesMetric{
	// throughput is the network throughput of paper 000 §4.3: payload
	// bytes delivered to all hosts per nanosecond, per bin.
	"throughput": {"bytes/ns", func(s *synth.Summary) ([]float64, []float64) {
		sw := float64(s.Topology.Switches)
		t := make([]float64, len(s.Timeseries))
		v := make([]float64, len(s.Timeseries))
		for i, b := range s.Timeseries {
			t[i], v[i] = b.TimeUs, b.AcceptedBytesPerNsPerSwitch*sw
		}
		return t, v
	}},
	// efficiency is the switch efficiency of paper 003 §2.7 and §2.9.2
	// (Figs. 2.10-2.21): bytes delivered per host port per unit of time,
	// headers included, as a fraction of the link's data rate (1 = every
	// port delivers a byte per byte time, "cells/port/cycle" at full
	// link rate). It counts every host, active or not.
	"efficiency": {"fraction of link rate", func(s *synth.Summary) ([]float64, []float64) {
		t := make([]float64, len(s.Timeseries))
		v := make([]float64, len(s.Timeseries))
		for i, b := range s.Timeseries {
			t[i], v[i] = b.TimeUs, efficiencyOf(s, b.AcceptedLoad)
		}
		return t, v
	}},
}

// efficiencyOf turns an accepted load (per active host) into the switch
// efficiency (per host of the network).
func efficiencyOf(s *synth.Summary, accepted float64) float64 {
	if s.Topology.Hosts == 0 {
		return 0
	}
	return accepted * float64(s.ActiveHosts) / float64(s.Topology.Hosts)
}

// efficiencySeries builds a row's switch efficiency series.
func efficiencySeries(s *synth.Summary) *Series {
	if s == nil || len(s.Timeseries) == 0 {
		return nil
	}
	t, v := seriesMetrics["efficiency"].get(s)
	out := &Series{Name: "efficiency", Unit: seriesMetrics["efficiency"].unit, TimeUs: t, Values: v}
	if len(t) > 1 {
		out.BinUs = t[1] - t[0]
	}
	if a, b, ok := hotWindow(s); ok {
		out.HotStartUs, out.HotEndUs = &a, &b
	}
	return out
}

func seriesMetricNames() []string {
	var ns []string
	for n := range seriesMetrics {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// hotWindow returns the hot window of a pattern that has one (the corner
// cases), in microseconds.
func hotWindow(s *synth.Summary) (start, end float64, ok bool) {
	spec, err := traffic.ParsePattern(s.Config.Traffic.Pattern)
	if err != nil {
		return 0, 0, false
	}
	p, err := traffic.NewPattern(spec, s.Topology.Hosts)
	if err != nil {
		return 0, 0, false
	}
	w, has := p.(interface{ HotWindow() (int64, int64) })
	if !has {
		return 0, 0, false
	}
	a, b := w.HotWindow()
	return float64(a) / 1e6, float64(b) / 1e6, true
}

// throughputSeries builds a row's network throughput series.
func throughputSeries(s *synth.Summary) *Series {
	if s == nil || len(s.Timeseries) == 0 {
		return nil
	}
	t, v := seriesMetrics["throughput"].get(s)
	out := &Series{Name: "throughput", Unit: "bytes/ns", TimeUs: t, Values: v}
	if len(t) > 1 {
		out.BinUs = t[1] - t[0]
	}
	if a, b, ok := hotWindow(s); ok {
		out.HotStartUs, out.HotEndUs = &a, &b
	}
	return out
}

// windowMean is the mean of the series over the bins starting in
// [from, to) microseconds, and whether there was any.
func (s *Series) windowMean(from, to float64) (float64, bool) {
	sum, n := 0.0, 0
	for i, t := range s.TimeUs {
		if t >= from && t < to && (s.BinUs == 0 || t+s.BinUs <= to+1e-9) {
			sum += s.Values[i]
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// throughputWindow is a column's view of a row's throughput: before the
// hot window (after warm-up), during it, after it, or its lowest bin
// from the hot window's start on.
func throughputWindow(v view, which string) string {
	if v.sim == nil {
		return "-"
	}
	s := throughputSeries(v.sim)
	if s == nil || s.HotStartUs == nil {
		return "-"
	}
	a, b := *s.HotStartUs, *s.HotEndUs
	end := (v.sim.WarmupNs + v.sim.SimTimeNs) / 1e3
	var m float64
	var ok bool
	switch which {
	case "before":
		m, ok = s.windowMean(v.sim.WarmupNs/1e3, a)
	case "tree":
		m, ok = s.windowMean(a, b)
	case "after":
		m, ok = s.windowMean(b, end)
	case "min":
		for i, t := range s.TimeUs {
			if t >= a && (!ok || s.Values[i] < m) && (s.BinUs == 0 || t+s.BinUs <= end+1e-9) {
				m, ok = s.Values[i], true
			}
		}
	}
	if !ok {
		return "-"
	}
	return report.FormatFloat(m, 3)
}

func init() {
	metrics["throughput"] = metric{"bytes/ns", func(v view) float64 {
		if v.sim != nil {
			return v.sim.AcceptedBytesPerNs
		}
		if v.rep != nil {
			return v.rep.AcceptedBytesPerNs // paper 000 Fig. 3: traces
		}
		return 0
	}}
	columns["throughput"] = column{"Throughput", "bytes/ns", func(_ *Result, v view) string {
		return report.FormatFloat(metrics["throughput"].get(v), 3)
	}}
	for _, w := range []struct{ key, name string }{{"before", "Before tree"}, {"tree", "During tree"}, {"after", "After tree"}, {"min", "Lowest bin"}} {
		columns["tput_"+w.key] = column{w.name, "bytes/ns", func(_ *Result, v view) string { return throughputWindow(v, w.key) }}
	}
	metrics["efficiency"] = metric{"fraction of link rate", func(v view) float64 {
		if v.sim != nil {
			return efficiencyOf(v.sim, v.sim.AcceptedLoad)
		}
		return 0
	}}
	columns["efficiency"] = column{"Efficiency", "fraction of link rate", func(_ *Result, v view) string {
		if v.sim == nil {
			return "-"
		}
		return report.FormatFloat(metrics["efficiency"].get(v), 3)
	}}
	columns["queues"] = column{"Queues/input", "", func(_ *Result, v view) string {
		if v.sim == nil || v.sim.Queues == nil {
			return "-"
		}
		return fmt.Sprint(v.sim.Queues.QueuesPerInput)
	}}
	columns["queue_state"] = column{"Queue state/switch", "bytes", func(_ *Result, v view) string {
		if v.sim == nil || v.sim.Queues == nil {
			return "-"
		}
		return report.FormatInt(v.sim.Queues.StateBytesPerSwitch)
	}}
}

// timeseriesPlot draws every row's series of the plot's Y over time, one
// figure per row group (PATH-GROUP.ext when there are several groups).
func (r *Result) timeseriesPlot(path, suffix string) ([]string, error) {
	ps := r.exp.Plot
	m := seriesMetrics[ps.Y]
	groups := map[string][]report.Series{}
	var order []string
	for _, row := range r.Rows {
		if row.sim == nil {
			continue
		}
		t, v := m.get(row.sim)
		name := row.Series
		if name == "" {
			name = row.Name
		}
		if _, ok := groups[row.Group]; !ok {
			order = append(order, row.Group)
		}
		groups[row.Group] = append(groups[row.Group], report.Series{Name: name, X: t, Y: v})
	}
	zero := 0.0
	var files []string
	for _, g := range order {
		p, title := path, ps.Title
		if len(order) > 1 {
			ext := filepath.Ext(path)
			p = strings.TrimSuffix(path, ext) + "-" + g + ext
		}
		if g != "" {
			title += ", " + g
		}
		err := report.LinePlot(p, title+suffix, "time (µs)", axisLabel(ps.Y), groups[g], report.PlotOptions{YMin: &zero, WidthPx: 720, HeightPx: 400})
		if err != nil {
			return files, err
		}
		files = append(files, p)
	}
	fs, err := r.stagePlots(path, suffix)
	return append(files, fs...), err
}

// stagePlots draws, for every row whose run measured run.stage_series,
// the link utilisation per stage over time (PATH-stages-ROW.ext): the
// congestion tree of paper 000's corner cases growing and collapsing.
func (r *Result) stagePlots(path, suffix string) ([]string, error) {
	var files []string
	used := map[string]bool{}
	ext := filepath.Ext(path)
	for _, row := range r.Rows {
		if row.sim == nil || row.sim.Stages == nil || len(row.sim.Stages.TimeUs) == 0 {
			continue
		}
		st := row.sim.Stages
		var series []report.Series
		for c, name := range st.Classes {
			series = append(series, report.Series{Name: fmt.Sprintf("%s (%d links)", name, st.Links[c]), X: st.TimeUs, Y: st.Utilisation[c]})
		}
		name := fileSafe(row.Name)
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s-%d", fileSafe(row.Name), i)
		}
		used[name] = true
		p := strings.TrimSuffix(path, ext) + "-stages-" + name + ext
		title := "Link utilisation per stage, " + row.Name
		if a, b, ok := hotWindow(row.sim); ok {
			title += fmt.Sprintf(", tree %g-%g µs", a, b)
		}
		zero := 0.0
		err := report.LinePlot(p, title+suffix, "time (µs)", axisLabels["stage_util"], series, report.PlotOptions{YMin: &zero, WidthPx: 720, HeightPx: 400})
		if err != nil {
			return files, err
		}
		files = append(files, p)
	}
	return files, nil
}
