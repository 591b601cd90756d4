package injection

// pickShortestPrerouted is paper 002's shp policy (§2): each queue is
// assigned to an output link; a packet may go to the queue of any
// direction it needs to travel (its minimal outputs at the first switch)
// and the one with the lowest population is chosen. Ties go to the
// lowest-numbered queue. A packet with no minimal output at the first
// switch (its destination is on that switch) goes to the shortest queue.
func pickShortestPrerouted(v QueueView) int {
	var buf [16]int
	qs := v.Minimal(buf[:0])
	if len(qs) == 0 {
		return pickShortest(v)
	}
	best := qs[0]
	for _, q := range qs[1:] {
		if l, b := v.Len(q), v.Len(best); l < b || l == b && q < best {
			best = q
		}
	}
	return best
}
