package units

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want Bytes
		err  string // substring of the error; "" means success
	}{
		{"0", 0, ""},
		{"4096", 4096, ""},
		{"4096B", 4096, ""},
		{"8KiB", 8192, ""},
		{"8KB", 8192, ""}, // papers' "8 KB" is 8192 bytes
		{"8 KB", 8192, ""},
		{"8K", 8192, ""},
		{"8k", 8192, ""},
		{"8kB", 8192, ""},
		{"128KB", 131072, ""},
		{"1.5MiB", 1536 * 1024, ""},
		{"0.5KiB", 512, ""},
		{"1GiB", 1 << 30, ""},
		{"2TiB", 2 << 40, ""},
		{" 64 ", 64, ""},
		{"8191.99999999999999999999", 0, "too many decimal places"},
		{"8191.9999999999999999999", 0, "whole number"},
		{"0.5", 0, "whole number"},
		{"1.0001KiB", 0, "whole number"},
		{"-1", 0, "negative size"},
		{"+1", 0, "without a sign"},
		{"", 0, "empty size"},
		{"KiB", 0, "missing number"},
		{"8kb", 0, "lower-case b means bits"},
		{"8Kib", 0, "lower-case b means bits"},
		{"8 bytes", 0, "unknown size unit"},
		{"8PB", 0, "unknown size unit"},
		{"9223372036854775807", 9223372036854775807, ""},
		{"9223372036854775808", 0, "out of range"},
		{"8388608TiB", 0, "out of range"},
		{"99999999999999999999", 0, "too large"},
	}
	for _, tc := range tests {
		got, err := ParseBytes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseBytes(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestBytesString(t *testing.T) {
	tests := []struct {
		in   Bytes
		want string
	}{
		{0, "0B"}, {1, "1B"}, {1023, "1023B"}, {1024, "1KiB"}, {1536, "1536B"},
		{8 * KiB, "8KiB"}, {3 * MiB, "3MiB"}, {GiB, "1GiB"}, {5 * TiB, "5TiB"},
		{1024 * TiB, "1024TiB"}, {-8 * KiB, "-8KiB"},
	}
	for _, tc := range tests {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("Bytes(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want BitRate
		err  string
	}{
		{"0", 0, ""},
		{"2.5Gbps", 2_500_000_000, ""},
		{"2.5Gb/s", 2_500_000_000, ""},
		{"2.5 Gb/s", 2_500_000_000, ""},
		{"10G", 10_000_000_000, ""},
		{"10g", 10_000_000_000, ""},
		{"800Mbps", 800_000_000, ""},
		{"100kbps", 100_000, ""},
		{"100Kbit/s", 100_000, ""},
		{"1bps", 1, ""},
		{"12345", 12345, ""},
		{"1GB/s", 8_000_000_000, ""}, // RECN-IQ "1 GB/s links"
		{"1GBps", 8_000_000_000, ""},
		{"1.25B/s", 10, ""},
		{"0.0000000001Gbps", 0, "whole number"},
		{"1.5bps", 0, "whole number"},
		{"-1Gbps", 0, "negative rate"},
		{"", 0, "empty rate"},
		{"Gbps", 0, "missing number"},
		{"10 Gbit", 0, "unknown rate unit"},
		{"10 GiBps", 0, "unknown rate unit"},
		{"10000000Tbps", 0, "out of range"},
	}
	for _, tc := range tests {
		got, err := ParseRate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRate(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestRateString(t *testing.T) {
	tests := []struct {
		in   BitRate
		want string
	}{
		{0, "0bps"}, {999, "999bps"}, {1000, "1Kbps"}, {2_500_000_000, "2.5Gbps"},
		{800 * Mbps, "800Mbps"}, {8 * Gbps, "8Gbps"}, {2_500_000_001, "2.500000001Gbps"},
		{1500 * Tbps, "1500Tbps"}, {-Gbps, "-1Gbps"},
	}
	for _, tc := range tests {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("BitRate(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
}

func TestParsePicos(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"0s", 0, ""},
		{"10ps", 10, ""},
		{"100ns", 100_000, ""},
		{"1.5us", 1_500_000, ""},
		{"200µs", 200_000_000, ""},
		{"200μs", 200_000_000, ""},
		{"1ms", 1_000_000_000, ""},
		{"1s", Second, ""},
		{"1m", Minute, ""},
		{"1h2m3s", Hour + 2*Minute + 3*Second, ""},
		{"1ms500us", 1_500_000_000, ""},
		{"0.001ns", 1, ""},
		{".5ns", 500, ""},
		{"123456789.123ns", 123456789123, ""},
		{"1.000000000000000000s", Second, ""},
		{"0.1234567890123us", 0, "whole number"},
		{"1.5ps", 0, "whole number"},
		{"100", 0, "missing unit"},
		{"100xs", 0, "unknown unit"},
		{"-5ns", 0, "negative duration"},
		{"", 0, "empty duration"},
		{"ns", 0, "missing number"},
		{"9223372036854775807ps", 9223372036854775807, ""},
		{"9223372036854775808ps", 0, "out of range"},
		{"3000h", 0, "out of range"},
		{"2000h2000h", 0, "out of range"},
	}
	for _, tc := range tests {
		got, err := ParsePicos(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePicos(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParsePicos(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatPicos(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0s"}, {1, "1ps"}, {999, "999ps"}, {100_000, "100ns"}, {150_000, "150ns"},
		{1_500_000, "1.5us"}, {1_000_001, "1.000001us"}, {Millisecond, "1ms"},
		{90 * Second, "90s"}, {-100_000, "-100ns"}, {-9223372036854775808, "-9223372.036854775808s"},
	}
	for _, tc := range tests {
		if got := FormatPicos(tc.in); got != tc.want {
			t.Errorf("FormatPicos(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestYAML checks both decode paths (yaml.Unmarshaler on a field, and the
// text form) and that Marshal writes the exact text form.
func TestYAML(t *testing.T) {
	type cfg struct {
		Buf  Bytes            `yaml:"buf"`
		Rate BitRate          `yaml:"rate"`
		Bufs []Bytes          `yaml:"bufs"`
		Ptr  *BitRate         `yaml:"ptr"`
		Map  map[string]Bytes `yaml:"map"`
	}
	var c cfg
	src := "buf: 8KB\nrate: 2.5Gb/s\nbufs: [4096, 1MiB]\nptr: 10G\nmap: {a: 1K}\n"
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if c.Buf != 8192 || c.Rate != 2_500_000_000 || len(c.Bufs) != 2 || c.Bufs[1] != MiB || *c.Ptr != 10*Gbps || c.Map["a"] != KiB {
		t.Fatalf("decoded %+v", c)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := "buf: 8KiB\nrate: 2.5Gbps\nbufs:\n    - 4KiB\n    - 1MiB\nptr: 10Gbps\nmap:\n    a: 1KiB\n"
	if string(out) != want {
		t.Errorf("Marshal = %q, want %q", out, want)
	}
	for _, bad := range []string{"buf: [1]\n", "rate: {a: 1}\n", "buf: 8kb\n", "rate: -1\n"} {
		if err := yaml.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("Unmarshal(%q) succeeded", bad)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"8KiB", "8 KB", "1.5MiB", "0", "-1", "99999999999TiB", "0.5", "8kb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBytes(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("ParseBytes(%q) = %d < 0", s, v)
		}
		back, err := ParseBytes(v.String())
		if err != nil || back != v {
			t.Fatalf("round trip %q → %d → %q → %d, %v", s, v, v.String(), back, err)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"2.5Gbps", "2.5Gb/s", "10G", "800Mbps", "1GB/s", "0", "-1", "1.5bps"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("ParseRate(%q) = %d < 0", s, v)
		}
		back, err := ParseRate(v.String())
		if err != nil || back != v {
			t.Fatalf("round trip %q → %d → %q → %d, %v", s, v, v.String(), back, err)
		}
	})
}

func FuzzParsePicos(f *testing.F) {
	for _, s := range []string{"100ns", "1.5us", "200µs", "1ms", "10ps", "0", "1h2m3.5s", "-1s", ".5ns", "1.5ps"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParsePicos(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("ParsePicos(%q) = %d < 0", s, v)
		}
		back, err := ParsePicos(FormatPicos(v))
		if err != nil || back != v {
			t.Fatalf("round trip %q → %d → %q → %d, %v", s, v, FormatPicos(v), back, err)
		}
	})
}
