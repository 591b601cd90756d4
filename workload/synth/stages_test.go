package synth

import (
	"math"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/params"
	"github.com/fabemu/fabemu/model"
)

// TestStageSeries: on paper 003's 16-host MIN (2 stages of 8-port
// switches) under uniform traffic, the per-stage utilisation series has
// the MIN's link classes, covers the run bin by bin, and matches the
// analytic loads. The injection links are busy at least for the offered
// load's serialisation time (0.5) and less than 0.6: a link's busy time
// runs until the packet's tail has left, which under cut-through can be
// later than its serialisation time (fabric's send: the tail leaves no
// earlier than it arrived); 0.55 is measured here.
// A packet leaves its leaf switch with probability (N-k)/(N-1) = 12/15
// under uniform destinations, so the up links out of stage 0 and the down
// links into it carry 0.8 of the injection links' utilisation, and the
// links to the hosts carry what the injection links carry. Tolerance
// 0.03: 60 us of Bernoulli traffic, 1,100+ packets per host.
func TestStageSeries(t *testing.T) {
	c, err := model.LookupPreset("paper000-min64")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"topology.hosts=16", "traffic.pattern=uniform", "traffic.load=0.5", "traffic.sizes=64",
		"run.warmup=10us", "run.duration=60us", "run.bin=5us", "run.stage_series=true"} {
		if err := params.Set(&c, kv); err != nil {
			t.Fatal(err)
		}
	}
	s, err := RunSim(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Invariants.OK {
		t.Fatalf("invariants: %v", s.Invariants.Violations)
	}
	st := s.Stages
	if st == nil {
		t.Fatal("no stage series")
	}
	if got := strings.Join(st.Classes, ","); got != "injection,up 0-1,down 1-0,ejection" {
		t.Fatalf("classes %s", got)
	}
	for c, n := range st.Links {
		if n != 16 {
			t.Errorf("class %s: %d links, want 16", st.Classes[c], n)
		}
	}
	if len(st.TimeUs) != 14 || st.BinUs != 5 || st.TimeUs[0] != 0 || st.TimeUs[13] != 65 {
		t.Fatalf("bins: %v (width %g), want 14 bins of 5 us from 0", st.TimeUs, st.BinUs)
	}
	mean := func(c int) float64 { // after the warm-up
		sum := 0.0
		for _, u := range st.Utilisation[c][2:] {
			sum += u
		}
		return sum / float64(len(st.Utilisation[c])-2)
	}
	inj, up, down, ej := mean(0), mean(1), mean(2), mean(3)
	if inj < 0.5-0.03 || inj > 0.6 {
		t.Errorf("injection links busy %.3f, want from the offered 0.5 to 0.6", inj)
	}
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"up 0-1", up, 0.8 * inj}, {"down 1-0", down, 0.8 * inj}, {"ejection", ej, inj}} {
		if math.Abs(x.got-x.want) > 0.03 {
			t.Errorf("%s links busy %.3f, want %.3f", x.name, x.got, x.want)
		}
	}
	// The bins add up to the links' busy time over the run: the whole-run
	// mean utilisation the summary reports (over every link, host links
	// included, all of which the four classes cover).
	total := 0.0
	for c := range st.Classes {
		for _, u := range st.Utilisation[c] {
			total += u * st.BinUs * float64(st.Links[c])
		}
	}
	runUs := float64(c.Run.Warmup+c.Run.Duration) / float64(des.Microsecond)
	if got := total / runUs / 64; math.Abs(got-s.LinkUtilisation.Mean) > 1e-3 {
		t.Errorf("bins add up to a mean utilisation of %.4f, the summary says %.4f", got, s.LinkUtilisation.Mean)
	}
}

func TestStageSeriesNeedsMIN(t *testing.T) {
	c, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{"run.duration=2us", "run.warmup=1us", "run.stage_series=true"} {
		if err := params.Set(&c, kv); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := RunSim(c, nil); err == nil || !strings.Contains(err.Error(), "needs a multistage network") {
		t.Fatalf("stage series on a torus: %v", err)
	}
}
