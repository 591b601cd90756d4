package ether

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// frame builds a frame: dst, src, then the given 16-bit words (tags and
// EtherType), then payload bytes of zeros.
func frame(dst, src MAC, words []uint16, payload int) []byte {
	b := append([]byte{}, dst[:]...)
	b = append(b, src[:]...)
	for _, w := range words {
		b = binary.BigEndian.AppendUint16(b, w)
	}
	return append(b, make([]byte, payload)...)
}

var (
	hostA = MAC{0x02, 0, 0, 0, 0, 0x0a}
	hostB = MAC{0x02, 0, 0, 0, 0, 0x0b}
	mcast = MAC{0x33, 0x33, 0, 0, 0, 0x01}
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		frame   []byte
		want    Header
		class   Class
		wantErr error
	}{
		{"empty", nil, Header{}, Unicast, ErrTooShort},
		{"13 bytes", make([]byte, 13), Header{}, Unicast, ErrTooShort},
		{"ipv4 unicast", frame(hostB, hostA, []uint16{0x0800}, 46),
			Header{Dst: hostB, Src: hostA, EtherType: 0x0800, Len: 14}, Unicast, nil},
		{"arp broadcast header only", frame(BroadcastMAC, hostA, []uint16{0x0806}, 0),
			Header{Dst: BroadcastMAC, Src: hostA, EtherType: 0x0806, Len: 14}, Broadcast, nil},
		{"ipv6 multicast", frame(mcast, hostA, []uint16{0x86dd}, 40),
			Header{Dst: mcast, Src: hostA, EtherType: 0x86dd, Len: 14}, Multicast, nil},
		{"802.3 length field", frame(hostB, hostA, []uint16{100}, 100),
			Header{Dst: hostB, Src: hostA, EtherType: 100, Len: 14}, Unicast, nil},
		{"802.1Q vlan 42", frame(hostB, hostA, []uint16{TPID8021Q, 0xa02a, 0x0800}, 20),
			Header{Dst: hostB, Src: hostA, EtherType: 0x0800, Tags: 1, VLAN: 42, Len: 18}, Unicast, nil},
		{"q-in-q", frame(hostB, hostA, []uint16{TPID8021AD, 7, TPID8021Q, 9, 0x86dd}, 0),
			Header{Dst: hostB, Src: hostA, EtherType: 0x86dd, Tags: 2, VLAN: 7, Len: 22}, Unicast, nil},
		{"three tags stop at MaxTags", frame(hostB, hostA, []uint16{TPID8021AD, 7, TPID8021Q, 9, TPID8021Q, 3, 0x0800}, 0),
			Header{Dst: hostB, Src: hostA, EtherType: TPID8021Q, Tags: 2, VLAN: 7, Len: 22}, Unicast, nil},
		{"tag truncated", frame(hostB, hostA, []uint16{TPID8021Q, 1}, 0), Header{}, Unicast, ErrTooShort},
		{"tag without inner type", frame(hostB, hostA, []uint16{TPID8021Q}, 0), Header{}, Unicast, ErrTooShort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Parse(tc.frame)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Parse error = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if h != tc.want {
				t.Fatalf("Parse = %+v, want %+v", h, tc.want)
			}
			if c := h.Class(); c != tc.class {
				t.Fatalf("Class = %v, want %v", c, tc.class)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	const mtu = 1500
	tests := []struct {
		name    string
		frame   []byte
		mtu     int
		wantErr error
	}{
		{"max untagged", frame(hostB, hostA, []uint16{0x0800}, mtu), mtu, nil},
		{"one over", frame(hostB, hostA, []uint16{0x0800}, mtu+1), mtu, ErrTooLong},
		{"max tagged", frame(hostB, hostA, []uint16{TPID8021Q, 5, 0x0800}, mtu), mtu, nil},
		{"tagged one over", frame(hostB, hostA, []uint16{TPID8021Q, 5, 0x0800}, mtu+1), mtu, ErrTooLong},
		{"short", []byte{1, 2, 3}, mtu, ErrTooShort},
		{"bad mtu", frame(hostB, hostA, []uint16{0x0800}, 10), 0, ErrBadMTU},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Validate(tc.frame, tc.mtu); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Validate error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && len(tc.frame) > MaxFrameLen(tc.mtu) {
				t.Fatalf("valid frame of %d bytes exceeds MaxFrameLen %d", len(tc.frame), MaxFrameLen(tc.mtu))
			}
		})
	}
}

