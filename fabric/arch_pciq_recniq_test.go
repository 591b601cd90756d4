package fabric

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// star24 is paper 003 §2.7's single switch: 24 ports, host h on port h.
func star24(t *testing.T) *topo.Topology {
	tp := &topo.Topology{Name: "star24", Kind: topo.KindGeneric, Switches: []topo.Switch{{Ports: 24}}}
	for h := 0; h < 24; h++ {
		tp.Hosts = append(tp.Hosts, topo.Host{At: topo.PortRef{Switch: 0, Port: h}})
	}
	if err := tp.Finish(); err != nil {
		t.Fatal(err)
	}
	return tp
}

// starRun saturates the 24-port switch of arch with dest's traffic (every
// host has perHost 256-byte packets queued at time 0) and returns the
// switch efficiency (packets delivered per port per packet time) in a
// window after a warm-up. With RECN-IQ it checks the stage's bookkeeping
// at every event of the mechanism (SAQs within max_saqs per read port and
// in the read port of their first turn, free SAQs empty, Xoff heads
// hidden). Then it drains the switch: lossless (every packet delivered,
// credits conserved), in order, and no deadlock.
func starRun(t *testing.T, arch string, saqs int, dest func(src int, rng *rand.Rand) int) (float64, *recnIQArch) {
	t.Helper()
	const n, perHost, size = 24, 300, 256
	cfg := DefaultConfig()
	cfg.Switch, cfg.Allocator, cfg.OutputBuffer, cfg.InputBuffer = arch, "hrr", 0, 4096
	cfg.RECNIQ.MaxSAQs = saqs
	eng, f, ep := build(t, star24(t), cfg, route.DefaultConfig())
	var a *recnIQArch
	if r, ok := f.arch.(interface{ recnIQ() *recnIQArch }); ok {
		a = r.recnIQ()
		a.trace = func(ev string, _ int32, _, _ int) {
			if bad := a.check(); bad != nil {
				t.Fatalf("%s: %v after %s: %s", arch, eng.Now(), ev, strings.Join(bad, "; "))
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	seq := make([]uint64, n*n)
	for range perHost {
		for src := 0; src < n; src++ {
			dst := dest(src, rng)
			ep.send(src, dst, size, seq[src*n+dst])
			seq[src*n+dst]++
		}
	}
	ser := cfg.SerializationTime(size)
	warm, span := 40*ser, 200*ser
	eng.RunUntil(warm)
	before := len(ep.got)
	eng.RunUntil(warm + span)
	eff := float64(len(ep.got)-before) / n / float64(span/ser)
	for i := 0; i < 100 && len(ep.got) < n*perHost && f.Deadlock == nil; i++ {
		eng.RunUntil(eng.Now() + 1000*ser)
	}
	if f.Deadlock != nil {
		t.Fatalf("%s: %v", arch, f.Deadlock)
	}
	if len(ep.got) != n*perHost || ep.ooo != 0 {
		t.Errorf("%s: delivered %d of %d, %d out of order", arch, len(ep.got), n*perHost, ep.ooo)
	}
	if iv := f.CheckInvariants(); !iv.OK() {
		t.Errorf("%s: %v", arch, iv.Violations)
	}
	if a != nil {
		if bad := a.check(); bad != nil {
			t.Errorf("%s after the drain: %s", arch, strings.Join(bad, "; "))
		}
		if a.total != 0 || a.stats.MaxSAQsPerInput > 2*saqs {
			t.Errorf("%s: %d SAQs left after the drain; at most %d at one input (limit %d)", arch, a.total, a.stats.MaxSAQsPerInput, 2*saqs)
		}
	}
	return eff, a
}

// TestPCIQRECNIQRemovesHOLBlocking: paper 003 §2.9 and §2.9.1 on the
// 24-port switch at full load with 2 SAQs per read port. In the worst
// case of Fig. 2.19 (odd inputs send only to odd outputs, even to even)
// each of pciq-2's arbiters has N/2 candidates for N/2 outputs and
// internal HOL blocking holds it at CIOQ's level ("roughly 60%"); RECN-IQ
// sets the blocked heads aside and PCIQ-2+RECN-IQ reaches "90%". Under
// uniform traffic (Fig. 2.14) PCIQ-2's ~80% rises to the maximum.
//
// Tolerance: the thesis' figures are read from plots of a cycle-level
// simulator with unstated memory sizes; ours is packet-level with 4 KB
// input memories (16 packets) and every source's packets queued at time
// 0. We require what the thesis' claim rests on: plain pciq-2 at most
// 0.66 in the worst case and 0.83 under uniform traffic (HOL blocking
// present: 0.60 and 0.77 measured), PCIQ-2+RECN-IQ at least 0.78 and 0.86
// (0.82 and 0.92 measured, against the thesis' 0.90 and ~1), and a gain
// of at least 0.15 and 0.07 — margins of about 0.04 and half the gain,
// well above the spread of a seeded 200-packet-time window (~0.01).
//
// The hot spot of Fig. 2.16 is not here: on one switch the hot flows
// oversubscribe output 6 2.4 times, and as the switch's host-fed inputs
// send no Xoff the SAQ for output 6 fills each input memory and the host
// holds its other packets behind hot ones; the efficiency then falls back
// after the first ~80 packet times (docs/validation.md, paper003-switch).
func TestPCIQRECNIQRemovesHOLBlocking(t *testing.T) {
	oddEven := func(src int, rng *rand.Rand) int {
		d := rng.IntN(11)
		if d >= src/2 {
			d++
		}
		return 2*d + src%2
	}
	uniform := func(src int, rng *rand.Rand) int {
		d := rng.IntN(23)
		if d >= src {
			d++
		}
		return d
	}
	for _, c := range []struct {
		name               string
		dest               func(int, *rand.Rand) int
		baseMax, min, gain float64
	}{
		{"odd-even", oddEven, 0.66, 0.78, 0.15},
		{"uniform", uniform, 0.83, 0.86, 0.07},
	} {
		base, _ := starRun(t, "pciq-2", 2, c.dest)
		enh, a := starRun(t, "pciq-2+recn-iq", 2, c.dest)
		t.Logf("%s: pciq-2 %.3f, pciq-2+recn-iq %.3f (%+v)", c.name, base, enh, a.stats)
		if base > c.baseMax || enh < c.min || enh-base < c.gain {
			t.Errorf("%s: pciq-2 %.3f (want <= %.2f), pciq-2+recn-iq %.3f (want >= %.2f and %.2f above)", c.name, base, c.baseMax, enh, c.min, c.gain)
		}
		if a.stats.Detections == 0 || a.stats.Moves == 0 {
			t.Errorf("%s: RECN-IQ never set a packet aside (%+v)", c.name, a.stats)
		}
	}
}

// TestPCIQRECNIQSAQsPerReadPort: with 1 and 2 SAQs per read port, while
// three of every four hosts send 30% of their packets to output 4 or 5
// (one on each read port) and the rest uniformly, no read port ever holds more SAQs than
// max_saqs (checked at every event by starRun), every SAQ sits in the
// read port that reaches its first turn, an input holds at most K x
// max_saqs, and with one SAQ per read port detections are refused for
// want of a free one (exhaustion) while nothing is lost.
func TestPCIQRECNIQSAQsPerReadPort(t *testing.T) {
	mix := func(src int, rng *rand.Rand) int {
		if src%4 != 0 && rng.Float64() < 0.3 {
			return []int{4, 5}[src%2]
		}
		d := rng.IntN(23)
		if d >= src {
			d++
		}
		return d
	}
	for _, saqs := range []int{1, 2} {
		_, a := starRun(t, "pciq-2+recn-iq", saqs, mix)
		perPort := 0
		for ii := range a.in {
			perPort = max(perPort, a.in[ii].inUse)
		}
		t.Logf("max_saqs %d: %+v", saqs, a.stats)
		if a.stats.MaxSAQsPerInput < 2 {
			t.Errorf("max_saqs %d: at most %d SAQs at one input; both read ports should have been congested", saqs, a.stats.MaxSAQsPerInput)
		}
		if saqs == 1 && a.stats.ExhaustedInput == 0 {
			t.Errorf("max_saqs 1: no exhaustion (%+v)", a.stats)
		}
	}
}

// TestRECNIQOnDatapaths: the RECN-IQ stage builds on every datapath with
// the queues it says: cold queues first (one per lane and read port), then
// K x max_saqs SAQs.
func TestRECNIQOnDatapaths(t *testing.T) {
	for _, c := range []struct {
		arch        string
		cold, saqs  int
		readPorter  bool
		outputQueue bool
	}{
		{"recn-iq", 1, 3, false, false},
		{"cioq+recn-iq", 1, 3, false, true},
		{"pciq-2+recn-iq", 2, 6, true, false},
		{"pciq-4+recn-iq", 4, 12, true, false},
	} {
		cfg := DefaultConfig()
		cfg.Switch, cfg.RECNIQ.MaxSAQs = c.arch, 3
		if !c.outputQueue {
			cfg.OutputBuffer = 0
		}
		_, f, _ := build(t, star24(t), cfg, route.DefaultConfig())
		a := f.arch.(interface{ recnIQ() *recnIQArch }).recnIQ()
		a.setup()
		_, rp := f.arch.(readPorter)
		if a.saqBase != c.cold || a.saqs() != c.saqs || f.arch.queuesPerInput() != c.cold+c.saqs || len(a.in[0].saqs) != c.saqs || len(a.out[0].saqs) != c.saqs || rp != c.readPorter {
			t.Errorf("%s: %d cold queues, %d SAQs, %d queues, readPorter %v; want %d, %d, readPorter %v", c.arch, a.saqBase, a.saqs(), f.arch.queuesPerInput(), rp, c.cold, c.saqs, c.readPorter)
		}
	}
}
