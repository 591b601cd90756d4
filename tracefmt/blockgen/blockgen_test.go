package blockgen

import (
	"math"
	"testing"

	"github.com/fabemu/fabemu/tracefmt"
)

func summarize(t *testing.T, p Profile, seed uint64, n int) *tracefmt.Stats {
	t.Helper()
	g, err := New(p, seed)
	if err != nil {
		t.Fatal(err)
	}
	s := tracefmt.NewSummarizer()
	for i := 0; i < n; i++ {
		s.Add(g.Next())
	}
	return s.Stats(nil)
}

// TestProfilesMatchTheirSources checks that long generated traces show the
// published statistics each profile cites.
func TestProfilesMatchTheirSources(t *testing.T) {
	for _, name := range Profiles() {
		t.Run(name, func(t *testing.T) {
			p, err := Like(name)
			if err != nil {
				t.Fatal(err)
			}
			st := summarize(t, p, 1, 200000)
			near := func(what string, got, want, tol float64) {
				if math.Abs(got-want) > tol*want {
					t.Errorf("%s = %.4g, want %.4g within %.0f%%", what, got, want, tol*100)
				}
			}
			near("read fraction", st.ReadFraction, p.ReadFraction, 0.03)
			near("mean size", st.MeanSizeBytes, p.MeanSize(), 0.02)
			near("rate", st.RatePerS, p.Rate, 0.10)
			if len(st.Devices) != p.Disks {
				t.Errorf("%d disks used, want %d", len(st.Devices), p.Disks)
			}
			if st.InterarrivalCV < 2 {
				t.Errorf("inter-arrival CV %.2f: not bursty", st.InterarrivalCV)
			}
			if st.Devices[0].Requests <= st.Devices[len(st.Devices)-1].Requests*3 {
				t.Errorf("no skew across disks: %+v", st.Devices)
			}
			if st.OutOfOrder != 0 {
				t.Errorf("%d out of order", st.OutOfOrder)
			}
		})
	}
	p, _ := Like("cello99")
	if m := p.MeanSize(); m < 7000 || m > 7100 {
		t.Errorf("cello99 mean size %.0f, want about 7.06 kB (Lee et al. 2013)", m)
	}
}

// TestCello99ShortGaps checks the "31% of writes within 1.5 ms" shape.
func TestCello99ShortGaps(t *testing.T) {
	p, _ := Like("cello99")
	g, _ := New(p, 5)
	prev := g.Next().Arrival
	short := 0
	const n = 100000
	for i := 0; i < n; i++ {
		r := g.Next()
		if r.Arrival-prev < 1500000 {
			short++
		}
		prev = r.Arrival
	}
	if f := float64(short) / n; f < 0.27 || f > 0.37 {
		t.Errorf("%.3f of inter-arrivals under 1.5 ms, want about 0.31", f)
	}
}

func TestDeterministic(t *testing.T) {
	p, _ := Like("cello92")
	a, _ := New(p, 9)
	b, _ := New(p, 9)
	c, _ := New(p, 10)
	same := true
	for i := 0; i < 1000; i++ {
		x, y, z := a.Next(), b.Next(), c.Next()
		if x != y {
			t.Fatalf("record %d differs for the same seed", i)
		}
		if x != z {
			same = false
		}
	}
	if same {
		t.Error("different seeds gave the same trace")
	}
}

func TestValidate(t *testing.T) {
	base, _ := Like("cello99")
	tests := []struct {
		name string
		edit func(*Profile)
	}{
		{"rate", func(p *Profile) { p.Rate = 0 }},
		{"read fraction", func(p *Profile) { p.ReadFraction = 1.5 }},
		{"no sizes", func(p *Profile) { p.Sizes = nil }},
		{"odd size", func(p *Profile) { p.Sizes = []SizeWeight{{1000, 1}} }},
		{"zero weights", func(p *Profile) { p.Sizes = []SizeWeight{{1024, 0}} }},
		{"disks", func(p *Profile) { p.Disks = 0 }},
		{"burst", func(p *Profile) { p.BurstLen = 0.5 }},
		{"idle cv", func(p *Profile) { p.IdleCV = 0.5 }},
		{"no idle time", func(p *Profile) { p.BurstLen = 1000; p.BurstGap = 1e9 }},
		{"initiators", func(p *Profile) { p.Initiators = 0 }},
		{"seq", func(p *Profile) { p.SeqRead = -1 }},
	}
	for _, tt := range tests {
		p := base
		p.Sizes = append([]SizeWeight(nil), base.Sizes...)
		tt.edit(&p)
		if _, err := New(p, 1); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	if _, err := Like("nope"); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("1k:0.1, 2048:0.2,8K:0.7")
	if err != nil || len(got) != 3 || got[0] != (SizeWeight{1024, 0.1}) || got[2] != (SizeWeight{8192, 0.7}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "1k", "x:1", "1k:-1", "1k:y"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
