package vnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestEncodeDecode(t *testing.T) {
	h := Header{Flags: FlagNeedsCsum, GSOType: GSOTCPv6 | GSOECN, HdrLen: 86, GSOSize: 1428, CsumStart: 54, CsumOffset: 16}
	var b [HeaderLen]byte
	h.Encode(b[:])
	want := []byte{1, 0x84, 86, 0, 0x94, 0x05, 54, 0, 16, 0}
	if !bytes.Equal(b[:], want) {
		t.Fatalf("Encode = % x, want % x", b, want)
	}
	got, err := Decode(b[:])
	if err != nil || got != h {
		t.Fatalf("Decode = %+v, %v; want %+v", got, err, h)
	}
	if !got.IsGSO() || (Header{GSOType: GSOECN}).IsGSO() {
		t.Error("IsGSO wrong")
	}
	if _, err := Decode(b[:9]); !errors.Is(err, ErrShort) {
		t.Errorf("Decode of 9 bytes: %v, want ErrShort", err)
	}
}

// superFrame builds an Ethernet + IPv4/IPv6 + TCP frame carrying payload,
// with the pseudo-header sum in the TCP checksum field as the kernel leaves
// it for NEEDS_CSUM.
func superFrame(v6 bool, payload []byte, vlan bool) ([]byte, Header) {
	eth := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1}
	if vlan {
		eth = append(eth, 0x81, 0x00, 0, 7)
	}
	var ip []byte
	if v6 {
		eth = append(eth, 0x86, 0xdd)
		ip = make([]byte, 40)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(20+12+len(payload)))
		ip[6], ip[7] = 6, 64
		ip[8], ip[23] = 0xfd, 1
		ip[24], ip[39] = 0xfd, 2
	} else {
		eth = append(eth, 0x08, 0x00)
		ip = make([]byte, 20)
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(20+20+12+len(payload)))
		binary.BigEndian.PutUint16(ip[4:], 0x1234)
		ip[6] = 0x40 // DF
		ip[8], ip[9] = 64, 6
		copy(ip[12:], []byte{10, 250, 0, 1, 10, 250, 0, 2})
		binary.BigEndian.PutUint16(ip[10:], ^fold(checksum(ip, 0)))
	}
	tcp := make([]byte, 32) // with a 12-byte timestamp option
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 5201)
	binary.BigEndian.PutUint32(tcp[4:], 0xfffff000) // wraps within the frame
	binary.BigEndian.PutUint32(tcp[8:], 77)
	tcp[12] = 8 << 4
	tcp[13] = 0x80 | 0x10 | 0x08 | 0x01 // CWR ACK PSH FIN
	binary.BigEndian.PutUint16(tcp[14:], 512)
	copy(tcp[20:], []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2})
	frame := append(append(append(eth, ip...), tcp...), payload...)
	l4 := len(eth) + len(ip)
	var s uint64
	if v6 {
		s = checksum(ip[8:40], 0)
	} else {
		s = checksum(ip[12:20], 0)
	}
	s += uint64(len(tcp)+len(payload)) + 6
	binary.BigEndian.PutUint16(frame[l4+16:], fold(s))
	h := Header{Flags: FlagNeedsCsum, GSOType: GSOTCPv4, HdrLen: uint16(l4 + len(tcp)), GSOSize: 1000,
		CsumStart: uint16(l4), CsumOffset: 16}
	if v6 {
		h.GSOType = GSOTCPv6
	}
	return frame, h
}

// verify checks a segment's checksums and returns its TCP payload, seq and flags.
func verify(t *testing.T, seg []byte, l4 int, v6 bool) ([]byte, uint32, byte) {
	t.Helper()
	ipOff := l4 - 20
	var s uint64
	if v6 {
		ipOff = l4 - 40
		if got := int(binary.BigEndian.Uint16(seg[ipOff+4:])); got != len(seg)-l4 {
			t.Fatalf("IPv6 payload length %d, want %d", got, len(seg)-l4)
		}
		s = checksum(seg[ipOff+8:ipOff+40], 0)
	} else {
		if fold(checksum(seg[ipOff:l4], 0)) != 0xffff {
			t.Fatal("bad IPv4 header checksum")
		}
		if got := int(binary.BigEndian.Uint16(seg[ipOff+2:])); got != len(seg)-ipOff {
			t.Fatalf("IPv4 total length %d, want %d", got, len(seg)-ipOff)
		}
		s = checksum(seg[ipOff+12:ipOff+20], 0)
	}
	s += uint64(len(seg)-l4) + 6
	if fold(checksum(seg[l4:], s)) != 0xffff {
		t.Fatal("bad TCP checksum")
	}
	return seg[l4+32:], binary.BigEndian.Uint32(seg[l4+4:]), seg[l4+13]
}

