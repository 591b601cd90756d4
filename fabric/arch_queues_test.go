package fabric

import (
	"testing"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
	"github.com/fabemu/fabemu/fabric/topo"
)

// TestQueueState: the queue schemes of paper 000 report their queues on
// the 64-host MIN (8-port switches, one lane); cioq does not.
func TestQueueState(t *testing.T) {
	tc := topo.DefaultConfig(topo.KindMIN)
	tc.Hosts, tc.MINRadix, tc.Stages = 64, 8, 0
	tp, err := topo.Build(tc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := route.New(tp, route.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"cioq": 0, "1q": 1, "4q": 4, "voqsw": 8, "voqnet": 64}
	for arch, perInput := range want {
		c := DefaultConfig()
		c.Switch = arch
		f, err := New(des.New(), c, tp, r, 256, nil)
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		qs, ok := f.QueueState()
		if ok != (perInput > 0) {
			t.Fatalf("%s: reported %v", arch, ok)
		}
		if !ok {
			continue
		}
		if qs.QueuesPerInput != perInput || qs.QueuesPerSwitch != 8*perInput || qs.StateBytesPerSwitch != int64(8*perInput*qs.BytesPerQueue) {
			t.Errorf("%s: %+v", arch, qs)
		}
		// 320 cabled inputs: 8 at each of the first two stages' 32
		// switches, 4 (down) at each of the last stage's 16.
		if qs.StateBytesTotal != int64(320*perInput*qs.BytesPerQueue) {
			t.Errorf("%s: total %d, want 320 inputs x %d queues x %d bytes", arch, qs.StateBytesTotal, perInput, qs.BytesPerQueue)
		}
	}
}
