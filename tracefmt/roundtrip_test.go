package tracefmt_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/fabemu/fabemu/tracefmt"
	"github.com/fabemu/fabemu/tracefmt/blockgen"
)

// genRecords returns n cello99-like records with 4 initiators and service
// times, every field representable in every writer (µs arrivals, 1 KiB
// aligned offsets and sizes).
func genRecords(t testing.TB, n int) []tracefmt.Record {
	p, err := blockgen.Like("cello99")
	if err != nil {
		t.Fatal(err)
	}
	p.Initiators = 4
	g, err := blockgen.New(p, 7)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]tracefmt.Record, n)
	for i := range out {
		out[i] = g.Next()
		out[i].Service = time.Duration(i%5000) * time.Microsecond
		out[i].HasService = true
	}
	return out
}

// kept masks each record down to what a format keeps (see NewWriter).
func kept(f tracefmt.Format, r tracefmt.Record) tracefmt.Record {
	switch f {
	case tracefmt.DiskSim:
		return tracefmt.Record{Arrival: r.Arrival, Device: r.Device, Offset: r.Offset, Size: r.Size, Op: r.Op, Sync: r.Sync}
	case tracefmt.SRT:
		r.Initiator = 0
		return r
	case tracefmt.SPC:
		return tracefmt.Record{Arrival: r.Arrival, Device: r.Device, Offset: r.Offset, Size: r.Size, Op: r.Op}
	case tracefmt.Fio:
		return tracefmt.Record{Arrival: r.Arrival, Device: r.Device, Offset: r.Offset, Size: r.Size, Op: r.Op}
	}
	return r
}

func TestRoundTrip(t *testing.T) {
	recs := genRecords(t, 3000)
	// fio numbers devices densely in order of first appearance; make that
	// order 0, 1, 2, ... so ids survive.
	seen := map[uint32]uint32{}
	for i := range recs {
		id, ok := seen[recs[i].Device]
		if !ok {
			id = uint32(len(seen))
			seen[recs[i].Device] = id
		}
		recs[i].Device = id
	}
	for _, f := range tracefmt.WriterFormats() {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			w, err := tracefmt.NewWriter(&buf, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if err := w.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rd, err := tracefmt.NewReader(bytes.NewReader(buf.Bytes()), "rt", tracefmt.Auto, tracefmt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rd.Format() != f {
				t.Fatalf("sniffed %s, want %s", rd.Format(), f)
			}
			for i, want := range recs {
				got, err := rd.Next()
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if w := kept(f, want); got != w {
					t.Fatalf("record %d:\n got %+v\nwant %+v", i, got, w)
				}
			}
			if _, err := rd.Next(); err != io.EOF {
				t.Fatalf("after last record: %v", err)
			}
		})
	}
}

func TestCreateGzip(t *testing.T) {
	recs := genRecords(t, 100)
	path := filepath.Join(t.TempDir(), "x.csv.gz")
	w, err := tracefmt.Create(path, tracefmt.CSV)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		w.Write(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := tracefmt.Open(path, tracefmt.Auto, tracefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range recs {
		got, err := r.Next()
		if err != nil || got != recs[i] {
			t.Fatalf("record %d: %+v %v", i, got, err)
		}
	}
	if _, err := tracefmt.Create(filepath.Join(t.TempDir(), "x.bz2"), tracefmt.CSV); err == nil {
		t.Error("bzip2 output accepted")
	}
	if _, err := tracefmt.Create(filepath.Join(t.TempDir(), "x"), tracefmt.MSR); err == nil {
		t.Error("msr writer accepted")
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), "x")); err == nil {
		t.Error("failed Create left a file")
	}
}

