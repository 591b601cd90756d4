package traffic

import (
	"strings"
	"testing"
)

func collect(t *testing.T, proc Process, until int64, seed uint64) []int64 {
	t.Helper()
	rng := testRNG(seed)
	var out []int64
	for tt := proc.First(0, rng); tt < until; tt = proc.Next(tt, rng) {
		out = append(out, tt)
		if len(out) > 1e6 {
			t.Fatal("runaway")
		}
	}
	return out
}

// Phases switch exactly at their boundaries: a periodic process with a
// 1 ns message time at load 1 then 0.5 creates at 0..9 ns, then every 2 ns
// from 10 ns, and the cycle repeats.
func TestPhasesSwitchTimes(t *testing.T) {
	ph, err := ParsePhases("1:10ns,0.5:10ns;repeat")
	if err != nil {
		t.Fatal(err)
	}
	proc, err := NewModulated(Periodic, ph, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, proc, 40000, 1)
	var want []int64
	for c := int64(0); c < 2; c++ {
		for i := int64(0); i < 10; i++ {
			want = append(want, c*20000+i*1000)
		}
		for i := int64(0); i < 5; i++ {
			want = append(want, c*20000+10000+i*2000)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("creation %d at %d, want %d\ngot %v", i, got[i], want[i], got)
		}
	}
}

// On/off bursts: no creation in the off phases; one-shot and repeat=N
// schedules stop; the on phases carry their load.
func TestPhasesOnOff(t *testing.T) {
	const mean = 1000.0
	for _, kind := range []ProcessKind{Bernoulli, Exponential, Periodic} {
		ph, _ := ParsePhases("0.8:100us,0:50us;repeat=3")
		proc, err := NewModulated(kind, ph, mean)
		if err != nil {
			t.Fatal(err)
		}
		got := collect(t, proc, Never, 2)
		perCycle := make([]int, 3)
		for _, tt := range got {
			c, r := tt/150_000_000, tt%150_000_000
			if c >= 3 || r >= 100_000_000 {
				t.Fatalf("%v: creation at %d ps is in an off phase or after the end", kind, tt)
			}
			perCycle[c]++
		}
		for c, n := range perCycle {
			// 80 000 expected; sigma <= 283 (Poisson), so ±2 % is > 5 sigma.
			if n < 78400 || n > 81600 {
				t.Errorf("%v cycle %d: %d creations, want 80000 ± 2%%", kind, c, n)
			}
		}
	}
	// One-shot with a final infinite phase keeps going.
	ph, _ := ParsePhases("0:1us,1:inf")
	proc, _ := NewModulated(Periodic, ph, 1000)
	got := collect(t, proc, 1_010_000, 3)
	if len(got) != 10 || got[0] != 1_000_000 {
		t.Errorf("0:1us,1:inf: %v", got)
	}
	// All-zero schedules never create.
	ph, _ = ParsePhases("0:1us;repeat")
	proc, _ = NewModulated(Bernoulli, ph, 1000)
	if proc.First(0, testRNG(1)) != Never {
		t.Error("silent schedule created a message")
	}
}

// Paper 001 §4.2: 400 000 messages at 0.34 and 200 000 at 0.23, applied
// twice, on 256 nodes; Resolve turns the counts into expected durations.
func TestPhasesResolvePackets(t *testing.T) {
	ph, err := ParsePhases("0.34:400000pkt,0.23:200000pkt;repeat=2")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ph.Resolve(256, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{4595588, 3396739} // 400000/256·1000/0.34 and 200000/256·1000/0.23 ps, rounded
	if r.List[0].Duration != want[0] || r.List[1].Duration != want[1] || r.Repeat != 2 {
		t.Errorf("resolved %+v, want durations %v", r, want)
	}
	if _, err := NewModulated(Bernoulli, ph, 1000); err == nil {
		t.Error("unresolved packet phase accepted")
	}
}

func TestParsePhases(t *testing.T) {
	good := []struct{ in, canon string }{
		{"0.2:100us,0.9:20us;repeat", "0.2:100us,0.9:20us;repeat"},
		{"0.2:100us, 0.9:20us", "0.2:100us,0.9:20us"},
		{"1:1ms;repeat=2", "1:1ms;repeat=2"},
		{"0.34:400000pkt,0.23:200000pkt;repeat=2", "0.34:400000pkt,0.23:200000pkt;repeat=2"},
		{"0:50us,0.8:inf", "0:50us,0.8:inf"},
		{"1.5:1.5us", "1.5:1.5us"},
	}
	for _, tc := range good {
		p, err := ParsePhases(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if p.String() != tc.canon {
			t.Errorf("%q: String = %q, want %q", tc.in, p.String(), tc.canon)
		}
	}
	bad := []struct{ in, want string }{
		{"", "no phases"},
		{"0.5", "load:duration"},
		{"x:1us", "load"},
		{"0.5:1", "duration"},
		{"0.5:-1us", "negative"},
		{"0.5:0s", "positive"},
		{"101:1us", "out of range"},
		{"0.5:inf,0.2:1us", "only the last"},
		{"0.5:inf;repeat", "cannot be repeated"},
		{"0:10pkt", "never completes"},
		{"0.5:1us;again", "unknown suffix"},
		{"0.5:1us;repeat=0", "repeat"},
		{"0.5:xpkt", "packet count"},
	}
	for _, tc := range bad {
		_, err := ParsePhases(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePhases(%q) error = %v, want it to mention %q", tc.in, err, tc.want)
		}
	}
}
