package traffic

import "testing"

// FuzzParsePattern: no input panics; an accepted spec prints in a form
// that parses back to the same spec, and builds (or refuses cleanly) for a
// few host counts.
func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"uniform", "bitrev,fixed=uniform", "hotspot:0.2@5", "hotspot:0.5@2,from=25us,until=26us",
		"hotregion:0.25,cols=16", "corner1", "corner2:0.1@32,sources=stride", "transpose", "shuffle", "x:@,=", "hotspot:1e-300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParsePattern(in)
		if err != nil {
			return
		}
		back, err := ParsePattern(s.String())
		if err != nil {
			t.Fatalf("%q printed as %q which does not parse: %v", in, s.String(), err)
		}
		if back != s {
			t.Fatalf("%q: round trip %+v -> %q -> %+v", in, s, s.String(), back)
		}
		for _, n := range []int{2, 16, 24, 64} {
			p, err := NewPattern(s, n)
			if err != nil {
				continue
			}
			rng := testRNG(1)
			for src := range n {
				if d, ok := p.Dest(src, 0, rng); ok && (d == src || d < 0 || d >= n) {
					t.Fatalf("%q on %d hosts: Dest(%d) = %d", in, n, src, d)
				}
			}
		}
	})
}

// FuzzParseSizes: no panic; accepted distributions have sizes in range
// and a mean between the smallest and largest size.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"256", "256:0.5,4096:0.5", "4KiB", "64:3,1500:1", "1:1e-300,2:1e300", ":,:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		z, err := ParseSizes(in)
		if err != nil {
			return
		}
		lo, hi := MaxSize, 1
		for _, s := range z.sizes {
			if s < 1 || s > MaxSize {
				t.Fatalf("%q: size %d out of range", in, s)
			}
			lo, hi = min(lo, s), max(hi, s)
		}
		if m := z.Mean(); !(m >= float64(lo)*0.999999 && m <= float64(hi)*1.000001) {
			t.Fatalf("%q: mean %v outside [%d, %d]", in, m, lo, hi)
		}
		if d := z.Draw(testRNG(1)); d < lo || d > hi {
			t.Fatalf("%q: drew %d", in, d)
		}
	})
}

// FuzzParsePhases: no panic; accepted schedules print and parse back to
// the same text, and a modulated process built from them terminates its
// first calls.
func FuzzParsePhases(f *testing.F) {
	for _, s := range []string{"0.2:100us,0.9:20us;repeat", "0.34:400000pkt,0.23:200000pkt;repeat=2", "0:50us,0.8:inf",
		"1:1ps;repeat", "100:1h", "0.5:1us;repeat=1048576"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParsePhases(in)
		if err != nil {
			return
		}
		back, err := ParsePhases(p.String())
		if err != nil || back.String() != p.String() {
			t.Fatalf("%q printed as %q: %v", in, p.String(), err)
		}
		r, err := p.Resolve(16, 1000)
		if err != nil {
			return
		}
		proc, err := NewModulated(Bernoulli, r, 1000)
		if err != nil {
			return
		}
		rng := testRNG(1)
		tt := proc.First(0, rng)
		for range 10 {
			if tt == Never {
				break
			}
			nt := proc.Next(tt, rng)
			if nt <= tt {
				t.Fatalf("%q: time did not advance: %d then %d", in, tt, nt)
			}
			tt = nt
		}
	})
}
