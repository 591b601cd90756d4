package sample

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"testing"

	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/blockgen"
)

var update = flag.Bool("update", false, "rewrite the embedded sample from the generator")

func generate(t *testing.T) []byte {
	g, err := blockgen.New(ProfileUsed(), Seed)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := tracefmt.NewWriter(&buf, Format)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Write(w, Records); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSampleMatchesGenerator checks that the embedded trace is exactly what
// the documented generator parameters produce.
func TestSampleMatchesGenerator(t *testing.T) {
	want := generate(t)
	if *update {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(want)
		zw.Close()
		if err := os.WriteFile("cello99-sample.csv.gz", z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("embedded sample differs from the generator output; regenerate with -update")
	}
}

func TestOpen(t *testing.T) {
	r, err := Open(tracefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := tracefmt.Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != Records || len(st.Devices) != 23 || st.OutOfOrder != 0 {
		t.Fatalf("records %d devices %d out of order %d", st.Records, len(st.Devices), st.OutOfOrder)
	}
	if len(data) > 400<<10 {
		t.Errorf("embedded sample is %d bytes, keep it under 400 KiB", len(data))
	}
	if _, f := Bytes(); f != tracefmt.CSV {
		t.Errorf("format %s", f)
	}
}
