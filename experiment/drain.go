package experiment

import (
	"fmt"

	"github.com/fabemu/fabemu/internal/report"
)

// The drain columns: runs with run.drain go on until every generated
// packet is delivered (paper 001 §4.3, Fig. 8: "simulation goes on until
// all messages arrive to their destinations"); the time that takes is
// the figure of merit.
func init() {
	metrics["drain"] = metric{"us", func(v view) float64 {
		if v.sim == nil || v.sim.Drain == nil {
			return 0
		}
		return v.sim.Drain.LastDeliveryNs / 1e3
	}}
	columns["drain"] = column{"All delivered at", "us", func(_ *Result, v view) string {
		if v.sim == nil || v.sim.Drain == nil {
			return "-"
		}
		d := v.sim.Drain
		if !d.AllDelivered {
			return fmt.Sprintf("> %s (%d left)", report.FormatFloat(d.LastDeliveryNs/1e3, 4), d.Undelivered)
		}
		return report.FormatFloat(d.LastDeliveryNs/1e3, 4)
	}}
}
