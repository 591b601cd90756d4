package fabrictest

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// runLoad offers every host Bernoulli traffic of MaxPacket-byte packets
// to uniform random destinations at load (a fraction of the host link's
// rate: a packet per packet time with that probability) for dur,
// checking the invariants after every packet time. It stops early if the
// watchdog reports a deadlock.
func runLoad(t *testing.T, n *Net, cfg fabric.Config, load float64, dur des.Time, seed uint64) {
	t.Helper()
	hosts := n.Topo.NumHosts()
	rng := rand.New(rand.NewPCG(seed, 11))
	slot := cfg.SerializationTime(MaxPacket)
	for at := des.Time(0); at < dur; at += slot {
		for src := 0; src < hosts; src++ {
			if rng.Float64() >= load {
				continue
			}
			dst := rng.IntN(hosts - 1)
			if dst >= src {
				dst++
			}
			n.EP.Send(src, dst, MaxPacket)
		}
		n.Eng.RunUntil(at + slot)
		if err := n.Invariants(); err != nil {
			t.Fatalf("at %v: %v", at, err)
		}
		if n.F.Deadlock != nil {
			return
		}
	}
}

// TestNoDetectionBelowSaturation: deadlock detection (paper 001 §4, ref.
// [10]; fabric/deadlock.go) runs without recovery on every acyclic escape
// function the families use (up*/down* on the line and the irregular
// network, dimension order on the torus and the mesh, min on the MIN), in
// both routing modes, on the input- and the output-buffered switch and
// under wormhole switching, at
// a uniform load below each network's saturation (the sources keep up,
// checked below), and never fires. The loads are close to saturation:
// on irregular8 with input-queued switches and up*/down*, 0.45 gives no
// detection in 1 ms with three seeds, while 0.5 saturates it and the
// first false detections (about 22 per ms) appear. Under wormhole
// switching (lanes of 8 flits, 18-flit packets) false detections start
// far below saturation with deterministic routing: in 1 ms, one at load
// 0.15 on the line, the 3x3 torus, the MIN and the irregular network,
// three at 0.2 on the 2x3 mesh, none at 0.1; adaptive routing stays
// clean up to 0.35 everywhere. The wormhole rows therefore run at 0.1
// (docs/validation.md has the table).
// Past saturation a time-out rule does presume some blocked messages
// deadlocked on acyclic functions too (a header whose outputs have all
// been idle for 32 cycles behind full buffers); that is recorded in
// docs/validation.md, and TestDetectionIsPassive checks it changes
// nothing without recovery.
func TestNoDetectionBelowSaturation(t *testing.T) {
	loads := map[string]float64{"line4": 0.25, "torus3x3": 0.6, "mesh2x3": 0.5, "min16": 0.6, "irregular8": 0.45}
	for _, sw := range []string{"cioq", "iq", "wormhole"} {
		for _, tp := range Topologies() {
			for _, mode := range []route.Mode{route.Deterministic, route.Adaptive} {
				name := sw + "/" + tp.Name + "/" + string(mode)
				t.Run(name, func(t *testing.T) {
					top, err := tp.Build()
					if err != nil {
						t.Fatal(err)
					}
					fc := fabric.DefaultConfig()
					fc.Switch, fc.Deadlock.Detection = sw, true
					switch sw {
					case "iq":
						fc.OutputBuffer = 0
					case "wormhole": // 16-byte flits, lanes of 8 that cover the credit round trip
						fc.Switch, fc.OutputBuffer = "iq", 0
						fc.Switching, fc.FlitBytes, fc.LaneFlits = fabric.SwitchingWormhole, 16, 8
					}
					rc := route.DefaultConfig()
					rc.Mode = mode
					n, err := Build(name, top, fc, rc)
					if err != nil {
						t.Fatal(err)
					}
					load := loads[tp.Name]
					if sw == "wormhole" {
						load = 0.1
					}
					runLoad(t, n, fc, load, 300*des.Microsecond, 1)
					// Below saturation the sources keep up: at the end
					// fewer packets wait at the hosts than there are hosts.
					if q := n.EP.Queued(); q >= top.NumHosts() {
						t.Fatalf("load %.2f saturates %s: %d packets wait at %d hosts", load, tp.Name, q, top.NumHosts())
					}
					if err := n.Drain(20 * des.Millisecond); err != nil {
						t.Fatal(err)
					}
					if d := n.F.DeadlockStats().Detections; d != 0 {
						t.Errorf("deadlock detection fired %d times on the acyclic escape function %s below saturation", d, n.F.Router().EscapeName())
					}
				})
			}
		}
	}
}

