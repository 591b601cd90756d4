package experiment

import (
	"strings"
	"testing"
)

// TestQuickPaper000SAQs runs the paper 000 SAQ and cello experiments with
// --quick: the RECN rows carry the SAQ figures of §4.4 (per ingress and
// egress port, network-wide, over time), within the configured 8 per
// port; the other rows print "-" for them; the cello rows say the trace
// is synthetic.
func TestQuickPaper000SAQs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two quick experiments (a few seconds)")
	}
	t.Run("paper000-saqs", func(t *testing.T) {
		res := runQuick(t, "paper000-saqs", []string{"RECN/corner1", "RECN/corner2"})
		for _, r := range res.Rows {
			rep := r.sim.RECN
			if rep == nil {
				t.Fatalf("row %s: no RECN report", r.Name)
			}
			if rep.MaxSAQsPerInput < 1 || rep.MaxSAQsPerInput > 8 || rep.MaxSAQsPerOutput > 8 || rep.MaxSAQsTotal < rep.MaxSAQsPerInput {
				t.Errorf("row %s: SAQs in/out/total %d/%d/%d", r.Name, rep.MaxSAQsPerInput, rep.MaxSAQsPerOutput, rep.MaxSAQsTotal)
			}
			n := len(rep.SAQsOverTime)
			if n == 0 || len(rep.SAQsPerInputOverTime) != n || len(rep.SAQsPerOutputOverTime) != n {
				t.Fatalf("row %s: series lengths %d/%d/%d", r.Name, n, len(rep.SAQsPerInputOverTime), len(rep.SAQsPerOutputOverTime))
			}
			most := 0
			for _, v := range rep.SAQsPerInputOverTime {
				most = max(most, v)
			}
			if most != rep.MaxSAQsPerInput {
				t.Errorf("row %s: per-input series peaks at %d, max_saqs_per_input %d", r.Name, most, rep.MaxSAQsPerInput)
			}
		}
	})
	t.Run("paper000-cello", func(t *testing.T) {
		res := runQuick(t, "paper000-cello", []string{"IQ", "4Q", "VOQsw", "VOQnet", "RECN"})
		var buf strings.Builder
		if err := res.WriteTable(&buf); err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			if (r.replay.RECN != nil) != (r.Name == "RECN") {
				t.Errorf("row %s: RECN report %v", r.Name, r.replay.RECN)
			}
		}
		if !strings.Contains(res.exp.Description, "SYNTHETIC TRACE") {
			t.Errorf("the description must say the trace is synthetic")
		}
	})
}
