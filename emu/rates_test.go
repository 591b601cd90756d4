package emu

import (
	"math/rand/v2"
	"testing"
	"time"
)

// The status's rates are over the last window, not since the start: while
// frames flow they are positive; once the traffic stops the next windows
// show zero although the counters since the start do not.
func TestCurrentRates(t *testing.T) {
	r := newRig(t, "tap-square-10g", ports(2), nil)
	rng := rand.New(rand.NewPCG(21, 22))
	stop := time.Now().Add(1500 * time.Millisecond)
	n := 0
	for time.Now().Before(stop) {
		r.inject(t, 0, mkFrame(mac(1), mac(0), etherTest, uint32(n), 1000, rng))
		n++
		time.Sleep(time.Millisecond)
	}
	st := r.status(t)
	busy := st.Rates
	if busy.WindowSeconds < 1 || len(busy.Hosts) != 2 || busy.Hosts[0].FramesInPerSec <= 0 || busy.Hosts[1].GbpsOut <= 0 || busy.FabricGbps <= 0 {
		t.Fatalf("rates while busy: %+v", busy)
	}
	time.Sleep(2100 * time.Millisecond) // two windows without traffic
	_ = r.status(t)
	st = r.status(t)
	idle := st.Rates
	if st.Hosts[0].FramesIn == 0 || idle.Hosts[0].FramesInPerSec != 0 || idle.Hosts[1].FramesOutPerSec != 0 || idle.WindowSeconds > 3 {
		t.Fatalf("rates when idle: %+v (frames in since the start %d)", idle, st.Hosts[0].FramesIn)
	}
	t.Logf("busy: %.0f frames/s in, %.3f Gb/s out over %.2f s; idle: %+v", busy.Hosts[0].FramesInPerSec, busy.Hosts[1].GbpsOut, busy.WindowSeconds, idle.Hosts[0])
}
