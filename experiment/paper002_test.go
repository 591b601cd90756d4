package experiment

import (
	"testing"

	"github.com/fabemu/fabemu/workload/synth"
)

// TestQuickPaper002Queues: the injection-queue experiment runs quickly
// with every interface of paper 002 Figures 3-4, invariants holding.
func TestQuickPaper002Queues(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick paper002-queues sweep (a few seconds)")
	}
	rows := []string{"1_inj", "1_inj_lanes", "4_vir_inj_sh", "4_phy_inj_sh", "4_inj_shp", "4_inj_lpath", "4_inj_static"}
	res := runQuick(t, "paper002-queues", rows)
	for _, r := range res.Rows {
		if len(r.Points) != 2 {
			t.Errorf("%s: %d points, want the 2 quick loads", r.Name, len(r.Points))
		}
	}
}

// TestQuickPaper001Bursty: the bursty-load experiment names its rows as
// paper 001 does and every row delivers every message (run.drain).
func TestQuickPaper001Bursty(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick paper001-bursty rows (about a second)")
	}
	res := runQuick(t, "paper001-bursty", []string{"No-Lim", "Self-Tuned", "Trans-t"})
	for _, r := range res.Rows {
		s, ok := r.Summary.(*synth.Summary)
		if !ok || s.Drain == nil {
			t.Fatalf("%s: no drain in the summary", r.Name)
		}
		if !s.Drain.AllDelivered || s.Drain.Undelivered != 0 {
			t.Errorf("%s: drain %+v, want every message delivered", r.Name, *s.Drain)
		}
		if s.Packets.Generated == 0 {
			t.Errorf("%s: no traffic", r.Name)
		}
	}
}
