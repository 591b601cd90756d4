package synth

import (
	"strings"
	"testing"

	"github.com/fabemu/fabemu/model"
)

func resolveSim(t *testing.T, preset string, sets ...string) (model.SimConfig, error) {
	t.Helper()
	c, _, err := model.Resolve[model.SimConfig](model.Layers{Preset: preset, Sets: model.Sets("test", sets)}, model.LookupPreset)
	return c, err
}

// runChecked runs preset with sets and fails the test unless it ran and
// every invariant held.
func runChecked(t *testing.T, preset string, sets ...string) *Summary {
	t.Helper()
	c, err := resolveSim(t, preset, sets...)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := RunSim(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Invariants.OK {
		t.Fatalf("%s %v: invariants %+v", preset, sets, sum.Invariants)
	}
	return sum
}

// TestTFARRunWithRecovery: a whole run of TFAR (routing.escape none) with
// software deadlock recovery on an 8x8 torus past saturation, with one
// packet of buffer per lane so that deadlocks form, on paper 001's four
// physical injection channels gated by Trans-t: the summary counts the
// detections and recoveries, the escape check says the function is
// cyclic and relies on recovery, and every invariant holds. Without
// recovery the run is refused, naming the keys.
func TestTFARRunWithRecovery(t *testing.T) {
	sets := []string{"routing.mode=adaptive", "routing.escape=none", "routing.adaptive_vls=2",
		"fabric.switch=iq", "fabric.output_buffer=0", "fabric.input_buffer=640",
		"traffic.load=1.0", "run.warmup=0us", "run.duration=300us",
		"nic.injection_queues.count=4", "nic.injection_queues.mode=physical", "nic.injection_control.policy=trans-t"}
	if _, err := resolveSim(t, "torus8x8-dor", sets...); err == nil {
		c, _ := resolveSim(t, "torus8x8-dor", sets...)
		if _, err := RunSim(c, nil); err == nil || !strings.Contains(err.Error(), "fabric.deadlock.recovery=software") {
			t.Fatalf("TFAR without recovery: %v, want a refusal naming fabric.deadlock.recovery", err)
		}
	} else if !strings.Contains(err.Error(), "fabric.deadlock.recovery") {
		t.Fatalf("TFAR without recovery: %v", err)
	}
	sum := runChecked(t, "torus8x8-dor", append(sets, "fabric.deadlock.recovery=software")...)
	d := sum.Packets.Deadlock
	if d == nil || d.Detections == 0 || d.Recovered == 0 || d.Reinjected > d.Recovered || d.Recovered > d.Detections {
		t.Fatalf("deadlock counts %+v: want detections, recoveries and reinjections counted", d)
	}
	if !strings.Contains(sum.Routing.EscapeCheck, "cyclic") || !strings.Contains(sum.Routing.EscapeCheck, "relies on deadlock detection and recovery") {
		t.Errorf("escape check %q", sum.Routing.EscapeCheck)
	}
	t.Logf("accepted %.3f, %d detections, %d recovered, %d reinjected, threshold %g ns", sum.AcceptedLoad, d.Detections, d.Recovered, d.Reinjected, d.ThresholdNs)
}

// TestRecoveredMessagesTakeTransTGate: on paper 001's router (16-ary
// 2-cube, TFAR, software recovery, four physical injection channels) past
// saturation, Trans-t's gate is asked about the messages recovery absorbed
// before they go back into the network, and holds some of them (paper
// 001 §3: the gate limits the node's injection channels, which
// reinjection takes); No-Lim has no gate and holds none. Every invariant
// holds in both, and no more is reinjected than was absorbed.
func TestRecoveredMessagesTakeTransTGate(t *testing.T) {
	for _, gate := range []string{"trans-t", "no-lim"} {
		sum := runChecked(t, "paper001-16ary2cube", "traffic.load=1.0", "run.warmup=10us", "run.duration=30us",
			"nic.injection_control.policy="+gate)
		d := sum.Packets.Deadlock
		if d == nil || d.Recovered == 0 || d.Reinjected > d.Recovered {
			t.Fatalf("%s: deadlock counts %+v: want messages absorbed", gate, d)
		}
		t.Logf("%s: %d detections, %d recovered, %d reinjected, held %d times", gate, d.Detections, d.Recovered, d.Reinjected, d.ReinjectionsHeld)
		if held := d.ReinjectionsHeld > 0; held != (gate == "trans-t") {
			t.Errorf("%s: absorbed messages held %d times by the gate", gate, d.ReinjectionsHeld)
		}
	}
}
