package injection

// Self-Tuned (Thottethodi, Lebeck and Mukherjee, "Self-Tuned Congestion
// Control for Multiprocessor Networks", HPCA 2001), the comparison point of
// paper 001 §4.2: "nodes detect network congestion by using global
// information about the total number of full buffers in the network. If
// this number surpasses a threshold, all nodes apply message throttling."
//
// It is global knowledge by design: the original gathers the count over a
// sideband network every gather period. Here one controller, shared by
// every NIC, reads the count from the fabric (View.GlobalFullBuffers) once
// per gather period and throttles every NIC (no new packets) while it is
// above the threshold. The threshold tunes itself by hill climbing once
// per tuning period on the packets delivered in the period: it rises by 1%
// of the buffers when throughput did not fall and the network was
// throttled (the threshold may be too low), and falls by 4% when
// throughput dropped by more than a quarter (it is too high). Paper 001
// only summarises the mechanism; these steps are our reading of the
// original, and the sideband network's bandwidth is not taken from the
// main network (paper 001 does not either, §4.2).

type selfTunedControl struct {
	cfg       ControlConfig
	threshold float64 // fraction of lane buffers full
	throttled bool
	// throttledInPeriod: the network was throttled at some gather of the
	// current tuning period.
	throttledInPeriod  bool
	started            bool
	nextGather         int64
	nextTune           int64
	lastDelivered      uint64
	lastThroughput     uint64
	haveLastThroughput bool
}

func newSelfTuned(c ControlConfig, _ int) Control {
	return &selfTunedControl{cfg: c, threshold: c.Threshold}
}

func (c *selfTunedControl) Kind() ControlKind    { return SelfTuned }
func (c *selfTunedControl) Measure(View) float64 { return 0 }
func (c *selfTunedControl) Gate(int) Gate        { return selfTunedGate{c} }

// Threshold returns the current threshold (a fraction of the buffers).
func (c *selfTunedControl) Threshold() float64 { return c.threshold }

// update gathers and tunes when their periods have come.
func (c *selfTunedControl) update(v View) {
	now := v.Now()
	cyc := c.cfg.cycle(v)
	gather := max(1, int64(c.cfg.GatherPeriod*float64(cyc)))
	tune := max(1, int64(c.cfg.TunePeriod*float64(cyc)))
	if !c.started {
		c.started = true
		c.nextGather, c.nextTune = now, now+tune
		c.lastDelivered = v.GlobalDelivered()
	}
	if now >= c.nextTune {
		d := v.GlobalDelivered()
		thr := d - c.lastDelivered
		c.lastDelivered = d
		switch {
		case c.haveLastThroughput && 4*thr < 3*c.lastThroughput:
			c.threshold = max(0.01, c.threshold-0.04)
		case c.throttledInPeriod:
			c.threshold = min(1, c.threshold+0.01)
		}
		c.lastThroughput, c.haveLastThroughput = thr, true
		c.throttledInPeriod = false
		c.nextTune += ((now-c.nextTune)/tune + 1) * tune
	}
	if now >= c.nextGather {
		full, total := v.GlobalFullBuffers()
		c.throttled = total > 0 && float64(full) > c.threshold*float64(total)
		if c.throttled {
			c.throttledInPeriod = true
		}
		c.nextGather += ((now-c.nextGather)/gather + 1) * gather
	}
}

// selfTunedGate is one NIC's view of the shared controller.
type selfTunedGate struct{ c *selfTunedControl }

func (g selfTunedGate) Admit(_, _ int, v View) (bool, int64) {
	g.c.update(v)
	if g.c.throttled {
		return false, g.c.nextGather
	}
	return true, 0
}

func (g selfTunedGate) Injected(int, int64, View) {}

func (g selfTunedGate) Open() int {
	if g.c.throttled {
		return 0
	}
	return g.c.cfg.Channels
}
