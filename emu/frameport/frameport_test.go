package frameport

import "testing"

func TestPoolOwnership(t *testing.T) {
	p := NewPool(nil, 100)
	f := p.Get()
	if len(f.Data) != 0 || cap(f.Data) != 100 || p.Held() != 1 {
		t.Fatalf("new frame: len %d cap %d, held %d", len(f.Data), cap(f.Data), p.Held())
	}
	f.Data = append(f.Data, 1, 2, 3)
	f.Release()
	f.Release() // a second release does nothing
	if p.Held() != 0 || f.Data != nil || f.Port != nil {
		t.Fatalf("after release: held %d, data %v", p.Held(), f.Data)
	}
	g := p.Get()
	if len(g.Data) != 0 || cap(g.Data) != 100 {
		t.Fatalf("reused frame: len %d cap %d", len(g.Data), cap(g.Data))
	}
	g.Release()
	(&Frame{Data: []byte{1}}).Release() // a frame of no pool
	if p.Held() != 0 {
		t.Fatalf("held %d", p.Held())
	}
}

func TestCauseString(t *testing.T) {
	want := []string{"queue_full", "too_short", "too_long", "write_error", "closed", "kernel", "no_peer"}
	for c := range NumCauses {
		if c.String() != want[c] {
			t.Errorf("cause %d: %q, want %q", c, c.String(), want[c])
		}
	}
	if s := Cause(-1).String(); s != "cause(-1)" {
		t.Errorf("out of range: %q", s)
	}
}

// TestHeadroom: frames of a pool with headroom start their Data after it,
// Headroom gives the buffer from its start while Data has not moved, and
// nil once it has.
func TestHeadroom(t *testing.T) {
	p := NewPoolHeadroom(nil, 64, 10)
	f := p.Get()
	if len(f.Data) != 0 || cap(f.Data) != 54 {
		t.Fatalf("Data len %d cap %d, want 0 and 54", len(f.Data), cap(f.Data))
	}
	if h := f.Headroom(10); len(h) != 10 || cap(h) != 64 {
		t.Fatalf("Headroom of an empty frame: len %d cap %d", len(h), cap(h))
	}
	f.Data = append(f.Data, "frame"...)
	h := f.Headroom(10)
	if len(h) != 15 || string(h[10:]) != "frame" {
		t.Fatalf("Headroom = %q", h)
	}
	if f.Headroom(4) != nil || f.Headroom(-1) != nil || f.Headroom(64) != nil {
		t.Error("Headroom of the wrong size not nil")
	}
	f.Data = f.Data[1:]
	if f.Headroom(10) != nil {
		t.Error("Headroom after Data moved not nil")
	}
	f.Release()
	if g := NewPool(nil, 32).Get(); g.Headroom(0) == nil || cap(g.Data) != 32 {
		t.Error("pool without headroom")
	}
}