func TestMAC(t *testing.T) {
	tests := []struct {
		mac              MAC
		str              string
		bcast, mc, local bool
		class            Class
	}{
		{hostA, "02:00:00:00:00:0a", false, false, true, Unicast},
		{BroadcastMAC, "ff:ff:ff:ff:ff:ff", true, true, true, Broadcast},
		{mcast, "33:33:00:00:00:01", false, true, true, Multicast},
		{MAC{0x01, 0x00, 0x5e, 0, 0, 1}, "01:00:5e:00:00:01", false, true, false, Multicast},
		{MAC{0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc}, "00:1b:21:aa:bb:cc", false, false, false, Unicast},
	}
	for _, tc := range tests {
		if got := tc.mac.String(); got != tc.str {
			t.Errorf("String = %q, want %q", got, tc.str)
		}
		if tc.mac.IsBroadcast() != tc.bcast || tc.mac.IsMulticast() != tc.mc || tc.mac.IsLocal() != tc.local {
			t.Errorf("%s: broadcast/multicast/local = %v/%v/%v, want %v/%v/%v", tc.str,
				tc.mac.IsBroadcast(), tc.mac.IsMulticast(), tc.mac.IsLocal(), tc.bcast, tc.mc, tc.local)
		}
		if c := Classify(tc.mac); c != tc.class {
			t.Errorf("%s: Classify = %v, want %v", tc.str, c, tc.class)
		}
	}
	for _, c := range []Class{Unicast, Multicast, Broadcast, Class(9)} {
		if c.String() == "" {
			t.Errorf("Class(%d).String() is empty", c)
		}
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	frames := [][]byte{
		frame(hostB, hostA, []uint16{0x0800}, 100),
		frame(hostB, hostA, []uint16{TPID8021AD, 7, TPID8021Q, 9, 0x86dd}, 100),
		{1, 2},
		frame(hostB, hostA, []uint16{0x0800}, 2000),
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, f := range frames {
			h, _ := Validate(f, 1500)
			_ = h.Class()
		}
	})
	if allocs != 0 {
		t.Fatalf("Parse/Validate allocate %.1f times per run, want 0", allocs)
	}
}

func FuzzParseFrame(f *testing.F) {
	f.Add(frame(hostB, hostA, []uint16{0x0800}, 46))
	f.Add(frame(BroadcastMAC, hostA, []uint16{0x0806}, 28))
	f.Add(frame(hostB, hostA, []uint16{TPID8021Q, 42, 0x0800}, 10))
	f.Add(frame(hostB, hostA, []uint16{TPID8021AD, 7, TPID8021Q, 9, TPID8021Q, 3, 0x0800}, 0))
	f.Add(frame(hostB, hostA, []uint16{TPID8021Q}, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrTooShort) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if h.Len < HeaderLen || h.Len > MaxHeaderLen || h.Len > len(b) {
			t.Fatalf("header length %d out of range for %d-byte frame", h.Len, len(b))
		}
		if h.Len != HeaderLen+h.Tags*TagLen || h.Tags > MaxTags {
			t.Fatalf("header length %d inconsistent with %d tags", h.Len, h.Tags)
		}
		if !bytes.Equal(h.Dst[:], b[:6]) || !bytes.Equal(h.Src[:], b[6:12]) {
			t.Fatal("addresses do not match the frame")
		}
		if binary.BigEndian.Uint16(b[h.Len-2:]) != h.EtherType {
			t.Fatal("EtherType not read from the end of the header")
		}
		if (h.Class() == Unicast) == h.Dst.IsMulticast() {
			t.Fatal("class disagrees with the group bit")
		}
		_, verr := Validate(b, 1500)
		if tooLong := len(b)-h.Len > 1500; tooLong != errors.Is(verr, ErrTooLong) {
			t.Fatalf("Validate = %v for payload %d", verr, len(b)-h.Len)
		}
	})
}
