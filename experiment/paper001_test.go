package experiment

import (
	"strings"
	"testing"
)

// TestQuickPaper001: the paper 001 experiments run quickly, name their
// rows as the issue asks, and Trans-t resolves u1 from Table 1.
func TestQuickPaper001(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quick paper 001 sweeps (about 10 s)")
	}
	e, err := Load("paper001-patterns")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range e.Rows {
		rows = append(rows, r.Name)
		if s := r.Series; s != "No-Lim" && s != "Self-Tuned" && s != "Trans-t" {
			t.Errorf("row %s: series %q, want No-Lim, Self-Tuned or Trans-t", r.Name, s)
		}
	}
	res := runQuick(t, "paper001-patterns", rows)
	notes := e.Notes()
	if !strings.Contains(strings.Join(notes, "\n"), "u1: 4 (paper 001 Table 1") {
		t.Errorf("notes do not say Trans-t took u1 = 4 from Table 1: %q", notes)
	}
	for _, r := range res.Rows {
		if len(r.Points) != 2 {
			t.Errorf("%s: %d points, want the 2 quick loads", r.Name, len(r.Points))
		}
	}
	if _, err := Load("paper001-fig3"); err != nil {
		t.Fatal(err)
	}
}
