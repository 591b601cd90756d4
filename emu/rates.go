package emu

import (
	"sync"
	"time"

	"github.com/fabemu/fabemu/fabric/des"
)

// Current rates. The status reports, besides the counters since the
// start, the rates over the last rate window: the status keeps a sample
// of the counters at most every rateEvery and rates are the change since
// the sample before it, so whoever asks (fabemu stat --watch, a Prometheus
// scrape) sees the last one to two seconds rather than the average since
// the start, and several askers do not disturb each other's view.

const rateEvery = time.Second

// Rates are the traffic over the window that ended when the status was
// taken.
type Rates struct {
	// WindowSeconds is the wall time the rates are over (0 until the
	// daemon has run rateEvery).
	WindowSeconds float64 `json:"window_seconds"`
	// FabricGbps is the payload the fabric delivered over the window,
	// per simulated second (Gb/s).
	FabricGbps float64 `json:"fabric_gbps"`
	// Hosts are the TAP hosts' rates, in the order of Status.Hosts.
	Hosts []HostRates `json:"hosts"`
}

// HostRates is one TAP host's traffic per wall second over the window.
type HostRates struct {
	TAP              string  `json:"tap"`
	FramesInPerSec   float64 `json:"frames_in_per_sec"`
	FramesOutPerSec  float64 `json:"frames_out_per_sec"`
	GbpsIn           float64 `json:"gbps_in"`
	GbpsOut          float64 `json:"gbps_out"`
	RefusedInPerSec  float64 `json:"refused_in_per_sec"`
	RefusedOutPerSec float64 `json:"refused_out_per_sec"`
}

// rateSample is the counters at one instant.
type rateSample struct {
	at      time.Time
	sim     des.Time
	payload int64
	hosts   []hostSample
}

type hostSample struct {
	framesIn, framesOut, bytesIn, bytesOut, refusedIn, refusedOut uint64
}

// rateState is the two latest samples.
type rateState struct {
	mu        sync.Mutex
	prev, cur *rateSample
}

// sampleRates takes a sample from st (its counters as of now, kernel
// drops included) when the current one is rateEvery old, and returns the
// rates from the previous sample to now. Any goroutine.
func (e *Emulator) sampleRates(st *Status, now time.Time) Rates {
	s := &rateSample{at: now, sim: des.Time(st.Fabric.SimSeconds * float64(des.Second)), payload: st.Fabric.DeliveredBytes}
	for _, h := range st.Hosts {
		s.hosts = append(s.hosts, hostSample{framesIn: h.FramesIn, framesOut: h.FramesOut, bytesIn: h.BytesIn, bytesOut: h.BytesOut,
			refusedIn: sum(h.InRefused), refusedOut: sum(h.OutRefused)})
	}
	r := &e.rates
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		r.cur = &rateSample{at: e.start}
	}
	if now.Sub(r.cur.at) >= rateEvery {
		r.prev, r.cur = r.cur, s
	}
	var out Rates
	base := r.prev
	if base == nil {
		return out
	}
	dt := now.Sub(base.at).Seconds()
	if dt <= 0 {
		return out
	}
	out.WindowSeconds = dt
	if ds := (s.sim - base.sim).Seconds(); ds > 0 {
		out.FabricGbps = float64(s.payload-base.payload) * 8 / ds / 1e9
	}
	for i, h := range s.hosts {
		var b hostSample
		if i < len(base.hosts) {
			b = base.hosts[i]
		}
		out.Hosts = append(out.Hosts, HostRates{TAP: st.Hosts[i].TAP,
			FramesInPerSec: float64(h.framesIn-b.framesIn) / dt, FramesOutPerSec: float64(h.framesOut-b.framesOut) / dt,
			GbpsIn: float64(h.bytesIn-b.bytesIn) * 8 / dt / 1e9, GbpsOut: float64(h.bytesOut-b.bytesOut) * 8 / dt / 1e9,
			RefusedInPerSec: float64(h.refusedIn-b.refusedIn) / dt, RefusedOutPerSec: float64(h.refusedOut-b.refusedOut) / dt})
	}
	return out
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}
