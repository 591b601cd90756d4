package emu

import (
	"strings"
	"testing"
	"time"

	simmodel "github.com/fabemu/fabemu/model"
)

// TestMeasureBound: the measurement runs the model for its budget and
// reports the link's data rate and what the model carried.
func TestMeasureBound(t *testing.T) {
	m, err := simmodel.LookupPreset("ib-edr-pair")
	if err != nil {
		t.Fatal(err)
	}
	b, err := MeasureBound(m, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if b.LinkRate != 100_000_000_000 {
		t.Errorf("link data rate %d, want 100 Gb/s (103.125 Gb/s at 64b/66b)", b.LinkRate)
	}
	if b.ModelRate <= 0 || b.EventRate <= 0 || b.Measured < 30*time.Millisecond {
		t.Errorf("bound %+v", b)
	}
	if s := b.String(); !strings.Contains(s, "throughput bound: ") || !strings.Contains(s, "link data rate 100.0 Gb/s") {
		t.Errorf("String() = %q", s)
	}
	t.Log(b)
}