func TestWriterRejects(t *testing.T) {
	tests := []struct {
		f tracefmt.Format
		r tracefmt.Record
	}{
		{tracefmt.CSV, tracefmt.Record{Arrival: -1}},
		{tracefmt.SRT, tracefmt.Record{Device: 1 << 20}},
		{tracefmt.SRT, tracefmt.Record{Offset: 1 << 45}},
		{tracefmt.SRT, tracefmt.Record{Arrival: 1 << 62}},
	}
	for _, tt := range tests {
		w, _ := tracefmt.NewWriter(io.Discard, tt.f)
		if err := w.Write(tt.r); err == nil {
			t.Errorf("%s accepted %+v", tt.f, tt.r)
		}
	}
}

// genStream is an io.Reader producing a generated trace in format f on the
// fly, so tests can read traces far larger than memory.
type genStream struct {
	g   *blockgen.Generator
	w   tracefmt.Writer
	buf bytes.Buffer
	n   int64
}

func newGenStream(t testing.TB, f tracefmt.Format, n int64) *genStream {
	p, _ := blockgen.Like("cello99")
	g, err := blockgen.New(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	s := &genStream{g: g, n: n}
	s.w, err = tracefmt.NewWriter(&s.buf, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *genStream) Read(p []byte) (int, error) {
	for s.buf.Len() < len(p) && s.n > 0 {
		for i := 0; i < 1024 && s.n > 0; i++ {
			s.w.Write(s.g.Next())
			s.n--
		}
		if s.n == 0 {
			s.w.Close()
		}
	}
	if s.buf.Len() == 0 {
		return 0, io.EOF
	}
	return s.buf.Read(p)
}

// TestStreamingMemory reads a 1,000,000-record trace of each benchmark
// format and checks that reading allocates O(1) memory, independent of the
// trace length (the heap grows by far less than the trace).
func TestStreamingMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, f := range []tracefmt.Format{tracefmt.SRT, tracefmt.CSV} {
		r, err := tracefmt.NewReader(newGenStream(t, f, 1000000), "big", f, tracefmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
			if n == 500000 {
				runtime.ReadMemStats(&after)
			}
		}
		if n != 1000000 {
			t.Fatalf("%s: read %d records", f, n)
		}
		// the generator side allocates nothing per record either; allow
		// slack for the writer's buffer growth
		if grow := int64(after.HeapInuse) - int64(before.HeapInuse); grow > 8<<20 {
			t.Errorf("%s: heap grew by %d bytes over 500k records", f, grow)
		}
	}
}

// TestNoAllocsPerRecord checks that Next does not allocate in steady state.
func TestNoAllocsPerRecord(t *testing.T) {
	for _, f := range []tracefmt.Format{tracefmt.SRT, tracefmt.CSV, tracefmt.DiskSim, tracefmt.SPC} {
		data := encode(t, f, genRecords(t, 20000))
		r, err := tracefmt.NewReader(bytes.NewReader(data), "x", f, tracefmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			r.Next()
		}
		if a := testing.AllocsPerRun(10000, func() { r.Next() }); a != 0 {
			t.Errorf("%s: %v allocations per record", f, a)
		}
	}
}

func encode(t testing.TB, f tracefmt.Format, recs []tracefmt.Record) []byte {
	var buf bytes.Buffer
	w, err := tracefmt.NewWriter(&buf, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return buf.Bytes()
}

func benchRead(b *testing.B, f tracefmt.Format) {
	data := encode(b, f, genRecords(b, 200000))
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		r, err := tracefmt.NewReader(bytes.NewReader(data), "bench", f, tracefmt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkReadSRT measures SRT decoding (v4 ShortIO records).
func BenchmarkReadSRT(b *testing.B) { benchRead(b, tracefmt.SRT) }

// BenchmarkReadCSV measures fabemu CSV decoding.
func BenchmarkReadCSV(b *testing.B) { benchRead(b, tracefmt.CSV) }

// BenchmarkReadDiskSim measures DiskSim ASCII decoding.
func BenchmarkReadDiskSim(b *testing.B) { benchRead(b, tracefmt.DiskSim) }
