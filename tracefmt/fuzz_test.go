package tracefmt

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// fuzzRead reads data in format f to the end and checks that nothing
// panics, that reading ends, and that malformed input yields a *ParseError
// naming the file.
func fuzzRead(t *testing.T, f Format, opts Options, data []byte) {
	r, err := NewReader(bytes.NewReader(data), "fuzz", f, opts)
	if err != nil {
		checkFuzzErr(t, err)
		return
	}
	for i := 0; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			checkFuzzErr(t, err)
			return
		}
		if rec.Size < 0 || rec.Offset < 0 {
			t.Fatalf("record %d has negative size or offset: %+v", i, rec)
		}
		if i > len(data)+1 {
			t.Fatalf("more records (%d) than input bytes (%d)", i, len(data))
		}
	}
}

func checkFuzzErr(t *testing.T, err error) {
	var pe *ParseError
	if errors.As(err, &pe) {
		if pe.File != "fuzz" || pe.Msg == "" {
			t.Fatalf("parse error without file or message: %#v", pe)
		}
		return
	}
	// compressed input may fail inside the decompressor
	if !bytes.Contains([]byte(err.Error()), []byte("fuzz")) {
		t.Fatalf("error does not name the file: %v", err)
	}
}

func srtSeed() []byte {
	return newSRT("Sat May 30 00:03:06 1992").
		short(56, 4, 1, 0, 0, 1, 1024, 1, 0x08000008, 1, 1).
		short(64, 6, 2, 5, 0, 1, 1024, 1, 0x08000108, 0x100, 1, 2, 3).Bytes()
}

func FuzzSRT(f *testing.F) {
	f.Add(srtSeed())
	f.Add([]byte("$$TR_IOREC-1.3\n\f\x00\x00\x00\x00"))
	f.Add([]byte("$$TR_IOREC-1.3\ndisks = { 0 -> { sectorsize = 0 } }\f"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, SRT, Options{}, data) })
}

func FuzzMSR(f *testing.F) {
	f.Add([]byte("128166385295514663,hm,0,Write,9056014336,2048,2833\n"))
	f.Add([]byte("128166385295514663,hm,0,Read,1,2,3\n,,,,,,\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, MSR, Options{}, data) })
}

func FuzzSPC(f *testing.F) {
	f.Add([]byte("0,20941264,8192,W,0.551706,Alpha/NT\n1, 3, 512, r, 1.0\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, SPC, Options{}, data) })
}

func FuzzBlkparse(f *testing.F) {
	f.Add([]byte("  8,0    3        2     0.000001000   697  Q  WS 223490 + 8 [kjournald]\nCPU0 (8,0):\n"), byte('Q'))
	f.Add([]byte("  8,0    0        5     0.700000000   12  D   R 100 + 16 [cat]\n"), byte('D'))
	f.Fuzz(func(t *testing.T, data []byte, action byte) {
		if action != 'D' {
			action = 'Q'
		}
		fuzzRead(t, Blkparse, Options{BlkparseAction: action}, data)
	})
}

func FuzzFio(f *testing.F) {
	f.Add([]byte("fio version 3 iolog\n0 /dev/sdb add\n1250 /dev/sdb write 9056014336 2048\n"))
	f.Add([]byte("fio version 2 iolog\n/dev/sdb add\n/dev/sdb wait 100 0\n/dev/sdb read 0 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, Fio, Options{}, data) })
}

func FuzzDiskSim(f *testing.F) {
	f.Add([]byte("13.191135 30 0 5 1\n14.5 2 100 16 0x100\n1e2 1 1 1 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, DiskSim, Options{}, data) })
}

func FuzzCSV(f *testing.F) {
	f.Add([]byte(csvHeader + "\n5,1,2,1024,4096,R,1,250\n-7,0,0,0,0,W,0,\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, CSV, Options{}, data) })
}

// FuzzAuto exercises sniffing, decompression and the sort window.
func FuzzAuto(f *testing.F) {
	f.Add(srtSeed(), 0)
	f.Add([]byte(csvHeader+"\n5,1,2,1024,4096,R,1,250\n3,0,0,0,0,W,0,\n"), 2)
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"), 0)
	f.Add([]byte("BZh91AY&SY"), 0)
	f.Fuzz(func(t *testing.T, data []byte, window int) {
		fuzzRead(t, Auto, Options{SortWindow: window % 64}, data)
	})
}
