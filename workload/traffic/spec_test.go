package traffic

import (
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	good := []struct {
		in    string
		canon string
	}{
		{"uniform", "uniform"},
		{"Random", "uniform"},
		{"bit-reversal", "bitrev"},
		{"bitrev,fixed=uniform", "bitrev,fixed=uniform"},
		{"bitrev,fixed=silent", "bitrev"},
		{"butterfly", "butterfly"},
		{"complement", "complement"},
		{"perfect-shuffle", "shuffle"},
		{"transpose", "transpose"},
		{"hotspot", "hotspot"},
		{"hotspot:0.2@5", "hotspot:0.2@5"},
		{"hotspot:0.1", "hotspot"},
		{"hotspot@3", "hotspot@3"},
		{"hotspot:0.5@2,from=25us,until=26us", "hotspot:0.5@2,from=25us,until=26us"},
		{"hotregion", "hotregion"},
		{"hot-region:0.3,cols=16", "hotregion:0.3,cols=16"},
		{"corner1", "corner1"},
		{"corner2:0.1@32,sources=stride", "corner2:0.1@32,sources=stride"},
		{"corner2:1", "corner2"},
	}
	for _, tc := range good {
		s, err := ParsePattern(tc.in)
		if err != nil {
			t.Errorf("ParsePattern(%q): %v", tc.in, err)
			continue
		}
		if got := s.String(); got != tc.canon {
			t.Errorf("ParsePattern(%q).String() = %q, want %q", tc.in, got, tc.canon)
		}
	}
	s, _ := ParsePattern("hotspot:0.2@5")
	if s.Fraction != 0.2 || s.Node != 5 {
		t.Errorf("hotspot:0.2@5 = %+v", s)
	}
	bad := []struct{ in, want string }{
		{"", "unknown traffic pattern"},
		{"zipf", "unknown traffic pattern"},
		{"hotspot:abc", "bad argument"},
		{"hotspot:0", "out of range (0, 1]"},
		{"hotspot:1.5", "out of range"},
		{"hotspot:NaN", "not a finite number"},
		{"hotspot@-1", "bad hot node"},
		{"hotspot@x", "bad hot node"},
		{"uniform:0.3", "takes no ':' argument"},
		{"bitrev@3", "takes no '@node'"},
		{"bitrev,fixed=maybe", "want silent or uniform"},
		{"uniform,fixed=uniform", "unknown option"},
		{"hotspot,from", "not key=value"},
		{"hotspot,from=1us,from=2us", "given twice"},
		{"hotspot,from=2us,until=1us", "not after"},
		{"hotspot,until=-3us", "negative"},
		{"hotregion,cols=0", "positive integer"},
		{"corner1,sources=first", "want last or stride"},
		{"corner1:-1", "must be positive"},
		{"corner1:0", "must be positive"},
	}
	for _, tc := range bad {
		_, err := ParsePattern(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePattern(%q) error = %v, want it to mention %q", tc.in, err, tc.want)
		}
	}
}

func TestParseSizes(t *testing.T) {
	good := []struct {
		in    string
		canon string
		mean  float64
	}{
		{"256", "256", 256},
		{"4KiB", "4096", 4096},
		{"256:0.5,4096:0.5", "256:0.5,4096:0.5", 2176},
		{"64:3,1500:1", "64:0.75,1500:0.25", 423},
		{"100,300", "100:0.5,300:0.5", 200},
	}
	for _, tc := range good {
		z, err := ParseSizes(tc.in)
		if err != nil {
			t.Errorf("ParseSizes(%q): %v", tc.in, err)
			continue
		}
		if z.String() != tc.canon || z.Mean() != tc.mean {
			t.Errorf("ParseSizes(%q) = %q mean %v, want %q mean %v", tc.in, z.String(), z.Mean(), tc.canon, tc.mean)
		}
	}
	// Draw frequencies follow the weights: 100 000 draws, sigma 0.0014.
	z, _ := ParseSizes("64:3,1500:1")
	rng := testRNG(5)
	small := 0
	for range 100000 {
		if z.Draw(rng) == 64 {
			small++
		}
	}
	if f := float64(small) / 100000; f < 0.74 || f > 0.76 {
		t.Errorf("64-byte share %.4f, want 0.75 ± 0.01", f)
	}
	bad := []struct{ in, want string }{
		{"", "empty"},
		{"0", "out of range"},
		{"-5", "negative"},
		{"2GiB", "out of range"},
		{"256:0", "positive number"},
		{"256:-1", "positive number"},
		{"256:x", "positive number"},
		{"abc", "entry 1"},
		{"256,,512", "entry 2"},
	}
	for _, tc := range bad {
		_, err := ParseSizes(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSizes(%q) error = %v, want it to mention %q", tc.in, err, tc.want)
		}
	}
	if _, err := FixedSize(0); err == nil {
		t.Error("FixedSize(0) accepted")
	}
}
