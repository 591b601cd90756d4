package tracefmt

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTextReaders(t *testing.T) {
	const us = time.Microsecond
	tests := []struct {
		name   string
		format Format
		opts   Options
		in     string
		want   []Record
		devs   map[uint32]string
	}{
		{
			name: "msr", format: MSR,
			in: "128166385295514663,hm,0,Write,9056014336,2048,2833\n" +
				"128166385295614663,hm,1,Read,4096,4096,100\r\n" +
				"\n128166385295714663,src1,0,read,0,512,1\n",
			want: []Record{
				{Arrival: (128166385295514663 - filetimeUnixEpoch) * 100, Initiator: 0, Device: 0, Offset: 9056014336, Size: 2048, Op: OpWrite, Service: 283300 * time.Nanosecond, HasService: true},
				{Arrival: (128166385295614663 - filetimeUnixEpoch) * 100, Initiator: 0, Device: 1, Offset: 4096, Size: 4096, Op: OpRead, Service: 10 * us, HasService: true},
				{Arrival: (128166385295714663 - filetimeUnixEpoch) * 100, Initiator: 1, Device: 2, Offset: 0, Size: 512, Op: OpRead, Service: 100 * time.Nanosecond, HasService: true},
			},
			devs: map[uint32]string{0: "hm_0", 1: "hm_1", 2: "src1_0"},
		},
		{
			name: "spc", format: SPC,
			in: "0,20941264,8192,W,0.551706,Alpha/NT\n1, 3, 512, r, 1.000000001\n",
			want: []Record{
				{Arrival: 551706 * us, Device: 0, Offset: 20941264 * 512, Size: 8192, Op: OpWrite},
				{Arrival: time.Second + 1, Device: 1, Offset: 3 * 512, Size: 512, Op: OpRead},
			},
			devs: map[uint32]string{1: "ASU 1"},
		},
		{
			name: "spc block size", format: SPC, opts: Options{SPCBlockSize: 4096},
			in:   "2,3,4096,R,0.5\n",
			want: []Record{{Arrival: 500 * time.Millisecond, Device: 2, Offset: 3 * 4096, Size: 4096, Op: OpRead}},
		},
		{
			name: "blkparse Q", format: Blkparse,
			in: "  8,0    3        1     0.000000000   697  G   W 223490 + 8 [kjournald]\n" +
				"  8,0    3        2     0.000001000   697  Q  WS 223490 + 8 [kjournald]\n" +
				"  8,16   0        3     0.500000000   12  Q   R 100 + 16 [cat]\n" +
				"  8,0    0        4     0.600000000   12  Q  FWS [kworker]\n" +
				"  8,0    0        5     0.700000000   12  D   R 100 + 16 [cat]\n" +
				"  8,0    0        6     0.800000000   12  Q   N 0 + 0 [x]\n" +
				"\nCPU0 (8,0):\n Reads Queued:           1,        8KiB\nTotal (8,0):\n",
			want: []Record{
				{Arrival: 1 * us, Initiator: 697, Device: 0, Offset: 223490 * 512, Size: 4096, Op: OpWrite, Sync: true},
				{Arrival: 500 * time.Millisecond, Initiator: 12, Device: 1, Offset: 100 * 512, Size: 8192, Op: OpRead},
			},
			devs: map[uint32]string{0: "8,0", 1: "8,16"},
		},
		{
			name: "blkparse D", format: Blkparse, opts: Options{BlkparseAction: 'D'},
			in: "  8,0    3        2     0.000001000   697  Q  WS 223490 + 8 [kjournald]\n" +
				"  8,0    0        5     0.700000000   12  D   RS 100 + 16 [cat]\n",
			want: []Record{{Arrival: 700 * time.Millisecond, Initiator: 12, Device: 0, Offset: 100 * 512, Size: 8192, Op: OpRead, Sync: true}},
		},
		{
			name: "fio v3", format: Fio,
			in: "fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n1250 /dev/sdb write 9056014336 2048\n" +
				"1310 /dev/sdb read 7014912 4096\n1400 /dev/sdb sync\n1500 /dev/sdc read 0 512\n999000 /dev/sdb close\n",
			want: []Record{
				{Arrival: 1250 * us, Device: 0, Offset: 9056014336, Size: 2048, Op: OpWrite},
				{Arrival: 1310 * us, Device: 0, Offset: 7014912, Size: 4096, Op: OpRead},
				{Arrival: 1500 * us, Device: 1, Offset: 0, Size: 512, Op: OpRead},
			},
			devs: map[uint32]string{0: "/dev/sdb", 1: "/dev/sdc"},
		},
		{
			name: "fio v2", format: Fio,
			in: "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n/dev/sdb wait 2000 0\n" +
				"/dev/sdb read 4096 4096\n/dev/sdb close\n",
			want: []Record{
				{Arrival: 0, Device: 0, Offset: 0, Size: 4096, Op: OpWrite},
				{Arrival: 2000 * us, Device: 0, Offset: 4096, Size: 4096, Op: OpRead},
			},
		},
		{
			name: "disksim", format: DiskSim,
			in: "13.191135 30 0 5 1\n14.5 2 100 16 0x100\n\n15 2 8 2 80\n",
			want: []Record{
				{Arrival: 13191135 * time.Nanosecond, Device: 30, Offset: 0, Size: 2560, Op: OpRead, Sync: true},
				{Arrival: 14500 * us, Device: 2, Offset: 51200, Size: 8192, Op: OpWrite},
				{Arrival: 15 * time.Millisecond, Device: 2, Offset: 4096, Size: 1024, Op: OpWrite, Sync: true},
			},
		},
		{
			name: "csv", format: CSV,
			in: "# a comment\n" + csvHeader + "\n5,1,2,1024,4096,R,1,250\n-7,0,0,0,0,W,0,\n",
			want: []Record{
				{Arrival: 5, Initiator: 1, Device: 2, Offset: 1024, Size: 4096, Op: OpRead, Sync: true, Service: 250, HasService: true},
				{Arrival: -7, Op: OpWrite},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []Format{tt.format, Auto} {
				r, err := NewReader(strings.NewReader(tt.in), "t", f, tt.opts)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if r.Format() != tt.format {
					t.Fatalf("format %s, want %s", r.Format(), tt.format)
				}
				got, err := readAll(r)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("%s: got %d records %+v, want %d", f, len(got), got, len(tt.want))
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("%s: record %d\n got %+v\nwant %+v", f, i, got[i], tt.want[i])
					}
				}
				for id, name := range tt.devs {
					if n := DeviceName(r, id); n != name {
						t.Errorf("device %d named %q, want %q", id, n, name)
					}
				}
			}
		})
	}
}

