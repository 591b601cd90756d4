package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSeriesFormatFor(t *testing.T) {
	tests := []struct {
		path string
		want SeriesFormat
	}{
		{"a.csv", SeriesCSV},
		{"dir.x/A.CSV", SeriesCSV},
		{"a.jsonl", SeriesJSONLines},
		{"a.ndjson", SeriesJSONLines},
		{"a", SeriesJSONLines},
		{"-", SeriesJSONLines},
		{"csv", SeriesJSONLines},
	}
	for _, tt := range tests {
		if got := SeriesFormatFor(tt.path); got != tt.want {
			t.Errorf("SeriesFormatFor(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestSeriesWriter(t *testing.T) {
	tests := []struct {
		format SeriesFormat
		want   string
	}{
		{SeriesCSV, "time_ns,accepted,label\n0,0.5,1e+06\n1000,NaN,+Inf\n2000,-Inf,-1.25\n\"a,b\",\"say \"\"hi\"\"\",x\n"},
		{SeriesJSONLines, `{"time_ns":0,"accepted":0.5,"label":1e+06}
{"time_ns":1000,"accepted":null,"label":null}
{"time_ns":2000,"accepted":null,"label":-1.25}
{"time_ns":"a,b","accepted":"say \"hi\"","label":"x"}
`},
	}
	for _, tt := range tests {
		t.Run(tt.format.String(), func(t *testing.T) {
			var out bytes.Buffer
			s := NewSeriesWriter(&out, tt.format)
			must(t, s.Header([]string{"time_ns", "accepted", "label"}))
			must(t, s.Row([]float64{0, 0.5, 1e6}))
			must(t, s.Row([]float64{1000, math.NaN(), math.Inf(1)}))
			must(t, s.Row([]float64{2000, math.Inf(-1), -1.25}))
			must(t, s.RowStrings([]string{"a,b", `say "hi"`, "x"}))
			must(t, s.Close())
			if out.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", out.String(), tt.want)
			}
		})
	}
}

func TestSeriesWriterErrors(t *testing.T) {
	tests := []struct {
		name string
		do   func(s *SeriesWriter) error
		want string
	}{
		{"row before header", func(s *SeriesWriter) error { return s.Row([]float64{1}) }, "before header"},
		{"empty header", func(s *SeriesWriter) error { return s.Header(nil) }, "no columns"},
		{"empty name", func(s *SeriesWriter) error { return s.Header([]string{"a", ""}) }, "column 2 has an empty name"},
		{"duplicate", func(s *SeriesWriter) error { return s.Header([]string{"a", "b", "a"}) }, `columns 1 and 3 are both named "a"`},
		{"header twice", func(s *SeriesWriter) error {
			s.Header([]string{"a"})
			return s.Header([]string{"a"})
		}, "twice"},
		{"short row", func(s *SeriesWriter) error {
			s.Header([]string{"a", "b"})
			s.Row([]float64{1, 2})
			return s.Row([]float64{1})
		}, "row 2 has 1 values, header has 2 columns"},
		{"sticky", func(s *SeriesWriter) error {
			s.Header([]string{"a", "b"})
			s.RowStrings([]string{"1"})
			return s.Row([]float64{1, 2})
		}, "row 1 has 1 values"},
		{"after close", func(s *SeriesWriter) error {
			s.Header([]string{"a"})
			s.Close()
			return s.Row([]float64{1})
		}, "after Close"},
	}
	for _, f := range []SeriesFormat{SeriesCSV, SeriesJSONLines} {
		for _, tt := range tests {
			t.Run(f.String()+"/"+tt.name, func(t *testing.T) {
				s := NewSeriesWriter(&bytes.Buffer{}, f)
				err := tt.do(s)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.want)
				}
			})
		}
	}
}

func TestCreateSeriesFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"s.csv", "s.jsonl"} {
		path := filepath.Join(dir, name)
		s, err := CreateSeries(path)
		if err != nil {
			t.Fatal(err)
		}
		must(t, s.Header([]string{"t", "v"}))
		must(t, s.Row([]float64{1, 2}))
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s exists before Close (err %v)", name, err)
		}
		must(t, s.Close())
		must(t, s.Close()) // idempotent
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"s.csv": "t,v\n1,2\n", "s.jsonl": "{\"t\":1,\"v\":2}\n"}[name]
		if string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	assertOnly(t, dir, "s.csv", "s.jsonl")
}

func TestCreateSeriesFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.csv")
	must(t, os.WriteFile(path, []byte("old"), 0o644))

	s, err := CreateSeries(path)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Header([]string{"t"}))
	s.Row([]float64{1, 2}) // wrong length
	if err := s.Close(); err == nil {
		t.Fatal("Close succeeded after a failed row")
	}
	aborted, err := CreateSeries(path)
	if err != nil {
		t.Fatal(err)
	}
	must(t, aborted.Header([]string{"t"}))
	aborted.Abort()
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Errorf("target = %q, want it untouched", got)
	}
	assertOnly(t, dir, "s.csv")

	if _, err := CreateSeries(filepath.Join(dir, "nope", "s.csv")); err == nil {
		t.Error("no error for a missing directory")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
