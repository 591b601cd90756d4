package injection

import (
	"slices"
	"testing"
)

// fakeQueues is a QueueView with fixed answers.
type fakeQueues struct {
	lens    []int
	minimal []int
	det     int
	offsets []int
}

func (f *fakeQueues) Queues() int           { return len(f.lens) }
func (f *fakeQueues) Len(q int) int         { return f.lens[q] }
func (f *fakeQueues) Minimal(b []int) []int { return append(b, f.minimal...) }
func (f *fakeQueues) Deterministic() int    { return f.det }
func (f *fakeQueues) Offsets(b []int) []int { return append(b, f.offsets...) }
func pick(t *testing.T, name string, v QueueView) int {
	t.Helper()
	p, ok := LookupSelect(name)
	if !ok {
		t.Fatalf("no policy %s", name)
	}
	return p.Pick(v)
}

// Queues on a 2D torus: 0 = +X, 1 = -X, 2 = +Y, 3 = -Y.

func TestSelectShortest(t *testing.T) {
	for _, c := range []struct {
		lens []int
		want int
	}{
		{[]int{0, 0, 0, 0}, 0}, // all empty: the lowest
		{[]int{3, 1, 2, 1}, 1}, // tie between 1 and 3: the lowest
		{[]int{5, 4, 3, 2}, 3}, // strictly shortest
		{[]int{7}, 0},          // one queue
	} {
		if got := pick(t, "sh", &fakeQueues{lens: c.lens, minimal: []int{2}}); got != c.want {
			t.Errorf("sh %v = %d, want %d", c.lens, got, c.want)
		}
	}
}

func TestSelectShortestPrerouted(t *testing.T) {
	// Paper 002 §2's example: a packet with header (-3, +1) may go to -X
	// (queue 1) or +Y (queue 2); the less populated wins.
	v := &fakeQueues{lens: []int{0, 4, 2, 0}, minimal: []int{1, 2}}
	if got := pick(t, "shp", v); got != 2 {
		t.Errorf("shp -X=4 +Y=2: %d, want 2 (+Y)", got)
	}
	v.lens = []int{0, 1, 2, 0}
	if got := pick(t, "shp", v); got != 1 {
		t.Errorf("shp -X=1 +Y=2: %d, want 1 (-X)", got)
	}
	v.lens = []int{0, 2, 2, 0} // tie: the lowest queue
	if got := pick(t, "shp", v); got != 1 {
		t.Errorf("shp tie: %d, want 1", got)
	}
	v.minimal = []int{2, 1} // order of the outputs does not matter on a tie
	if got := pick(t, "shp", v); got != 1 {
		t.Errorf("shp tie, outputs reversed: %d, want 1", got)
	}
	// Never a queue outside the packet's directions, even if empty.
	v = &fakeQueues{lens: []int{0, 9, 9, 0}, minimal: []int{1, 2}}
	if got := pick(t, "shp", v); got != 1 {
		t.Errorf("shp with empty queues elsewhere: %d, want 1", got)
	}
	// No minimal output (destination on the first switch): shortest.
	v = &fakeQueues{lens: []int{3, 1, 2, 2}}
	if got := pick(t, "shp", v); got != 1 {
		t.Errorf("shp local destination: %d, want 1", got)
	}
}

func TestSelectLongestPath(t *testing.T) {
	for _, c := range []struct {
		off  []int
		lens []int
		want int
	}{
		{[]int{-3, 1}, []int{0, 9, 0, 0}, 1}, // the paper's (-3, +1): -X whatever its population
		{[]int{2, -5}, []int{0, 0, 0, 0}, 3}, // -Y
		{[]int{0, 4}, []int{0, 0, 0, 0}, 2},  // +Y
		{[]int{3, 3}, []int{0, 0, 0, 0}, 0},  // tie: the lower dimension, +X
		{[]int{-2, 2}, []int{0, 0, 0, 0}, 1}, // tie: -X
		{[]int{0, 0}, []int{1, 1, 1, 1}, 0},  // own switch
		{[]int{0, -1}, []int{0, 0}, 1},       // two queues: -Y has rank 3, 3 mod 2 = 1
	} {
		v := &fakeQueues{lens: c.lens, offsets: c.off}
		if got := pick(t, "lpath", v); got != c.want {
			t.Errorf("lpath offsets %v: %d, want %d", c.off, got, c.want)
		}
	}
}

func TestSelectStatic(t *testing.T) {
	v := &fakeQueues{lens: []int{0, 9, 0, 0}, det: 1}
	if got := pick(t, "static", v); got != 1 {
		t.Errorf("static: %d, want the deterministic output's queue 1", got)
	}
}

func TestCubeOffsets(t *testing.T) {
	k := []int{16, 16}
	for _, c := range []struct {
		src, dst []int
		wrap     bool
		want     []int
	}{
		{[]int{0, 0}, []int{13, 1}, true, []int{-3, 1}},  // the paper's (-3, +1)
		{[]int{0, 0}, []int{8, 7}, true, []int{8, 7}},    // k/2: positive
		{[]int{15, 2}, []int{1, 0}, true, []int{2, -2}},  // across the wrap
		{[]int{0, 0}, []int{13, 1}, false, []int{13, 1}}, // mesh
	} {
		if got := CubeOffsets(c.src, c.dst, k, c.wrap, nil); !slices.Equal(got, c.want) {
			t.Errorf("CubeOffsets(%v, %v, wrap %v) = %v, want %v", c.src, c.dst, c.wrap, got, c.want)
		}
	}
}

func TestQueuesConfigValidate(t *testing.T) {
	if err := DefaultQueuesConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []QueuesConfig{
		{Count: 0, Mode: Virtual, Select: "sh"},
		{Count: 9, Mode: Virtual, Select: "sh"},
		{Count: 4, Mode: "both", Select: "sh"},
		{Count: 4, Mode: Physical, Select: "longest"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