func TestSegment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v6, vlan bool
		n        int
	}{{"v4", false, false, 4500}, {"v6", true, false, 4500}, {"v4-vlan", false, true, 3000}, {"v6-one", true, false, 999}, {"v4-empty", false, false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			payload := make([]byte, tc.n)
			for i := range payload {
				payload[i] = byte(i*7 + i>>8)
			}
			frame, h := superFrame(tc.v6, payload, tc.vlan)
			orig := bytes.Clone(frame)
			var got []byte
			var segs int
			err := Segment(frame, h, nil, func(seg []byte) error {
				data, seq, flags := verify(t, seg, int(h.CsumStart), tc.v6)
				if want := uint32(0xfffff000) + uint32(len(got)); seq != want {
					t.Errorf("segment %d: seq %#x, want %#x", segs, seq, want)
				}
				last := len(got)+len(data) == tc.n
				if (flags&0x09 != 0) != last {
					t.Errorf("segment %d: flags %#x, FIN/PSH must be on the last only", segs, flags)
				}
				if (flags&0x80 != 0) != (segs == 0) {
					t.Errorf("segment %d: flags %#x, CWR must be on the first only", segs, flags)
				}
				if len(data) > int(h.GSOSize) {
					t.Errorf("segment %d: %d bytes > gso_size", segs, len(data))
				}
				got = append(got, data...)
				segs++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatal("payload not reassembled intact")
			}
			if want := max(1, (tc.n+999)/1000); segs != want {
				t.Errorf("%d segments, want %d", segs, want)
			}
			if !bytes.Equal(frame, orig) {
				t.Error("Segment modified its input")
			}
		})
	}
}

func TestCompleteChecksum(t *testing.T) {
	frame, h := superFrame(false, []byte("hello, fabric"), false)
	h.GSOType = GSONone
	var out [][]byte
	if err := Segment(frame, h, nil, func(b []byte) error { out = append(out, bytes.Clone(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 {
		t.Fatalf("%d frames", len(out))
	}
	verify(t, out[0], int(h.CsumStart), false)
	h.CsumOffset = 2000
	if err := CompleteChecksum(frame, h); !errors.Is(err, ErrMalformed) {
		t.Errorf("checksum outside the frame: %v", err)
	}
}

func TestSegmentErrors(t *testing.T) {
	frame, h := superFrame(false, make([]byte, 3000), false)
	emit := func([]byte) error { return nil }
	bad := []Header{
		{GSOType: GSOUDP, GSOSize: 100, CsumStart: h.CsumStart},
		{GSOType: GSOTCPv4, GSOSize: 0, CsumStart: h.CsumStart},
		{GSOType: GSOTCPv4, GSOSize: 100, CsumStart: 20},
		{GSOType: GSOTCPv6, GSOSize: 100, CsumStart: h.CsumStart},
		{GSOType: GSOTCPv4, GSOSize: 100, CsumStart: 9000},
	}
	for _, b := range bad {
		if err := Segment(frame, b, nil, emit); err == nil {
			t.Errorf("%+v: no error", b)
		}
	}
}

// FuzzSegment feeds arbitrary headers and frames through the header parser
// and segmentation: they must return an error or segments no longer than
// the input's headers plus gso_size, never panic.
func FuzzSegment(f *testing.F) {
	frame, h := superFrame(false, make([]byte, 2500), false)
	var hb [HeaderLen]byte
	h.Encode(hb[:])
	f.Add(append(hb[:], frame...))
	frame, h = superFrame(true, make([]byte, 100), true)
	h.Encode(hb[:])
	f.Add(append(hb[:], frame...))
	f.Add([]byte{1, 1, 0, 0, 1, 0, 14, 0, 16, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Decode(b)
		if err != nil {
			return
		}
		var re [HeaderLen]byte
		h.Encode(re[:])
		if !bytes.Equal(re[:], b[:HeaderLen]) {
			t.Fatalf("Encode(Decode(% x)) = % x", b[:HeaderLen], re)
		}
		frame := b[HeaderLen:]
		n := 0
		_ = Segment(frame, h, nil, func(seg []byte) error {
			n++
			if h.IsGSO() && len(seg) > int(h.CsumStart)+60+int(h.GSOSize) {
				t.Fatalf("segment of %d bytes from gso_size %d", len(seg), h.GSOSize)
			}
			if n > len(frame)+1 {
				t.Fatal("more segments than bytes")
			}
			return nil
		})
	})
}
