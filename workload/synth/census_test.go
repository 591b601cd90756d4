package synth

import (
	"fmt"
	"sort"
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/model"
)

// TestEventCensus counts the events of a saturated torus8x8-dor run
// (uniform, offered load 1.0, 1 ms, no warm-up) by handler and kind,
// stepping the engine (des.Engine.Peek), and logs them per delivered
// packet: the census docs/performance.md ("Fewer events per hop") quotes,
// for the preset's cioq switches and for iq. Event counts are
// deterministic, so it also holds the line: more events per delivered
// packet than the bound means a change brought back events the model had
// done without (each bound is today's figure plus a little; before iq
// ended a packet's link and input transfer in one event, iq's was 23.3).
func TestEventCensus(t *testing.T) {
	if testing.Short() {
		t.Skip("1 ms saturated runs")
	}
	for _, c := range []struct {
		arch  string
		bound float64
	}{{"cioq", 16.2}, {"iq", 18.4}} {
		t.Run(c.arch, func(t *testing.T) { eventCensus(t, c.arch, c.bound) })
	}
}

func eventCensus(t *testing.T, arch string, bound float64) {
	cfg, err := model.LookupPreset("torus8x8-dor")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Traffic.Load = 1.0
	cfg.Run.Warmup = 0
	cfg.Fabric.Switch = arch
	if arch == "iq" {
		cfg.Fabric.OutputBuffer = 0 // no output buffers
	}
	end := des.Millisecond
	s, syn := newBenchSession(t, cfg, end)
	syn.start()
	counts := map[string]uint64{}
	var total uint64
	for {
		h, op, ok := s.Eng.Peek()
		if !ok || s.Eng.NextAt() > end {
			break
		}
		kind := fmt.Sprintf("%T", h)
		if _, isFabric := h.(*fabric.Fabric); isFabric {
			kind = "fabric " + fabric.EventKind(op)
		}
		counts[kind]++
		total++
		s.Eng.Step()
	}
	delivered := s.Fabric.Stats.Delivered
	if delivered == 0 || total != s.Eng.Fired() {
		t.Fatalf("%d delivered packets, %d events counted of %d fired", delivered, total, s.Eng.Fired())
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return counts[kinds[i]] > counts[kinds[j]] })
	for _, k := range kinds {
		t.Logf("%-22s %9d  %6.3f per delivered packet", k, counts[k], float64(counts[k])/float64(delivered))
	}
	perPacket := float64(total) / float64(delivered)
	t.Logf("%-22s %9d  %6.3f per delivered packet (%d delivered)", "total", total, perPacket, delivered)
	if perPacket > bound {
		t.Errorf("%.3f events per delivered packet, above %.1f", perPacket, bound)
	}
}
