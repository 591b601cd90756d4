package experiment

import (
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
