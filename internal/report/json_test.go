package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type testSummary struct {
	SchemaHeader
	Name    string  `json:"name"`
	Latency float64 `json:"latency_ns"`
	Note    string  `json:"note"`
}

func TestWriteJSONStdout(t *testing.T) {
	var out bytes.Buffer
	v := testSummary{SchemaHeader{"fabemu.test.summary", 1}, "torus", 12.5, "<a&b>"}
	if err := writeJSONTo("-", &out, v); err != nil {
		t.Fatal(err)
	}
	want := `{
  "schema": "fabemu.test.summary",
  "version": 1,
  "name": "torus",
  "latency_ns": 12.5,
  "note": "<a&b>"
}
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestWriteJSONFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "{\n  \"a\": 1\n}\n" {
		t.Errorf("file = %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}
	assertOnly(t, dir, "summary.json")
}

func TestWriteJSONFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteJSON(path, map[string]float64{"bad": math.NaN()})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want an error naming %s", err, path)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Errorf("target changed to %q after a failed write", got)
	}
	assertOnly(t, dir, "summary.json")
}

func TestWriteFileErrors(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("boom")
	if err := WriteFile(filepath.Join(dir, "x"), func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	assertOnly(t, dir)
	if err := WriteFile(filepath.Join(dir, "missing", "x"), func(io.Writer) error { return nil }); err == nil {
		t.Error("no error for a missing directory")
	}
	if err := WriteFile("", func(io.Writer) error { return nil }); err == nil {
		t.Error("no error for an empty path")
	}
}

func TestWriteFileRelative(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := WriteFile("out.txt", func(w io.Writer) error { _, err := io.WriteString(w, "hi\n"); return err }); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("out.txt")
	if err != nil || string(got) != "hi\n" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestJSONLines(t *testing.T) {
	type rec struct {
		T int    `json:"t"`
		S string `json:"s"`
	}
	recs := []rec{{1, "a<b"}, {2, "c"}}
	var out bytes.Buffer
	if err := writeJSONLinesTo("-", &out, slices.Values(recs)); err != nil {
		t.Fatal(err)
	}
	want := "{\"t\":1,\"s\":\"a<b\"}\n{\"t\":2,\"s\":\"c\"}\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "r.jsonl")
	if err := WriteJSONLines(path, recs); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != want {
		t.Errorf("file = %q, want %q", got, want)
	}

	err := WriteJSONLines(filepath.Join(dir, "bad.jsonl"), []float64{1, math.Inf(1)})
	if err == nil || !strings.Contains(err.Error(), "record 2") {
		t.Errorf("err = %v, want it to name record 2", err)
	}
	assertOnly(t, dir, "r.jsonl")

	out.Reset()
	jw := NewJSONLinesWriter(&out)
	for _, r := range recs {
		if err := jw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := jw.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("JSONLinesWriter got %q, want %q", out.String(), want)
	}
	if err := jw.Write(math.NaN()); err == nil || !strings.Contains(err.Error(), "record 3") {
		t.Errorf("err = %v, want it to name record 3", err)
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	in := testSummary{SchemaHeader{"fabemu.test.summary", 2}, "mesh", 0.125, ""}
	if err := WriteJSON(path, in); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var out testSummary
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
}

// assertOnly fails unless dir holds exactly the named files (no leftover
// temporary files).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("directory holds %q, want %q", got, names)
	}
}
