package fabric

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/internal/units"
)

// recnIQStageArchs are the architectures built on RECN-IQ's input stage,
// with the settings each needs on the example network (recnIQExample).
var recnIQStageArchs = []struct {
	arch, allocator string
	outputBuffer    int
}{
	{"recn-iq", "rr", 0},
	{"cioq+recn-iq", "rr", 4096},
	{"pciq-2+recn-iq", "hrr", 0},
	{"pciq-4+recn-iq", "hrr", 0},
}

// recnIQStageConfig is recnIQConfig on architecture arch.
func recnIQStageConfig(arch, allocator string, outputBuffer int) Config {
	cfg := recnIQConfig()
	cfg.Switch, cfg.Allocator, cfg.OutputBuffer = arch, allocator, units.Bytes(outputBuffer)
	return cfg
}

// TestRECNIQNICSideOnDatapaths: the NIC SAQs, the timed post-processing
// and per-cycle detection belong to RECN-IQ's input stage, so every
// datapath it sits on has them (one mechanism: the stage, not a copy per
// architecture). On each, the example traffic of TestRECNIQNICXoff (C's
// packets for H congest switch 2's output 5; C's packets for O do not):
//   - the bookkeeping holds at every event (switch SAQs per read port,
//     NIC SAQs and their memory);
//   - switch 2's input fed by C sends Xoff to C's NIC, which sets C's
//     packets for H aside and starts none of them on the link while its
//     SAQ for [5] is in Xoff, and keeps injecting its packets for O;
//   - every Xoff a NIC received is matched by an Xon, every SAQ is free at
//     the end, and everything is delivered in order.
//
// Then, at zero load, a timed post-processing unit adds exactly its 10 ns
// per switch to the latency of instant post-processing on the same
// datapath (§4.2.3); and per-cycle detection allocates a SAQ for the cold
// queue's head as soon as a SAQ of its read port is freed (§4.1.4),
// where detection at events does not.
func TestRECNIQNICSideOnDatapaths(t *testing.T) {
	const n = 48
	for _, c := range recnIQStageArchs {
		t.Run(c.arch, func(t *testing.T) {
			cfg := recnIQStageConfig(c.arch, c.allocator, c.outputBuffer)
			eng, f, ep, a := recnIQExample(t, cfg)
			hot := turn(5, 0)
			var xoffAt, xonAt []des.Time
			a.trace = func(ev string, port int32, k int, _ int) {
				if bad := a.check(); bad != nil {
					t.Fatalf("%v after %s: %s", eng.Now(), ev, strings.Join(bad, "; "))
				}
				switch {
				case ev == "xoff-nic" && port == hostC && a.nics[hostC].saqs[k].path == hot:
					xoffAt = append(xoffAt, eng.Now())
				case ev == "xon-nic" && port == hostC && len(xonAt) < len(xoffAt):
					xonAt = append(xonAt, eng.Now())
				}
			}
			nicTraffic(eng, f, ep, n)
			eng.RunUntil(eng.Now() + 400*des.Microsecond)
			if len(xonAt) < len(xoffAt) {
				xonAt = append(xonAt, eng.Now())
			}
			hotDuring, oDuring := 0, 0
			for _, p := range ep.got {
				if p.Src != hostC {
					continue
				}
				for i := range xoffAt {
					if p.Inject > xoffAt[i] && p.Inject < xonAt[i] {
						if p.Dst == hostH {
							hotDuring++
						} else {
							oDuring++
						}
					}
				}
			}
			st := a.stats
			if len(xoffAt) == 0 || hotDuring != 0 || oDuring == 0 || st.NICSetAside == 0 {
				t.Errorf("C's NIC SAQ [5] in Xoff %d times; during them %d packets for H and %d for O started, %d set aside; want Xoff, none for H, some for O", len(xoffAt), hotDuring, oDuring, st.NICSetAside)
			}
			if st.NICXoff == 0 || st.NICXoff != st.NICXon || st.NICAllocations != st.NICDeallocations {
				t.Errorf("NICs: %d Xoff, %d Xon, %d SAQs allocated, %d freed", st.NICXoff, st.NICXon, st.NICAllocations, st.NICDeallocations)
			}
			if len(ep.got) != 3*n || ep.ooo != 0 || a.total != 0 || f.NICSAQPackets(hostC) != 0 {
				t.Errorf("delivered %d of %d (%d out of order); %d switch SAQs and %d packets in C's NIC SAQs left", len(ep.got), 3*n, ep.ooo, a.total, f.NICSAQPackets(hostC))
			}

			// Post-processing: timed against instant, one packet A -> O
			// across both switches.
			var lat [2]des.Time
			for i, mode := range []string{PPTimed, PPInstant} {
				cfg := recnIQStageConfig(c.arch, c.allocator, c.outputBuffer)
				cfg.RECNIQ.PostProcessing = mode
				eng, _, ep, _ := recnIQExample(t, cfg)
				ep.send(hostA, hostO, 64, 0)
				eng.RunUntil(10 * des.Microsecond)
				if len(ep.got) != 1 {
					t.Fatalf("%s: delivered %d", mode, len(ep.got))
				}
				lat[i] = ep.at[0] - ep.got[0].Gen
			}
			if d := lat[0] - lat[1]; d != 2*10*des.Nanosecond {
				t.Errorf("post-processing: timed %v, instant %v: %v more, want 2 x 10ns", lat[0], lat[1], d)
			}

			// Per-cycle detection: input 0 of switch 2 (from switch 1)
			// holds the only SAQ of the read port of output 5 (H), for
			// [5 6] (which packets for H, [5], do not match); its cold
			// queue (on pciq-K not the first: output 5 is on read port 1)
			// reaches 4 packets for H and detection finds no SAQ free.
			// Freeing [5 6] with the cold queue still at 4 allocates [5]
			// at once per cycle, and not at all at events.
			for _, mode := range []string{DetectPerCycle, DetectAtEvents} {
				cfg := recnIQStageConfig(c.arch, c.allocator, c.outputBuffer)
				cfg.RECNIQ.MaxSAQs, cfg.RECNIQ.Detection = 1, mode
				eng, f, _, a := recnIQExample(t, cfg)
				a.setup()
				ii := f.sw[1].in[0]
				other := a.allocate(ii, 0, turn(5, 0)+turn(6, 0))
				for i := range 4 {
					arriveByHand(f, a, ii, i)
				}
				if other < 0 || a.stats.ExhaustedInput != 1 || a.stats.Detections != 0 {
					t.Fatalf("%s: SAQ %d, exhausted %d, detections %d before the SAQ is freed", mode, other, a.stats.ExhaustedInput, a.stats.Detections)
				}
				a.maybeFree(ii, other)
				eng.RunUntil(eng.Now())
				want := uint64(0)
				if mode == DetectPerCycle {
					want = 1
				}
				if a.stats.Detections != want || (want == 1) != (findExact(a.in[ii].saqs, 0, turn(5, 0)) >= 0) {
					t.Errorf("%s: %d detections after the SAQ was freed, want %d (SAQ [5] allocated only then)", mode, a.stats.Detections, want)
				}
			}
		})
	}
}
