package tracefmt

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fabemu/fabemu/internal/sharedtest"
)

// sharedTrace finds ../shared/traces/NAME or skips the test.
func sharedTrace(t testing.TB, name string) string { return sharedtest.Trace(t, name) }

// TestAJWTestVectors decodes the first three records of ajw.1week.srt and
// checks them against the reference's test vectors (trace-format
// reference §1.11): sectno times the header's 256-byte sector size,
// service = stop - start, disk = (devno>>8)&0xFF.
func TestAJWTestVectors(t *testing.T) {
	path := sharedTrace(t, "ajw.1week.srt")
	r, err := Open(path, Auto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Format() != SRT {
		t.Fatalf("sniffed %s, want srt", r.Format())
	}
	want := []Record{
		{Arrival: 0, Device: 1, Offset: 1056 * 256, Size: 4096, Op: OpRead, Sync: true, Service: (19687 - 174) * time.Microsecond, HasService: true},
		{Arrival: 22479 * time.Microsecond, Device: 1, Offset: 1040 * 256, Size: 4096, Op: OpRead, Sync: true, Service: (10038 - 76) * time.Microsecond, HasService: true},
		{Arrival: 35279 * time.Microsecond, Device: 0, Offset: 12256 * 256, Size: 2048, Op: OpRead, Sync: true, Service: (32924 - 85) * time.Microsecond, HasService: true},
	}
	for i, w := range want {
		got, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	if h, ok := SRTHeader(r); !ok || !strings.Contains(h, "hplajw") {
		t.Errorf("header not kept")
	}
	if n := DeviceName(r, 1); n != "disk unit 1" {
		t.Errorf("device name %q", n)
	}
}

// TestAJWStats checks the facts measured on ajw.1week.srt.
func TestAJWStats(t *testing.T) {
	path := sharedTrace(t, "ajw.1week.srt")
	r, err := Open(path, SRT, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 44519 {
		t.Errorf("records %d, want 44519", st.Records)
	}
	if f := st.ReadFraction; f < 0.2925 || f >= 0.2935 {
		t.Errorf("read fraction %.4f, want 29.3%%", f)
	}
	if m := st.MeanSizeBytes; m < 5913.5 || m >= 5914.5 {
		t.Errorf("mean size %.1f, want 5914", m)
	}
	if d := st.DurationS; d < 603064 || d > 603066 {
		t.Errorf("duration %.1f s, want about 603065", d)
	}
	if len(st.Devices) != 2 || st.Devices[0].Requests != 42252 || st.Devices[1].Requests != 2267 {
		t.Errorf("devices %+v, want unit 0: 42252, unit 1: 2267", st.Devices)
	}
	if st.OutOfOrder != 0 {
		t.Errorf("out of order %d, want 0", st.OutOfOrder)
	}
	if cv := st.InterarrivalCV; cv < 9.7 || cv > 9.9 {
		t.Errorf("inter-arrival CV %.2f, want about 9.8", cv)
	}
}

// srtFile builds an SRT file: a header (with a disks block giving disk 0
// 1024-byte sectors) and the given records.
type srtFile struct {
	bytes.Buffer
}

func newSRT(date string) *srtFile {
	f := &srtFile{}
	f.WriteString("$$TR_IOREC-1.3 test\x00\nversion = 1.3;\n")
	if date != "" {
		f.WriteString("tracedate    = \"" + date + "\";\n")
	}
	f.WriteString("disks = {\n  0 -> {\n  nspt = 10,\n  sectorsize = 1024,\n  sections = { 8 -> { \"/\", size = (0 1024) } }\n },\n" +
		"  1 -> {\n  sectorsize = 1024,\n },\n};\n\f")
	return f
}

// rec appends a record with the given size word, version and type; words
// fill the body from word 2 on (zero padded to size).
func (f *srtFile) rec(size, version, typ uint32, words ...uint32) *srtFile {
	b := make([]byte, max(size, 8))
	binary.BigEndian.PutUint32(b, size)
	binary.BigEndian.PutUint32(b[4:], version<<16|typ)
	for i, w := range words {
		if 8+4*i+4 <= len(b) {
			binary.BigEndian.PutUint32(b[8+4*i:], w)
		}
	}
	f.Write(b)
	return f
}

// short appends a ShortIO of the given version and size word:
// sec, usec, start, stop, bytes, sectno, devno, flags, then extra words from
// offset 52 on (queuelen, pid, lvdevno).
func (f *srtFile) short(size, version, sec, usec, start, stop, nbytes, sectno, devno, flags uint32, extra ...uint32) *srtFile {
	words := []uint32{sec, usec, start, stop, nbytes, sectno, devno, 4, 0, flags, 0}
	return f.rec(size, version, 1, append(words, extra...)...)
}

func readAll(r Reader) ([]Record, error) {
	var out []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func TestSRTVersions(t *testing.T) {
	f := newSRT("Sat May 30 00:03:06 1992")
	f.short(52, 1, 1, 500000, 10, 30, 4096, 7, 0x08000008, 0x1b)        // v1: read, sync, disk 0 (1 KiB sectors)
	f.short(56, 4, 2, 0, 0, 100, 8192, 3, 0x08000107, 0x100, 1)         // v4: write, async, disk 1
	f.short(60, 5, 3, 0, 0, 0, 1024, 1, 0x08000208, 0x0, 1, 77)         // v5: pid 77, disk 2 (no header size: 1024 common)
	f.short(64, 6, 4, 0, 5, 2, 1024, 1, 0x08000008, 0x1, 1, 78, 0x4000) // v6: stop < start: no service
	f.short(68, 4, 5, 0, 0, 0, 512, 1, 0x08000008, 0x1)                 // v4 with a longer size word: trusted
	f.short(60, 4, 6, 0, 0, 0, 512, 1, 0x08000008, 0x1, 1, 0)           // SuspectIO
	f.Bytes()[len(f.Bytes())-60+7] = 4                                  // retype it
	f.rec(16, 2, 3, 1, 2)                                               // TextIO, skipped
	r, err := NewReader(bytes.NewReader(f.Bytes()), "v.srt", Auto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Arrival: 1500 * time.Millisecond, Device: 0, Offset: 7 * 1024, Size: 4096, Op: OpRead, Sync: true, Service: 20 * time.Microsecond, HasService: true},
		{Arrival: 2 * time.Second, Device: 1, Offset: 3 * 1024, Size: 8192, Op: OpWrite, Sync: false, Service: 100 * time.Microsecond, HasService: true},
		{Arrival: 3 * time.Second, Initiator: 77, Device: 2, Offset: 1024, Size: 1024, Op: OpWrite, Sync: true, HasService: true},
		{Arrival: 4 * time.Second, Initiator: 78, Device: 0, Offset: 1024, Size: 1024, Op: OpRead, Sync: true},
		{Arrival: 5 * time.Second, Device: 0, Offset: 1024, Size: 512, Op: OpRead, Sync: true, HasService: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if s, o := SRTDropped(r); s != 1 || o != 1 {
		t.Errorf("dropped %d suspect %d other, want 1 and 1", s, o)
	}
}

func TestSRTVersion7(t *testing.T) {
	f := newSRT("")
	words := make([]uint32, 20)
	words[0], words[1] = 1053281044, 250 // absolute Unix time
	words[2], words[3] = 10, 1010
	words[4] = 4096
	words[6] = 0x1f016000
	words[9] = 0x1
	words[12] = 42                         // pid at offset 56
	words[14], words[15] = 0x1, 0x00000400 // offset 64: u64 = 4 GiB + 1 KiB
	f.rec(88, 7, 1, words...)
	r, err := NewReader(bytes.NewReader(f.Bytes()), "v7.srt", SRT, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(r)
	if err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	w := Record{Arrival: 1053281044*time.Second + 250*time.Microsecond, Initiator: 42, Device: 0x0160, Offset: 1<<32 + 1024,
		Size: 4096, Op: OpRead, Sync: true, Service: 1000 * time.Microsecond, HasService: true}
	if got[0] != w {
		t.Errorf("got %+v\nwant %+v", got[0], w)
	}
	if n := DeviceName(r, 0x0160); !strings.Contains(n, "controller 6") {
		t.Errorf("name %q", n)
	}
}

func TestSRTMalformed(t *testing.T) {
	good := func() *srtFile {
		return newSRT("Sat May 30 00:03:06 1992").short(56, 4, 1, 0, 0, 1, 1024, 1, 0x08000008, 1, 1)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"bad header", []byte("hello world\f"), "does not start with"},
		{"no form feed", []byte("$$TR_IOREC-1.3 x\nversion = 1.3;\n"), "form feed"},
		{"truncated header word", append(good().Bytes(), 0, 0, 0), "record 2 (byte offset"},
		{"truncated record", good().Bytes()[:len(good().Bytes())-4], "truncated record"},
		{"size 0", good().rec(0, 4, 1).Bytes(), "size word 0"},
		{"size 4", good().rec(4, 4, 1).Bytes(), "smaller than the 8-byte"},
		{"size not multiple of 4", good().rec(54, 4, 1).Bytes(), "not a multiple of 4"},
		{"size too big", good().rec(8192, 4, 1).Bytes(), "exceeds"},
		{"version 0", good().rec(56, 0, 1).Bytes(), "version 0 outside"},
		{"version 8", good().rec(56, 8, 1).Bytes(), "version 8 outside"},
		{"short ShortIO", good().rec(48, 4, 1).Bytes(), "shorter than"},
		{"usec", good().short(56, 4, 1, 1000000, 0, 0, 1, 1, 1, 1).Bytes(), "microseconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tt.data), "bad.srt", SRT, Options{})
			if err == nil {
				_, err = readAll(r)
			}
			if err == nil {
				t.Fatal("no error")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "bad.srt: ") {
				t.Errorf("error %q, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestSRTCompressedAndMerged(t *testing.T) {
	dir := t.TempDir()
	a := newSRT("Sat May 30 00:00:00 1992").
		short(56, 4, 0, 0, 0, 1, 1024, 1, 0x08000008, 1, 1).
		short(56, 4, 3600, 0, 0, 1, 1024, 2, 0x08000008, 1, 1)
	b := newSRT("Sat May 30 00:30:00 1992"). // starts 1800 s after a
							short(56, 4, 0, 0, 0, 1, 1024, 3, 0x08000008, 1, 1).
							short(56, 4, 1800, 0, 0, 1, 1024, 4, 0x08000008, 1, 1) // 3600 s: ties with a's second
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(a.Bytes())
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "a.srt.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.srt"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("bzip2"); err == nil {
		if err := exec.Command("bzip2", filepath.Join(dir, "b.srt")).Run(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(dir, Auto, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Duration
	var secs []int64
	for _, g := range got {
		times = append(times, g.Arrival)
		secs = append(secs, g.Offset/1024)
	}
	wantT := []time.Duration{0, 1800 * time.Second, 3600 * time.Second, 3600 * time.Second}
	wantS := []int64{1, 3, 2, 4}
	if len(got) != 4 {
		t.Fatalf("got %d records", len(got))
	}
	for i := range wantT {
		if times[i] != wantT[i] || secs[i] != wantS[i] {
			t.Errorf("merged record %d: arrival %v sector %d, want %v %d", i, times[i], secs[i], wantT[i], wantS[i])
		}
	}
}
