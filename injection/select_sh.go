package injection

// pickShortest is paper 002's sh policy (§2): "the new packet is
// allocated to the shortest queue", which reduces head-of-line blocking at
// injection the way virtual channels do inside the router. Ties go to
// the lowest-numbered queue.
func pickShortest(v QueueView) int {
	best := 0
	for q := 1; q < v.Queues(); q++ {
		if v.Len(q) < v.Len(best) {
			best = q
		}
	}
	return best
}
