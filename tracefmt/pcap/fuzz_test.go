package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/fabemu/fabemu/tracefmt"
)

// fuzzCapture reads data to the end through the reader and the
// summarizer, and checks that nothing panics, that reading ends, that
// memory stays bounded and that malformed input gives a one-line
// *tracefmt.ParseError naming the file.
func fuzzCapture(t *testing.T, data []byte) {
	r, err := NewReader(bytes.NewReader(data), "fuzz")
	if err != nil {
		checkFuzzErr(t, err)
		return
	}
	defer r.Close()
	s := NewSummarizer()
	for n := 0; ; n++ {
		p, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			checkFuzzErr(t, err)
			break
		}
		if p.CapLen != len(p.Data) || p.CapLen > MaxFrame || p.CapLen > p.OrigLen || p.OrigLen > MaxOrigLen {
			t.Fatalf("packet %d: captured %d (data %d), original %d", n+1, p.CapLen, len(p.Data), p.OrigLen)
		}
		if n > len(data)/12 {
			t.Fatalf("%d packets from %d bytes", n, len(data))
		}
		if cap(r.g.buf) > maxBlock+16 {
			t.Fatalf("guard buffer grew to %d bytes", cap(r.g.buf))
		}
		s.Add(p)
	}
	s.Stats(r.Interfaces())
}

func checkFuzzErr(t *testing.T, err error) {
	var pe *tracefmt.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *tracefmt.ParseError", err, err)
	}
	if pe.File != "fuzz" || pe.Msg == "" || strings.Contains(err.Error(), "\n") {
		t.Fatalf("bad error %q", err)
	}
}

func FuzzPcap(f *testing.F) {
	s := seg{sport: 1, dport: 2, seq: 3, payload: 10}
	fr := ethFrame(f, s, 0)
	for _, order := range []endian{binary.LittleEndian, binary.BigEndian} {
		for _, nano := range []bool{false, true} {
			f.Add(pcapFile(order, nano, 65535, layers.LinkTypeEthernet, []frame{{data: fr}, {data: fr[:40], origLen: len(fr)}}))
		}
	}
	f.Add(pcapFile(binary.LittleEndian, false, 65535, layers.LinkTypeLinuxSLL2, []frame{{data: sll2Frame(f, s)}}))
	f.Add(pcapFile(binary.LittleEndian, false, 65535, layers.LinkTypeRaw, []frame{{data: ipPacket(f, seg{v6: true, udp: true})}}))
	f.Add(pcapFile(binary.BigEndian, false, 65535, layers.LinkTypeIEEE802_11, []frame{{data: fr}}))
	f.Add([]byte{0xd4, 0xc3, 0xb2, 0xa1})
	f.Fuzz(fuzzCapture)
}

func FuzzPcapng(f *testing.F) {
	s := seg{sport: 1, dport: 2, seq: 3, payload: 10}
	fr := ethFrame(f, s, 0)
	ifaces := []ngIface{{link: layers.LinkTypeEthernet, name: "e"}, {link: layers.LinkTypeLinuxSLL, tsresol: 0x8a}, {link: layers.LinkTypeIPv6, tsresol: 9}}
	frames := []frame{{data: fr}, {iface: 1, ts: 1 << 40, data: sllFrame(f, s)}, {iface: 2, data: ipPacket(f, seg{v6: true})}, {data: fr[:30], origLen: len(fr)}}
	for _, order := range []endian{binary.LittleEndian, binary.BigEndian} {
		f.Add(pcapngFile(order, ifaces, frames))
	}
	f.Add(pcapngFile(binary.LittleEndian, []ngIface{{link: layers.LinkTypeFDDI}}, []frame{{data: fr}}))
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a})
	f.Fuzz(fuzzCapture)
}

// FuzzDecoder: a live frame of any bytes decodes without a panic, and the
// decoded fields agree with what the bytes can hold.
func FuzzDecoder(f *testing.F) {
	s := seg{sport: 1, dport: 2, seq: 3, payload: 10}
	fr := ethFrame(f, s, 0)
	f.Add(fr)
	f.Add(fr[:20])
	f.Add(ipPacket(f, seg{v6: true, udp: true}))
	f.Add([]byte{})
	d := NewDecoder()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lt := range []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeRaw, layers.LinkTypeLinuxSLL2} {
			p := Packet{LinkType: lt, Data: data, CapLen: len(data), OrigLen: len(data)}
			d.Decode(&p)
			if p.IPVersion != 0 && p.IPVersion != 4 && p.IPVersion != 6 {
				t.Fatalf("link %d: IP version %d", lt, p.IPVersion)
			}
			if p.HasDstMAC && len(data) < 14 {
				t.Fatalf("link %d: a destination MAC from %d bytes", lt, len(data))
			}
		}
	})
}