func TestTextReadersMalformed(t *testing.T) {
	long := strings.Repeat("x", bufSize+10)
	tests := []struct {
		format Format
		in     string
		want   string
	}{
		{MSR, "128166385295514663,hm,0,Write,9056014336,2048\n", "line 1: want 7"},
		{MSR, "x,hm,0,Write,1,2,3\n", "line 1: bad timestamp"},
		{MSR, "128166385295514663,hm,0,Write,1,2,3\n128166385295514663,hm,0,Delete,1,2,3\n", "line 2: bad type \"Delete\""},
		{MSR, "100,hm,0,Write,1,2,3\n", "outside 1970"},
		{MSR, "128166385295514663,hm,0,Write,1,99999999999,3\n", "does not fit"},
		{SPC, "0,1,2,W\n", "line 1: want at least 5"},
		{SPC, "0,1,2,X,0.5\n", "bad opcode"},
		{SPC, "0,1,2,W,2 448003\n", "bad timestamp"},
		{SPC, "0,99999999999999999999,2,W,1\n", "bad LBA"},
		{SPC, "0,99999999999999999,2,W,1\n", "overflows"},
		{Blkparse, "garbage line here with more words\n", "line 1: first column \"garbage\""},
		{Blkparse, "8,0 1 2\n", "want at least 6"},
		{Blkparse, "8,0 0 1 zz 1 Q R 1 + 8 [x]\n", "bad time"},
		{Blkparse, "8,0 0 1 0.1 1 Q R 1 + y [x]\n", "bad sector count"},
		{Blkparse, long, "longer than"},
		{Fio, "fio version 1 iolog\n", "line 1: bad fio iolog header"},
		{Fio, "", "empty file"},
		{Fio, "fio version 3 iolog\n0 f add\n1 f explode 1 2\n", "line 3: unknown action"},
		{Fio, "fio version 3 iolog\n0 f wait 1 2\n", "wait is not allowed"},
		{Fio, "fio version 2 iolog\nf read 1\n", "want \"file action\""},
		{Fio, "fio version 3 iolog\nx f read 1 2\n", "bad timestamp"},
		{DiskSim, "1.0 2 3 4\n", "want 5"},
		{DiskSim, "1.0 2 3 4 zz\n", "bad flags"},
		{DiskSim, "abc 2 3 4 1\n", "bad arrival"},
		{DiskSim, "1.0 2 3 99999999999 1\n", "bad block count"},
		{CSV, "a,b,c\n", "line 1: bad header"},
		{CSV, "", "no header line"},
		{CSV, csvHeader + "\n1,2,3,4,5,X,0,\n", "line 2: bad op"},
		{CSV, csvHeader + "\n1,2,3,4,5,R,2,\n", "bad sync"},
		{CSV, csvHeader + "\n1,2,3,-4,5,R,1,\n", "bad offset"},
		{CSV, csvHeader + "\n1,2,3\n", "want 8"},
	}
	for _, tt := range tests {
		name := string(tt.format) + "/" + tt.want
		t.Run(name, func(t *testing.T) {
			r, err := NewReader(strings.NewReader(tt.in), "bad.trace", tt.format, Options{})
			if err == nil {
				_, err = readAll(r)
			}
			if err == nil {
				t.Fatal("no error")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("%v is not a *ParseError", err)
			}
			if !strings.HasPrefix(err.Error(), "bad.trace: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   string
		want Format
	}{
		{"$$TR_IOREC-1.3 x\n", SRT},
		{"fio version 2 iolog\n", Fio},
		{"\n# c\n" + csvHeader + "\n", CSV},
		{"128166385295514663,hm,0,Write,9056014336,2048,2833\n", MSR},
		{"0,20941264,8192,W,0.551706,Alpha/NT\n", SPC},
		{"0, 20941264, 8192, w, 0.551706\n", SPC},
		{"  8,0    3        1     0.000000000   697  G   W 223490 + 8 [kjournald]\n", Blkparse},
		{"13.191135 30 0 5 1\n", DiskSim},
		{"hello\n", ""},
		{"a,b\n", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Sniff([]byte(tt.in)); got != tt.want {
			t.Errorf("Sniff(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	_, err := NewReader(strings.NewReader("hello\n"), "x.txt", Auto, Options{})
	if err == nil || !strings.Contains(err.Error(), "x.txt: cannot tell the trace format") {
		t.Errorf("unknown format error %v", err)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range append(append(Formats(), CaptureFormats()...), Auto) {
		if g, err := ParseFormat(string(f)); err != nil || g != f {
			t.Errorf("ParseFormat(%s) = %s, %v", f, g, err)
		}
	}
	if _, err := ParseFormat("erf"); err == nil {
		t.Error("erf accepted")
	}
}

// TestCaptureRefused: a capture is sniffed (also inside gzip) and refused
// with ErrCapture by the block-trace reader, naming the file.
func TestCaptureRefused(t *testing.T) {
	le := []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0}
	ng := []byte{0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(le)
	zw.Close()
	for _, c := range []struct {
		in   []byte
		want Format
	}{
		{le, Pcap},
		{[]byte{0xa1, 0xb2, 0xc3, 0xd4}, Pcap},
		{[]byte{0xa1, 0xb2, 0x3c, 0x4d}, Pcap},
		{[]byte{0x4d, 0x3c, 0xb2, 0xa1}, Pcap},
		{ng, Pcapng},
		{gz.Bytes(), Pcap},
	} {
		br, cl, err := Decompress(bytes.NewReader(c.in), "c")
		if err != nil {
			t.Fatal(err)
		}
		head, _ := br.Peek(4)
		if g := Sniff(head); g != c.want {
			t.Errorf("sniff % x = %q, want %q", c.in[:4], g, c.want)
		}
		cl.Close()
		_, err = NewReader(bytes.NewReader(c.in), "c.pcap", Auto, Options{})
		if !errors.Is(err, ErrCapture) || !strings.HasPrefix(err.Error(), "c.pcap: ") {
			t.Errorf("NewReader on a capture: %v", err)
		}
	}
}

func TestOrderCheckAndSortWindow(t *testing.T) {
	in := csvHeader + "\n10,0,0,0,1,R,0,\n30,0,0,0,1,R,0,\n20,0,0,0,1,R,0,\n40,0,0,0,1,R,0,\n5,0,0,0,1,R,0,\n"
	arrivals := func(r Reader) []time.Duration {
		recs, err := readAll(r)
		if err != nil {
			t.Fatal(err)
		}
		var out []time.Duration
		for _, x := range recs {
			out = append(out, x.Arrival)
		}
		return out
	}
	r, _ := NewReader(strings.NewReader(in), "o.csv", CSV, Options{})
	if got := arrivals(r); len(got) != 5 {
		t.Fatalf("got %v", got)
	}
	rep := r.(OrderChecker).Order()
	if rep.Inversions != 2 || rep.FirstRecord != 3 || rep.MaxBackstep != 35 {
		t.Errorf("order report %+v, want 2 inversions from record 3, max step back 35ns", rep)
	}
	r, _ = NewReader(strings.NewReader(in), "o.csv", CSV, Options{SortWindow: 2})
	got := arrivals(r)
	want := []time.Duration{10, 20, 30, 5, 40}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sort window 2: got %v, want %v", got, want)
		}
	}
	if rep := r.(OrderChecker).Order(); rep.Inversions != 1 {
		t.Errorf("after window 2: %+v, want 1 inversion", rep)
	}
	r, _ = NewReader(strings.NewReader(in), "o.csv", CSV, Options{SortWindow: 8})
	if got := arrivals(r); got[0] != 5 || got[4] != 40 || r.(OrderChecker).Order().Inversions != 0 {
		t.Errorf("sort window 8: %v", got)
	}
	r, _ = NewReader(strings.NewReader(in), "o.csv", CSV, Options{RejectOutOfOrder: true})
	_, err := readAll(r)
	if err == nil || !strings.Contains(err.Error(), "o.csv: record 3 arrives") {
		t.Errorf("reject: %v", err)
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		unit time.Duration
		want time.Duration
		ok   bool
	}{
		{"0.551706", time.Second, 551706 * time.Microsecond, true},
		{"13.191135", time.Millisecond, 13191135, true},
		{"1.0000000019", time.Second, time.Second + 1, true},
		{".5", time.Second, time.Second / 2, true},
		{"7", time.Millisecond, 7 * time.Millisecond, true},
		{"1e3", time.Millisecond, time.Second, true},
		{"", time.Second, 0, false},
		{".", time.Second, 0, false},
		{"1.2.3", time.Second, 0, false},
		{"-1", time.Second, 0, false},
		{"99999999999999", time.Second, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseTime([]byte(tt.in), tt.unit)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseTime(%q) = %v %v, want %v %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseErrorFormat(t *testing.T) {
	tests := []struct {
		e    ParseError
		want string
	}{
		{ParseError{File: "f", Line: 3, Msg: "bad"}, "f: line 3: bad"},
		{ParseError{File: "f", Record: 2, Offset: 60, Msg: "bad"}, "f: record 2 (byte offset 60): bad"},
		{ParseError{File: "f", Msg: "bad"}, "f: bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%q, want %q", got, tt.want)
		}
	}
}
