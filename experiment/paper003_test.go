package experiment

import "testing"

// onlyRows keeps the rows of e named in names, and fails unless all are
// there.
func onlyRows(t *testing.T, e *Experiment, names ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	rows := e.Rows[:0]
	for _, r := range e.Rows {
		if want[r.Name] {
			rows = append(rows, r)
		}
	}
	e.Rows = rows
	if len(rows) != len(want) {
		t.Fatalf("%s has %d of the rows %v", e.Name, len(rows), names)
	}
}

// TestPaper003MinHotSpotRecovers runs, at the experiment's own scale
// (200 us, 16 hosts: about a second), the rows of paper003-min that carry
// Fig. 2.21's claim: under the hot spot (10% of every host's packets to
// host 6, throughout) every organisation without RECN-IQ drops and
// "using a very limited number of SAQs we can achieve maximum network
// efficiency" (paper 003 §2.9.2). Checked over the last 100 us:
//   - RECN-IQ with its SAQs at the NICs, on iq and on PCIQ-2 (the thesis'
//     row: PCIQ-2+RECN-IQ, 4 SAQs per read port), reaches the hot spot's
//     bound within 6%. The bound (as §2.7 gives it for 24 ports: 90% + 1/24 x 10%):
//     each of the 15 other outputs is offered 0.9 of its link by the
//     uniform part, host 6's output carries at most its link, so at most
//     (15 x 0.9 + 1) / 16 = 0.906 of the link rate per host; +0.02 above
//     it for the Bernoulli sources' noise (offered load 1.001) and bins.
//   - RECN-IQ whose congestion information stops at the first switch
//     (nic_saqs -1) and plain IQ stay below 0.6: the hosts' single queues
//     hold their other packets behind the hot ones (they measured 0.42-0.45).
func TestPaper003MinHotSpotRecovers(t *testing.T) {
	e, err := Load("paper003-min")
	if err != nil {
		t.Fatal(err)
	}
	onlyRows(t, e, "uniform/RECN-IQ", "hot-spot/RECN-IQ", "hot-spot/PCIQ-2+RECN-IQ", "hot-spot/RECN-IQ-noNIC", "hot-spot/IQ")
	res, err := Run(e, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ok, bad := res.InvariantsOK(); !ok {
		t.Fatalf("invariants: %v", bad)
	}
	late := map[string]float64{}
	for _, r := range res.Rows {
		m, ok := r.Efficiency.windowMean(100, 200)
		if !ok {
			t.Fatalf("row %s: no efficiency over 100-200 us", r.Name)
		}
		late[r.Name] = m
	}
	t.Logf("efficiency over the last 100 us: %v", late)
	uni := late["uniform/RECN-IQ"]
	for _, n := range []string{"hot-spot/RECN-IQ", "hot-spot/PCIQ-2+RECN-IQ"} {
		if hot, bound := late[n], (15*0.9+1)/16; hot < 0.94*bound || hot > bound+0.02 {
			t.Errorf("%s under the hot spot %.3f, want within 6%% of the bound %.3f (uniform RECN-IQ: %.3f)", n, hot, bound, uni)
		}
	}
	for _, n := range []string{"hot-spot/RECN-IQ-noNIC", "hot-spot/IQ"} {
		if late[n] >= 0.6 {
			t.Errorf("%s under the hot spot %.3f, want the collapse below 0.6", n, late[n])
		}
	}
}

// TestPaper003SwitchHotSpotPCIQRECNIQ runs the hot-spot rows of
// paper003-switch at full load (100 us after 20 us, as the experiment;
// about a second): one 24-port switch, every host sending 10% of its
// packets to host 6. Paper 003 Fig. 2.16: every organisation ~45%, PCIQ-2
// enhanced with RECN-IQ ~90%, the bound 90% + 1/24 x 10% = 0.904 (23
// outputs offered 0.9 of their link, output 6 at most its own). Every
// input is fed by a host, so it takes the SAQs at the NICs: want
// PCIQ-2+RECN-IQ with 2 and with 4 SAQs per read port within 6% of the
// bound (+0.02 for the sources' noise; they measured 0.875 and 0.899, and
// 0.48 without NIC SAQs), and PCIQ-2 without RECN-IQ below 0.5 (it
// measured 0.33).
func TestPaper003SwitchHotSpotPCIQRECNIQ(t *testing.T) {
	e, err := Load("paper003-switch")
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]bool{"hot-spot/PCIQ-2+RECN-IQ-4": true, "hot-spot/PCIQ-2+RECN-IQ": true, "hot-spot/PCIQ-2": false}
	onlyRows(t, e, "hot-spot/PCIQ-2+RECN-IQ-4", "hot-spot/PCIQ-2+RECN-IQ", "hot-spot/PCIQ-2")
	e.Loads = []float64{1.0}
	res, err := Run(e, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ok, bad := res.InvariantsOK(); !ok {
		t.Fatalf("invariants: %v", bad)
	}
	const bound = (23*0.9 + 1) / 24
	for _, r := range res.Rows {
		if len(r.Points) != 1 {
			t.Fatalf("row %s: %d points, want the full load only", r.Name, len(r.Points))
		}
		s := r.Points[0].Summary
		eff := efficiencyOf(s, s.AcceptedLoad)
		t.Logf("%s: efficiency %.3f (bound %.3f)", r.Name, eff, bound)
		if keep[r.Name] {
			if eff < 0.94*bound || eff > bound+0.02 {
				t.Errorf("%s under the hot spot %.3f, want within 6%% of the bound %.3f", r.Name, eff, bound)
			}
		} else if eff >= 0.5 {
			t.Errorf("%s under the hot spot %.3f, want HOL blocking below 0.5", r.Name, eff)
		}
	}
}

// TestPaper003HotSpot32 runs Fig. 4.11's case (paper003-hotspot32: the
// 256-host MIN of 32x32 switches at full load, 50% of every host's packets
// to host 2 for 1 us from 25 us) for 120 us instead of 400 (about 10 s)
// and checks the thesis' shape (§4.2.2): "unless RECN-IQ with at least 4
// SAQs is used, the introduction of such a tiny hot-spot degrades the
// throughput for long time".
//   - IQ loses more than half of its efficiency over 40-100 us against
//     10-25 us, before the hot packets arrive (it measured 0.58 -> 0.11-0.21).
//   - RECN-IQ with 4 and 8 SAQs keeps at least 90% of it over 30-120 us (it
//     measured 0.83 -> 0.80-0.82 and 0.86 -> 0.85-0.87); the 10% allows for
//     the burst's own share: for 1 us host 2's link is offered 128 times
//     what it carries, and those packets drain through it for about 100 us.
func TestPaper003HotSpot32(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of simulation (-short)")
	}
	e, err := Load("paper003-hotspot32")
	if err != nil {
		t.Fatal(err)
	}
	onlyRows(t, e, "IQ", "RECN-IQ", "RECN-IQ-8")
	e.Base.Set = append(e.Base.Set, "run.duration=120us")
	res, err := Run(e, Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if ok, bad := res.InvariantsOK(); !ok {
		t.Fatalf("invariants: %v", bad)
	}
	for _, r := range res.Rows {
		before, ok1 := r.Efficiency.windowMean(10, 30)
		after, ok2 := r.Efficiency.windowMean(40, 100)
		if r.Name != "IQ" {
			after, ok2 = r.Efficiency.windowMean(30, 120)
		}
		if !ok1 || !ok2 {
			t.Fatalf("row %s: no efficiency series over 10-120 us", r.Name)
		}
		t.Logf("%s: %.3f before the hot spot, %.3f after", r.Name, before, after)
		switch {
		case r.Name == "IQ" && after > 0.5*before:
			t.Errorf("IQ keeps %.3f of %.3f after the hot spot: want it to lose more than half (HOL blocking of the tree)", after, before)
		case r.Name != "IQ" && after < 0.9*before:
			t.Errorf("%s falls from %.3f to %.3f after the hot spot: want at least 90%% kept", r.Name, before, after)
		}
	}
}
