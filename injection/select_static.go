package injection

// pickStatic is a static port assignment (paper 002 §4.2 contrasts static
// with dynamic port selection): the packet goes to the queue of the output
// its deterministic (escape, dimension-order on a cube) route takes at the
// first switch, whatever the queues' populations. Unlike lpath it needs no
// coordinates, so it works on any topology.
func pickStatic(v QueueView) int { return v.Deterministic() }
