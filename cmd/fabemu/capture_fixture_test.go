package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// captureFixture is the small capture the replay-capture-ooo golden run
// replays: four stations exchanging UDP frames every 150 ns, stations 0
// and 1 in bursts to station 2, and an ARP broadcast from each station.
// TestCaptureFixture checks the committed file against this generator;
// -update rewrites it.
const captureFixture = "testdata/capture-small.pcap"

func buildCaptureFixture(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	mac := func(i int) []byte {
		if i < 0 {
			return []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		}
		return []byte{0x02, 0x00, 0x5e, 0x10, 0x00, byte(i + 1)}
	}
	frame := func(src, dst, payload int) []byte {
		b := append(append([]byte{}, mac(dst)...), mac(src)...)
		if dst < 0 { // ARP request for station 3
			b = append(b, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1)
			b = append(b, mac(src)...)
			b = append(b, 192, 168, 7, byte(src+1), 0, 0, 0, 0, 0, 0, 192, 168, 7, 4)
			return b
		}
		ipLen := 28 + payload
		b = append(b, 0x08, 0x00, 0x45, 0, byte(ipLen>>8), byte(ipLen), 0, 0, 0x40, 0, 64, 17, 0, 0,
			192, 168, 7, byte(src+1), 192, 168, 7, byte(dst+1))
		b = binary.BigEndian.AppendUint16(b, uint16(5000+src))
		b = binary.BigEndian.AppendUint16(b, 9000)
		b = binary.BigEndian.AppendUint16(b, uint16(8+payload))
		b = append(b, 0, 0)
		for i := range payload {
			b = append(b, byte(i))
		}
		return b
	}
	base := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	n := 0
	put := func(src, dst, payload int) {
		data := frame(src, dst, payload)
		ci := gopacket.CaptureInfo{Timestamp: base.Add(time.Duration(n) * 150 * time.Nanosecond), CaptureLength: len(data), Length: len(data)}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
		n++
	}
	for s := range 4 {
		put(s, -1, 0)
	}
	for i := range 24 {
		put(i%2, 2, 20+(i*7)%44)
		if i%3 == 0 {
			put(3, i%3, 18)
		}
	}
	return buf.Bytes()
}

func TestCaptureFixture(t *testing.T) {
	got := buildCaptureFixture(t)
	if len(got) > 4096 {
		t.Fatalf("the fixture is %d bytes; keep it under 4 KB", len(got))
	}
	if *update {
		if err := os.WriteFile(filepath.FromSlash(captureFixture), got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(filepath.FromSlash(captureFixture))
	if err != nil {
		t.Fatalf("%v (go test ./cmd/fabemu -run TestCaptureFixture -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from its generator (go test ./cmd/fabemu -run TestCaptureFixture -update rewrites it)", captureFixture)
	}
}
