package experiment

import "github.com/fabemu/fabemu/internal/report"

// The deadlock columns: on a routing function that relies on deadlock
// recovery (TFAR, paper 001 §4) the messages presumed deadlocked
// (detections, ref. [10] of paper 001) and those absorbed and reinjected
// (recovered, ref. [12]); "-" where detection is off.
func init() {
	for _, c := range []struct {
		name, title string
		get         func(d *deadlockView) uint64
	}{
		{"detections", "Deadlocks detected", func(d *deadlockView) uint64 { return d.Detections }},
		{"recovered", "Recovered", func(d *deadlockView) uint64 { return d.Recovered }},
	} {
		get := c.get
		metrics[c.name] = metric{"messages", func(v view) float64 {
			if d := deadlockOf(v); d != nil {
				return float64(get(d))
			}
			return 0
		}}
		columns[c.name] = column{c.title, "messages", func(_ *Result, v view) string {
			if d := deadlockOf(v); d != nil {
				return report.FormatUint(get(d))
			}
			return "-"
		}}
	}
}

// The transmission-time ratio of paper 001 Figure 1 (run.tx_ratio).
func init() {
	metrics["tx_ratio"] = metric{"", func(v view) float64 {
		if v.sim == nil || v.sim.TxRatio == nil {
			return 0
		}
		return v.sim.TxRatio.Mean
	}}
	columns["tx_ratio"] = column{"Tx time ratio", "actual/min", func(_ *Result, v view) string {
		if v.sim == nil || v.sim.TxRatio == nil {
			return "-"
		}
		return report.FormatFloat(v.sim.TxRatio.Mean, 3)
	}}
	axisLabels["tx_ratio"] = "transmission time ratio (actual over minimum)"
	axisLabels["detections"] = "deadlocks detected (messages)"
	axisLabels["recovered"] = "deadlocked messages recovered (messages)"
}

type deadlockView struct{ Detections, Recovered uint64 }

func deadlockOf(v view) *deadlockView {
	if v.sim == nil || v.sim.Packets.Deadlock == nil {
		return nil
	}
	d := v.sim.Packets.Deadlock
	return &deadlockView{d.Detections, d.Recovered}
}
