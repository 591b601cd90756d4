package injection

// pickLongestPath is paper 002's lpath policy (§2): "each packet is
// allocated to the queue associated to the direction having the longest
// coordinate to travel ... regardless of the queue's population": a
// static decision. Ties between dimensions go to the lowest dimension; a
// packet for its own switch goes to queue 0.
func pickLongestPath(v QueueView) int {
	var buf [8]int
	off := v.Offsets(buf[:0])
	best, bestLen := -1, 0
	for d, o := range off {
		if a := max(o, -o); a > bestLen {
			best, bestLen = d, a
		}
	}
	if best < 0 {
		return 0
	}
	return DirectionQueue(best, off[best] < 0, v.Queues())
}
