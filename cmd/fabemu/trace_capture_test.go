package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// writeCapture writes a gzip-compressed pcapng file holding one TCP flow
// whose client sends five 1000-byte segments in the order 1 2 4 3 5, the
// last one twice.
func writeCapture(t *testing.T) string {
	t.Helper()
	var raw bytes.Buffer
	w, err := pcapgo.NewNgWriter(&raw, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for k, n := range []uint32{1, 2, 4, 3, 5, 5} {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
		tcp := &layers.TCP{SrcPort: 40000, DstPort: 3260, Seq: 1000 * n, ACK: true, Window: 1000}
		tcp.SetNetworkLayerForChecksum(ip)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			eth, ip, tcp, gopacket.Payload(make([]byte, 1000))); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()[:128] // a snap length of 128
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(k) * time.Millisecond), CaptureLength: len(b), Length: len(buf.Bytes())}
		if err := w.WritePacket(ci, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw.Bytes())
	zw.Close()
	p := filepath.Join(t.TempDir(), "flow.pcapng.gz")
	if err := os.WriteFile(p, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTraceStatsCapture: "trace stats" on a capture reports packets as
// records, original bytes as total_bytes, truncated frames and the TCP
// order, as JSON and as a table.
func TestTraceStatsCapture(t *testing.T) {
	path := writeCapture(t)
	out, err := runTrace(t, "trace", "stats", path, "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Format        string  `json:"format"`
		Records       int64   `json:"records"`
		TotalBytes    int64   `json:"total_bytes"`
		CapturedBytes int64   `json:"captured_bytes"`
		Truncated     int64   `json:"truncated"`
		DurationS     float64 `json:"duration_s"`
		TCP           struct {
			Retransmissions int64   `json:"retransmissions"`
			Reordered       int64   `json:"reordered"`
			ReorderedRatio  float64 `json:"reordered_ratio"`
			ExtentMax       int64   `json:"extent_max"`
		} `json:"tcp"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// 6 frames of 14+20+20+1000 bytes cut to 128; segment 3 is late by
	// one arrival (4 came before it), the second 5 is a retransmission.
	if st.Format != "pcapng" || st.Records != 6 || st.TotalBytes != 6*1054 || st.CapturedBytes != 6*128 || st.Truncated != 6 ||
		st.DurationS != 0.005 || st.TCP.Retransmissions != 1 || st.TCP.Reordered != 1 || st.TCP.ReorderedRatio != 0.2 || st.TCP.ExtentMax != 1 {
		t.Errorf("stats %+v", st)
	}
	table, err := runTrace(t, "trace", "stats", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table)
	for _, want := range []string{"6 packets", "6324 on the wire, 768 captured", "6 frames cut", "TCP 10.0.0.1:40000 > 10.0.0.2:3260", "1 reordered (ratio 0.2000"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// a block-trace command refuses it clearly
	if _, err := runTrace(t, "trace", "convert", path, filepath.Join(t.TempDir(), "x.csv"), "--to", "csv"); err == nil ||
		!strings.Contains(err.Error(), "a packet capture, not a block-I/O trace") {
		t.Errorf("convert of a capture: %v", err)
	}
}
