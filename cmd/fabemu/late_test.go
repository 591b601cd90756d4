package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// udpFrame is an Ethernet/IPv4/UDP frame from station src to station dst.
func udpFrame(src, dst byte) []byte {
	b := []byte{0x02, 0, 0x5e, 0x10, 0, dst, 0x02, 0, 0x5e, 0x10, 0, src, 0x08, 0x00,
		0x45, 0, 0, 48, 0, 0, 0x40, 0, 64, 17, 0, 0, 192, 168, 7, src, 192, 168, 7, dst,
		0x13, 0x88, 0x23, 0x28, 0, 28, 0, 0}
	return append(b, make([]byte, 20)...)
}

// replayJSON runs fabemu replay with args and returns its table and the
// fields of its JSON summary that the late-record rule is about.
func replayJSON(t *testing.T, bin string, args ...string) (table string, late uint64, records, frames int64) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "r.json")
	out, err := exec.Command(bin, append([]string{"replay", "--json", js}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("replay %v: %v\n%s", args, err, out)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Late  uint64 `json:"late_records"`
		Trace struct {
			Records int64 `json:"records"`
		} `json:"trace"`
		Capture struct {
			Frames int64 `json:"frames"`
		} `json:"capture"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return string(out), s.Late, s.Trace.Records, s.Capture.Frames
}

// TestReplayOutOfOrderRecords: a record stamped before an earlier one is
// replayed at the earlier record's time and counted as late, in the JSON
// and in the table, in every format (docs/replay.md, docs/capture.md);
// before, the records before the first one's stamp were skipped as
// "before the window" (500 of 1001 CSV rows, 49 of 50 pcap frames).
func TestReplayOutOfOrderRecords(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()

	csv := writeFile(t, dir, "ooo.csv", func(w *bufio.Writer) {
		w.WriteString("arrival_ns,initiator,device,offset,size,op,sync,service_ns\n500000000,0,0,0,4096,R,0,0\n")
		for i := range 1000 {
			fmt.Fprintf(w, "%d,0,0,%d,4096,R,0,0\n", i*1000000, i*4096)
		}
	})
	table, late, records, _ := replayJSON(t, bin, "--trace", csv)
	if records != 1001 || late != 500 {
		t.Errorf("csv: %d records in the window, %d late; want 1001 and 500", records, late)
	}
	if !strings.Contains(table, "late (out-of-order) records") || !strings.Contains(table, " 500 ") {
		t.Errorf("csv: the table does not show the 500 late records:\n%s", table)
	}

	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for i := range 50 {
		data := udpFrame(byte(1+i%2), byte(2-i%2))
		ci := gopacket.CaptureInfo{Timestamp: base.Add(-time.Duration(i) * time.Microsecond), CaptureLength: len(data), Length: len(data)}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	back := filepath.Join(dir, "back.pcap")
	if err := os.WriteFile(back, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	table, late, _, frames := replayJSON(t, bin, "--trace", back)
	if frames != 50 || late != 49 {
		t.Errorf("pcap: %d frames replayed, %d late; want 50 and 49", frames, late)
	}
	if !strings.Contains(table, "late (out-of-order) records") {
		t.Errorf("pcap: the table does not show the late frames:\n%s", table)
	}

	// A pcapng packet stamped 2^64-1 microseconds cannot be placed on a
	// nanosecond time line: refused by name, not dropped.
	huge := writeFile(t, dir, "huge.pcapng", func(w *bufio.Writer) {
		le := binary.LittleEndian
		put := func(vs ...uint32) {
			for _, v := range vs {
				binary.Write(w, le, v)
			}
		}
		frame := udpFrame(1, 2)
		put(0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0xffffffff, 0xffffffff, 28)
		put(1, 20, 1, 65535, 20)
		n := uint32(len(frame))
		pad := (4 - n%4) % 4
		put(6, 32+n+pad, 0, 0xffffffff, 0xffffffff, n, n)
		w.Write(frame)
		w.Write(make([]byte, pad))
		put(32 + n + pad)
	})
	if msg := expectRefusal(t, bin, []string{"replay", "--trace", huge}, "huge.pcapng", 0); !strings.Contains(msg, "timestamp") {
		t.Errorf("the error does not name the timestamp: %s", msg)
	}
}
