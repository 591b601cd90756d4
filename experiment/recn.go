package experiment

import (
	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/internal/report"
)

// recn returns the row's RECN report, nil when its switch is not recn.
func (v view) recn() *fabric.RECNReport {
	switch {
	case v.sim != nil:
		return v.sim.RECN
	case v.rep != nil:
		return v.rep.RECN
	}
	return nil
}

// The SAQ figures of paper 000 §4.4 (Figs. 4 and 5) as table columns: the
// most SAQs in use at one switch input port and at one output port, the
// most network-wide, and the network-wide mean per port; "-" for rows
// whose switch is not recn.
func init() {
	saq := func(name, unit string, get func(*fabric.RECNReport) string) column {
		return column{name, unit, func(_ *Result, v view) string {
			if r := v.recn(); r != nil {
				return get(r)
			}
			return "-"
		}}
	}
	columns["saqs_in"] = saq("Max SAQs/ingress", "", func(r *fabric.RECNReport) string { return report.FormatInt(int64(r.MaxSAQsPerInput)) })
	columns["saqs_out"] = saq("Max SAQs/egress", "", func(r *fabric.RECNReport) string { return report.FormatInt(int64(r.MaxSAQsPerOutput)) })
	columns["saqs_total"] = saq("Max SAQs network", "", func(r *fabric.RECNReport) string { return report.FormatInt(int64(r.MaxSAQsTotal)) })
	columns["saqs_mean"] = saq("Mean SAQs/port", "", func(r *fabric.RECNReport) string { return report.FormatFloat(r.MeanSAQsPerPort, 3) })
	metrics["saqs_total"] = metric{"SAQs", func(v view) float64 {
		if r := v.recn(); r != nil {
			return float64(r.MaxSAQsTotal)
		}
		return 0
	}}
	columns["saq_exhausted"] = saq("SAQ exhausted", "", func(r *fabric.RECNReport) string { return report.FormatInt(int64(r.Exhausted)) })
}