// TestDetectionIsPassive: detection without recovery only counts. Past
// saturation on every family it may presume messages deadlocked (false
// detections of a time-out rule), but the run is the same, delivery for
// delivery, as without detection.
func TestDetectionIsPassive(t *testing.T) {
	var falseDetections uint64
	for _, tp := range Topologies() {
		var digest [2]uint64
		for i, on := range []bool{false, true} {
			top, err := tp.Build()
			if err != nil {
				t.Fatal(err)
			}
			fc := fabric.DefaultConfig()
			fc.Deadlock.Detection = on
			n, err := Build(tp.Name, top, fc, route.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			runLoad(t, n, fc, 1.0, 200*des.Microsecond, 3)
			if err := n.Drain(50 * des.Millisecond); err != nil {
				t.Fatal(err)
			}
			digest[i] = n.EP.Digest()
			falseDetections += n.F.DeadlockStats().Detections
		}
		if digest[0] != digest[1] {
			t.Errorf("%s: detection without recovery changed the deliveries", tp.Name)
		}
	}
	t.Logf("false detections past saturation on acyclic escape functions, all families: %d", falseDetections)
}

// tfarNet is a torus, one host per switch, under TFAR with two lanes
// per channel on input-queued switches: 6x6 with virtual cut-through
// lanes of one packet, or 8x8 with wormhole lanes of 2 flits of 16 bytes
// (paper 001's router with short lanes): configurations in which a load
// of 1.0 forms deadlocks quickly (6x6 under wormhole with 2 or 4-flit
// lanes, and 8x8 with 4-flit lanes, ran 200 us at load 1.0 without
// deadlocking, while recovery still presumed 100-850 messages
// deadlocked: false detections).
// saturateUntilDeadlock offers load 1.0 for 300 µs to a TFAR network
// without recovery and runs it until the watchdog reports the deadlock
// (at most 20 of its timeouts: a bound, not a figure).
func saturateUntilDeadlock(t *testing.T, n *Net, fc fabric.Config) {
	t.Helper()
	runLoad(t, n, fc, 1.0, 300*des.Microsecond, 5)
	for i := 0; i < 20 && n.F.Deadlock == nil; i++ {
		n.Eng.RunUntil(n.Eng.Now() + fc.DeadlockTimeout)
	}
	if n.F.Deadlock == nil {
		t.Fatalf("TFAR without recovery did not deadlock (%d of %d delivered)", n.EP.Delivered, n.EP.Sent())
	}
}

func tfarNet(t *testing.T, switching, recovery, check string, opts ...func(*fabric.Config)) (*Net, fabric.Config, error) {
	t.Helper()
	k := []int{6, 6}
	if switching == fabric.SwitchingWormhole {
		k = []int{8, 8}
	}
	top, err := topo.Torus(k, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	fc := fabric.DefaultConfig()
	fc.Switch, fc.OutputBuffer = "iq", 0
	fc.InputBuffer = 2 * 320 // one 282-byte packet (5 credit blocks) per lane
	if switching == fabric.SwitchingWormhole {
		fc.Switching, fc.FlitBytes, fc.LaneFlits = switching, 16, 2
	}
	fc.Deadlock.Recovery = recovery
	for _, o := range opts {
		o(&fc)
	}
	rc := route.DefaultConfig()
	rc.Mode, rc.Escape, rc.AdaptiveVLs, rc.Check = route.Adaptive, route.EscapeNone, 2, check
	n, err := Build("tfar-torus-"+switching, top, fc, rc)
	return n, fc, err
}

// TestTFARRecovery: TFAR on a torus at load 1.0 forms deadlocks, which
// detection finds (detections > 0) and software recovery resolves: every
// packet is delivered exactly once, to the right host, with packets and
// credits conserved at every step (absorbed packets counted until
// delivered). The same network without recovery deadlocks (the
// watchdog's report), and is refused unless the dependency check is off.
// Under virtual cut-through and under wormhole switching.
func TestTFARRecovery(t *testing.T) {
	for _, sw := range []string{fabric.SwitchingVCT, fabric.SwitchingWormhole} {
		t.Run(sw, func(t *testing.T) {
			n, fc, err := tfarNet(t, sw, fabric.RecoverySoftware, "auto")
			if err != nil {
				t.Fatal(err)
			}
			if note := n.F.Router().CheckNote; !strings.Contains(note, "cyclic") || !strings.Contains(note, "relies on deadlock detection and recovery") {
				t.Errorf("escape verdict %q", note)
			}
			runLoad(t, n, fc, 1.0, 300*des.Microsecond, 5)
			if n.F.Deadlock != nil {
				t.Fatalf("deadlocked under recovery: %v", n.F.Deadlock)
			}
			if err := n.Drain(50 * des.Millisecond); err != nil {
				t.Fatal(err)
			}
			st := n.F.DeadlockStats()
			if st.Detections == 0 || st.Recoveries == 0 {
				t.Fatalf("no deadlock detected (%+v): the test does not exercise recovery", st)
			}
			if st.Recoveries != st.Reinjections || st.Recoveries != st.Detections {
				t.Errorf("detections %d, absorbed %d, reinjected %d: want all equal after the drain", st.Detections, st.Recoveries, st.Reinjections)
			}
			t.Logf("%d packets delivered, %d detections, %d recovered", n.EP.Delivered, st.Detections, st.Recoveries)

			// Without recovery: refused, naming the keys ...
			if _, _, err := tfarNet(t, sw, fabric.RecoveryNone, "auto"); err == nil || !strings.Contains(err.Error(), "fabric.deadlock.recovery=software") || !strings.Contains(err.Error(), "routing.escape") {
				t.Fatalf("TFAR without recovery: %v", err)
			}
			// ... and with the check turned off, it deadlocks.
			n, fc, err = tfarNet(t, sw, fabric.RecoveryNone, "off")
			if err != nil {
				t.Fatal(err)
			}
			saturateUntilDeadlock(t, n, fc)
		})
	}
}

// TestDetectionTruth checks the ground truth that classifies detections
// (fabric/deadlock_truth.go) against networks whose answer is known:
// TFAR without recovery (the dependency check off) deadlocks, and the
// detections of the messages caught in it are true ones; dimension-order
// routing with dateline lanes cannot deadlock, and every detection on it
// is false.
func TestDetectionTruth(t *testing.T) {
	detect := func(fc *fabric.Config) { fc.Deadlock.Detection = true }
	n, fc, err := tfarNet(t, fabric.SwitchingWormhole, fabric.RecoveryNone, "off", detect)
	if err != nil {
		t.Fatal(err)
	}
	saturateUntilDeadlock(t, n, fc)
	st := n.F.DeadlockStats()
	t.Logf("TFAR, deadlocked: %d detections, %d false", st.Detections, st.FalseDetections)
	if !st.Classified || st.Detections <= st.FalseDetections {
		t.Errorf("TFAR deadlocked: %+v, want true detections", st)
	}
}

// TestFalseDetectionsAcyclic: deadlock detection without recovery on an
// 8x8 torus of wormhole switches (16-byte flits, lanes of 4, three lanes
// per channel) with the dateline escape (acyclic: the network cannot
// deadlock), uniform load 1.0 of 18-flit packets for 200 us, far past
// saturation. Every detection is false, and the ground truth says so;
// their number per delivered packet stays under a bound.
//
// The bound, 0.15 per delivered packet, is empirical and twice what the
// run gives (263 detections for 3,822 packets, 0.069). A rule that
// presumes deadlock from 32 cycles without a flit on the channels a head
// waits for cannot give zero here: past saturation a head blocks on lanes
// held by worms that still move, becomes the first to wait on them, and
// the worms ahead of it then stand in a jam for longer than 32 cycles (a
// 16-flit worm sharing its channel three ways takes 48 to pass). What the
// bound catches is a regression to the time-out behaviour the rule is
// meant to improve on. (The stuck-header bound of fabric/deadlock.go,
// stuckThresholds, no longer applies to acyclic functions; here it added
// 18 detections, on the 16-ary 2-cube of docs/validation.md 251 of 1,071.)
func TestFalseDetectionsAcyclic(t *testing.T) {
	top, err := topo.Torus([]int{8, 8}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	fc := fabric.DefaultConfig()
	fc.Switch, fc.OutputBuffer = "iq", 0
	fc.Switching, fc.FlitBytes, fc.LaneFlits = fabric.SwitchingWormhole, 16, 4
	fc.Deadlock.Detection = true
	rc := route.DefaultConfig()
	rc.Mode, rc.AdaptiveVLs = route.Adaptive, 1
	n, err := Build("dor-torus-wormhole", top, fc, rc)
	if err != nil {
		t.Fatal(err)
	}
	runLoad(t, n, fc, 1.0, 200*des.Microsecond, 7)
	if n.F.Deadlock != nil {
		t.Fatalf("an acyclic escape function deadlocked: %v", n.F.Deadlock)
	}
	st := n.F.DeadlockStats()
	del := n.EP.Delivered
	t.Logf("%d delivered, %d detections, %d false", del, st.Detections, st.FalseDetections)
	if st.FalseDetections != st.Detections {
		t.Errorf("ground truth: %d of %d detections true on an acyclic escape function", st.Detections-st.FalseDetections, st.Detections)
	}
	if del == 0 || float64(st.Detections) > 0.15*float64(del) {
		t.Errorf("%d false detections for %d delivered packets: want at most 0.15 per packet", st.Detections, del)
	}
}

// TestRecoveredMessagesGated: a message that software recovery absorbed
// goes back into the network only when the node's injection control
// admits it (fabric.RecoveryGate; paper 001 §3: Trans-t limits the node's
// injection channels, which reinjection uses). TFAR on the 8x8 wormhole
// torus at load 1.0 with a gate that holds every absorbed message for the
// first 150 us: messages are absorbed, none is reinjected, the gate was
// asked; opened, every absorbed message is reinjected and every packet
// delivered, with packets and credits conserved throughout.
func TestRecoveredMessagesGated(t *testing.T) {
	n, fc, err := tfarNet(t, fabric.SwitchingWormhole, fabric.RecoverySoftware, "auto")
	if err != nil {
		t.Fatal(err)
	}
	open := false
	asked := 0
	n.EP.RecoveryAdmit = func(h, q int, p *fabric.Packet) bool {
		asked++
		return open
	}
	runLoad(t, n, fc, 1.0, 150*des.Microsecond, 5)
	st := n.F.DeadlockStats()
	if st.Recoveries == 0 {
		t.Fatalf("no message absorbed (%+v): the test does not exercise reinjection", st)
	}
	if st.Reinjections != 0 || n.EP.Reinjected != 0 {
		t.Fatalf("%d reinjected (endpoint saw %d) while the gate was closed", st.Reinjections, n.EP.Reinjected)
	}
	if asked == 0 || st.ReinjectionsHeld == 0 {
		t.Fatalf("the gate was asked %d times, held %d: want absorbed messages put to it", asked, st.ReinjectionsHeld)
	}
	if n.F.Absorbed() != int(st.Recoveries) {
		t.Fatalf("%d absorbed waiting, %d recovered", n.F.Absorbed(), st.Recoveries)
	}
	open = true
	for h := range n.Topo.NumHosts() {
		n.F.Kick(h)
	}
	if err := n.Drain(50 * des.Millisecond); err != nil {
		t.Fatal(err)
	}
	st = n.F.DeadlockStats()
	if st.Reinjections != st.Recoveries || n.EP.Reinjected != st.Reinjections || n.F.Absorbed() != 0 {
		t.Errorf("after opening: %d recovered, %d reinjected (endpoint %d), %d still absorbed", st.Recoveries, st.Reinjections, n.EP.Reinjected, n.F.Absorbed())
	}
	t.Logf("%d absorbed while closed, held %d times; %d delivered", st.Recoveries, st.ReinjectionsHeld, n.EP.Delivered)
}
