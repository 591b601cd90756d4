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
	want := []string{"queue_full", "too_short", "too_long", "write_error", "closed"}
	for c := range NumCauses {
		if c.String() != want[c] {
			t.Errorf("cause %d: %q, want %q", c, c.String(), want[c])
		}
	}
	if s := Cause(-1).String(); s != "cause(-1)" {
		t.Errorf("out of range: %q", s)
	}
}
