package fabric

import (
	"strings"
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

// newMIN64 builds the 64-host MIN (one lane) with switch architecture arch.
func newMIN64(t *testing.T, arch string) *Fabric {
	t.Helper()
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
	c := DefaultConfig()
	c.Switch = arch
	f, err := New(des.New(), c, tp, r, 256, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSchemeEnqueue: where each scheme queues an arriving packet (paper
// 000 §4.3): VOQsw by the output the route takes at this switch, VOQnet
// by destination host, 4Q in the least occupied queue unless the
// destination already waits in one.
func TestSchemeEnqueue(t *testing.T) {
	f := newMIN64(t, "voqsw")
	ip := &f.in[f.sw[0].in[0]] // host 0's input at leaf switch 0
	for _, dst := range []int32{1, 2, 17, 40, 63} {
		p := &Packet{Dst: dst}
		want := f.router.Candidates(0, 0, 0, int(dst), nil)[0].Port
		if got := f.arch.enqueue(ip, p); got != int(want) {
			t.Errorf("voqsw: packet for host %d queued in %d, want its output %d", dst, got, want)
		}
	}
	f = newMIN64(t, "voqnet")
	ip = &f.in[f.sw[0].in[0]]
	for _, dst := range []int32{1, 33, 63} {
		if got := f.arch.enqueue(ip, &Packet{Dst: dst}); got != int(dst) {
			t.Errorf("voqnet: packet for host %d queued in %d", dst, got)
		}
	}
	// voqnet (partitioned memory, its default) with keyed injection
	// queues: host 0's injection port picks the destination's queue,
	// takes its credits, and the input keeps the queue picked
	f = newMIN64(t, "voqnet")
	f.KeyInjectionQueues()
	ip = &f.in[f.sw[0].in[0]]
	for _, dst := range []int32{1, 33, 63} {
		p := &Packet{Dst: dst, Size: 64, blocks: 1}
		if k := f.InjectionQueue(0, p, nil); k != int(dst) {
			t.Errorf("voqnet: InjectionQueue for host %d is %d", dst, k)
		}
		f.hostq.hostSend(f.hostOut[0], p, 0)
		if got := f.arch.enqueue(ip, p); got != int(dst) {
			t.Errorf("voqnet keyed: packet for host %d queued in %d", dst, got)
		}
	}
	f = newMIN64(t, "4q")
	ip = &f.in[f.sw[0].in[0]]
	put := func(dst int32) int {
		p := &Packet{Dst: dst}
		q := f.arch.enqueue(ip, p)
		ip.queues[q].push(p)
		return q
	}
	// Four destinations fill the four queues in turn; a fifth goes to
	// the least occupied (queue 0 after a second packet joins 1, 2, 3);
	// a repeated destination stays with its queue.
	for i, dst := range []int32{5, 6, 7, 8} {
		if q := put(dst); q != i {
			t.Fatalf("4q: destination %d in queue %d, want %d", dst, q, i)
		}
	}
	for _, dst := range []int32{6, 7, 8} {
		put(dst)
	}
	if q := put(9); q != 0 {
		t.Errorf("4q: new destination in queue %d, want the least occupied, 0", q)
	}
	if q := put(8); q != 3 {
		t.Errorf("4q: destination 8 moved to queue %d while its packets wait in 3", q)
	}
}

// TestFourQOccupancy: with fabric.four_q_choice=occupancy 4q takes the
// least occupied queue for every packet, the paper's rule alone (§4.3),
// even while the destination's packets wait in another; a bad value is
// refused.
func TestFourQOccupancy(t *testing.T) {
	c := DefaultConfig()
	c.Switch, c.FourQChoice = "4q", "lowest"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `fabric.four_q_choice "lowest"`) {
		t.Fatalf("bad choice: %v", err)
	}
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
	c.FourQChoice = "occupancy"
	f, err := New(des.New(), c, tp, r, 256, nil)
	if err != nil {
		t.Fatal(err)
	}
	ip := &f.in[f.sw[0].in[0]]
	for i := range 8 { // one destination: queues 0, 1, 2, 3, 0, 1, ...
		p := &Packet{Dst: 5}
		q := f.arch.enqueue(ip, p)
		ip.queues[q].push(p)
		if q != i%4 {
			t.Fatalf("packet %d for one destination in queue %d, want the least occupied, %d", i, q, i%4)
		}
	}
}

// TestInjectionQueues: the queues a NIC's injection queues follow are
// the first switch's input queues per lane: one for the one-FIFO
// architectures and for those that run the injection links themselves
// (recn: its NIC SAQs), 4 for 4q, one per switch port for voqsw, one per
// host for voqnet; and the queue InjectionQueue names for a host's packet
// is the one the switch would put it in (voqsw: the output its route
// takes at the first switch; voqnet: its destination).
func TestInjectionQueues(t *testing.T) {
	for arch, want := range map[string]int{"cioq": 1, "iq": 1, "1q": 1, "recn": 1, "4q": 4, "voqsw": 8, "voqnet": 64} {
		if got := newMIN64(t, arch).InjectionQueues(); got != want {
			t.Errorf("%s: %d injection queues, want %d", arch, got, want)
		}
	}
	f := newMIN64(t, "voqsw")
	for _, dst := range []int32{1, 2, 17, 40, 63} {
		want := f.router.Candidates(0, 0, 0, int(dst), nil)[0].Port
		if got := f.InjectionQueue(0, &Packet{Dst: dst, Size: 64}, nil); got != int(want) {
			t.Errorf("voqsw: host 0's packet for host %d keyed %d, want its output %d", dst, got, want)
		}
	}
	f = newMIN64(t, "voqnet")
	if got := f.InjectionQueue(0, &Packet{Dst: 37, Size: 64}, nil); got != 37 {
		t.Errorf("voqnet: host 0's packet for host 37 keyed %d", got)
	}
	// 4q: the least loaded queue counting the NIC's packets, the lowest
	// index on a tie
	f = newMIN64(t, "4q")
	load := []int{2, 1, 0, 0}
	if got := f.InjectionQueue(0, &Packet{Dst: 37, Size: 64}, func(k int) int { return load[k] }); got != 2 {
		t.Errorf("4q: keyed %d with NIC loads %v, want 2", got, load)
	}
}
