package fabric

import "testing"

// TestHierRRHandWorked follows the two-level round-robin arbiter of paper
// 003 Fig. 2.4 (8:1 sub-arbiters, then a round robin over the groups)
// through grants worked out by hand on 20 requesters: groups 0-7, 8-15
// and 16-19.
func TestHierRRHandWorked(t *testing.T) {
	h := newHierRR(20)
	if len(h.leaf) != 3 {
		t.Fatalf("20 requesters: %d groups, want 3", len(h.leaf))
	}
	req := func(ids ...int) []bool {
		w := make([]bool, 20)
		for _, i := range ids {
			w[i] = true
		}
		return w
	}
	steps := []struct {
		want []int
		win  int
		root int   // root pointer after the grant
		leaf []int // group pointers after the grant
	}{
		// Root at group 0, its pointer at 0: requester 3 of group 0 wins;
		// root moves to group 1, group 0's pointer to 4.
		{[]int{3, 5, 9, 17}, 3, 1, []int{4, 0, 0}},
		// Root at group 1: 9 wins (group 1 pointer 0 -> 9 is first);
		// group 1's pointer moves to 2 (one past 9-8=1).
		{[]int{3, 5, 9, 17}, 9, 2, []int{4, 2, 0}},
		// Root at group 2: 17 (index 1 of a group of 4) wins; pointer 2.
		{[]int{3, 5, 9, 17}, 17, 0, []int{4, 2, 2}},
		// Root back at group 0, pointer 4: 5 wins before 3 (3 is behind
		// the pointer); pointer 6.
		{[]int{3, 5, 9, 17}, 5, 1, []int{6, 2, 2}},
		// Group 1 has no request: the root skips it to group 2, whose
		// pointer 2 finds 16 only after wrapping (18, 19 do not request).
		{[]int{3, 16}, 16, 0, []int{6, 2, 1}},
		// Group 0 from pointer 6 wraps to 3; group 0's pointer 4.
		{[]int{3, 16}, 3, 1, []int{4, 2, 1}},
		// Nobody requests: no grant, pointers stay.
		{nil, -1, 1, []int{4, 2, 1}},
		// Group 1, pointer 2: 15 (index 7) is the only request; wraps to 0.
		{[]int{15}, 15, 2, []int{4, 0, 1}},
	}
	for i, st := range steps {
		if got := h.pick(req(st.want...)); got != st.win {
			t.Fatalf("step %d: requests %v: granted %d, want %d", i+1, st.want, got, st.win)
		}
		if h.root != st.root {
			t.Errorf("step %d: root pointer %d, want %d", i+1, h.root, st.root)
		}
		for g, p := range st.leaf {
			if h.leaf[g] != p {
				t.Errorf("step %d: group %d pointer %d, want %d", i+1, g, h.leaf[g], p)
			}
		}
	}
}

// TestHierRRFair: with every requester asking all the time, each of n
// requesters is granted once every n grants when the groups are full,
// whatever the group size (round robin at both levels).
func TestHierRRFair(t *testing.T) {
	for _, n := range []int{1, 5, 8, 16, 24} {
		h := newHierRR(n)
		all := make([]bool, n)
		for i := range all {
			all[i] = true
		}
		count := make([]int, n)
		for range 10 * n {
			count[h.pick(all)]++
		}
		groups := (n + hrrGroup - 1) / hrrGroup
		for i, c := range count {
			// a requester in a group of size s wins 10n/(groups*s) times.
			g := i / hrrGroup
			size := min(hrrGroup, n-g*hrrGroup)
			if want := 10 * n / (groups * size); c != want {
				t.Errorf("n=%d: requester %d granted %d times, want %d", n, i, c, want)
			}
		}
	}
}
