package report

import (
	"math"
	"testing"
)

func TestFormatFloat(t *testing.T) {
	tests := []struct {
		v    float64
		sig  int
		want string
	}{
		{0, 0, "0"},
		{1, 0, "1"},
		{2.5, 0, "2.5"},
		{0.87, 0, "0.87"},
		{3.14159265, 0, "3.142"},
		{3.14159265, 2, "3.1"},
		{-3.14159265, 3, "-3.14"},
		{9.99996, 4, "10"},
		{123.456, 4, "123.5"},
		{1234.6, 4, "1,235"},
		{1234567.8, 4, "1,234,568"},
		{-1234567.8, 4, "-1,234,568"},
		{0.001234567, 3, "0.00123"},
		{0.0001, 4, "0.0001"},
		{0.000015, 2, "1.5e-05"},
		{1.5e-7, 4, "1.5e-07"},
		{2e15, 3, "2.00e+15"},
		{math.NaN(), 4, "NaN"},
		{math.Inf(1), 4, "+Inf"},
		{math.Inf(-1), 4, "-Inf"},
	}
	for _, tt := range tests {
		if got := FormatFloat(tt.v, tt.sig); got != tt.want {
			t.Errorf("FormatFloat(%v, %d) = %q, want %q", tt.v, tt.sig, got, tt.want)
		}
	}
}

func TestFormatInt(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{999, "999"},
		{1000, "1,000"},
		{123456, "123,456"},
		{1234567, "1,234,567"},
		{-1234567, "-1,234,567"},
		{math.MinInt64, "-9,223,372,036,854,775,808"},
	}
	for _, tt := range tests {
		if got := FormatInt(tt.n); got != tt.want {
			t.Errorf("FormatInt(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	if got := FormatUint(math.MaxUint64); got != "18,446,744,073,709,551,615" {
		t.Errorf("FormatUint(max) = %q", got)
	}
}

func TestFormatPercent(t *testing.T) {
	tests := []struct {
		r    float64
		want string
	}{
		{0, "0%"},
		{0.5, "50%"},
		{0.1234, "12.3%"},
		{1, "100%"},
		{0.000123, "0.0123%"},
		{1.5, "150%"},
	}
	for _, tt := range tests {
		if got := FormatPercent(tt.r); got != tt.want {
			t.Errorf("FormatPercent(%v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}
