package fabric

import (
	"fmt"
	"strings"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/route"
)

// DeadlockReport describes a fabric that stopped making progress with
// packets inside: which buffers hold blocked packets and what each waits
// for.
type DeadlockReport struct {
	At       des.Time
	InFabric uint64
	Blocked  []string
}

func (d *DeadlockReport) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deadlock: no packet moved for the watchdog interval before %v with %d packets in the fabric; blocked heads:", d.At, d.InFabric)
	for i, s := range d.Blocked {
		if i == 20 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(d.Blocked)-20)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(s)
	}
	return b.String()
}

// InFabric returns the packets injected and not yet delivered.
func (f *Fabric) InFabric() uint64 { return f.Stats.Injected - f.Stats.Delivered }

// watchdog fires every DeadlockTimeout. If no packet moved since the last
// one while packets are in the fabric, the run is stopped with a report
// rather than left to hang.
func (f *Fabric) watchdog() {
	// A fabric waiting for a host to take its packets (reception held)
	// is not deadlocked: the host resumes when its consumer drains.
	if f.progress == f.lastProgress && f.InFabric() > 0 && f.rxHeld == 0 {
		f.Deadlock = f.deadlockReport()
		f.eng.Stop()
		return
	}
	f.lastProgress = f.progress
	f.eng.After(f.cfg.DeadlockTimeout, f, opWatchdog, 0, nil)
}

func (f *Fabric) deadlockReport() *DeadlockReport {
	r := &DeadlockReport{At: f.eng.Now(), InFabric: f.InFabric()}
	if f.wh != nil {
		r.Blocked = f.wh.blocked()
		return r
	}
	var cands []route.Candidate
	for s := range f.sw {
		sw := &f.sw[s]
		for pi, ii := range sw.in {
			if ii < 0 {
				continue
			}
			for qi := range f.in[ii].queues {
				p := f.in[ii].queues[qi].head
				if p == nil {
					continue
				}
				cands = f.router.Candidates(s, sw.routePort(pi), int(p.inVL), int(p.Dst), cands[:0])
				var waits []string
				for _, c := range cands {
					waits = append(waits, f.arch.waitsFor(&f.out[sw.out[c.Port]], int(c.VL), f.blocks(p.Size)))
				}
				r.Blocked = append(r.Blocked, fmt.Sprintf("s%d in-port %d vl%d: packet %d (host %d -> host %d, %d bytes) waits for %s",
					s, pi, p.inVL, p.ID, p.Src, p.Dst, p.Size, strings.Join(waits, " or ")))
			}
		}
	}
	return r
}

// Invariants reports the fabric's conservation laws at this instant.
type Invariants struct {
	CreditsNonNegative bool `json:"credits_non_negative"`
	CreditsConserved   bool `json:"credits_conserved"`
	BuffersWithinCap   bool `json:"buffers_within_capacity"`
	// RecoveryConserved: under deadlock recovery every absorbed packet is
	// reinjected or waiting at its node to be, and the packets stored in
	// switches plus those waiting do not exceed the packets in the fabric.
	RecoveryConserved bool `json:"recovery_conserved"`
	// Violations names what failed, for test messages; empty when all hold.
	Violations []string `json:"violations,omitempty"`
}

// OK reports whether every invariant holds.
func (iv Invariants) OK() bool {
	return iv.CreditsNonNegative && iv.CreditsConserved && iv.BuffersWithinCap && iv.RecoveryConserved
}

// CheckInvariants verifies, for every channel and lane, that the sender's
// credits plus the blocks reserved or stored downstream plus the blocks
// freed but not yet returned (waiting or travelling in credit packets)
// equal the lane's capacity; that no credit count is negative; and that
// no buffer holds more than its capacity. With partitioned VOQ memory the
// same holds for every queue and its share (voqPartArch.checkQueues).
func (f *Fabric) CheckInvariants() Invariants {
	iv := Invariants{CreditsNonNegative: true, CreditsConserved: true, BuffersWithinCap: true, RecoveryConserved: true}
	bad := func(flag *bool, format string, a ...any) {
		*flag = false
		if len(iv.Violations) < 20 {
			iv.Violations = append(iv.Violations, fmt.Sprintf(format, a...))
		}
	}
	for oi := range f.out {
		o := &f.out[oi]
		ip := &f.in[o.down]
		for v := range o.credits {
			l := &ip.lanes[v]
			if o.credits[v] < 0 {
				bad(&iv.CreditsNonNegative, "%s vl%d: %d credits", f.outName(int32(oi)), v, o.credits[v])
			}
			if sum := o.credits[v] + l.used + ip.pending[v] + ip.creditsInFlight[v]; sum != l.cap {
				bad(&iv.CreditsConserved, "%s vl%d: credits %d + used %d + pending %d + in flight %d = %d, capacity %d",
					f.outName(int32(oi)), v, o.credits[v], l.used, ip.pending[v], ip.creditsInFlight[v], sum, l.cap)
			}
			if l.used < 0 || l.used > l.cap {
				bad(&iv.BuffersWithinCap, "input lane behind %s vl%d holds %d of %d blocks", f.outName(int32(oi)), v, l.used, l.cap)
			}
		}
		for v := range o.lanes {
			if l := &o.lanes[v]; l.used < 0 || l.used > l.cap {
				bad(&iv.BuffersWithinCap, "output lane %s vl%d holds %d of %d blocks", f.outName(int32(oi)), v, l.used, l.cap)
			}
		}
	}
	if d := f.dl; d != nil {
		st := d.Stats
		if st.Recoveries != st.Reinjections+uint64(d.queued) {
			bad(&iv.RecoveryConserved, "deadlock recovery: %d packets absorbed, %d reinjected, %d waiting at their nodes", st.Recoveries, st.Reinjections, d.queued)
		}
		n := 0
		for h := range d.recq {
			n += d.recq[h].n
		}
		if n != d.queued {
			bad(&iv.RecoveryConserved, "deadlock recovery: %d packets in the nodes' queues, %d counted", n, d.queued)
		}
		if occ := uint64(f.Occupancy()) + uint64(n); occ > f.InFabric() {
			bad(&iv.RecoveryConserved, "%d packets stored in switches or waiting at nodes to be reinjected, only %d in the fabric", occ, f.InFabric())
		}
	}
	if qc, ok := f.arch.(interface {
		checkQueues(func(string, ...any))
	}); ok {
		qc.checkQueues(func(format string, a ...any) { bad(&iv.CreditsConserved, format, a...) })
	}
	return iv
}

func (f *Fabric) outName(oi int32) string {
	o := &f.out[oi]
	if o.host >= 0 {
		return fmt.Sprintf("host %d injection link", o.host)
	}
	return fmt.Sprintf("s%d/p%d", o.sw, o.port)
}

// Occupancy returns the packets stored in switch buffers (input and
// output), for conservation checks by the caller.
func (f *Fabric) Occupancy() (stored int) {
	if f.wh != nil {
		return f.wh.occupancy()
	}
	for i := range f.in {
		for q := range f.in[i].queues {
			stored += f.in[i].queues[q].n
		}
	}
	for o := range f.out {
		for v := range f.out[o].outq {
			stored += f.out[o].outq[v].n
		}
	}
	return stored
}

// LinkUtilisation returns, for switch-to-switch and host links, the
// fraction of time [0, now] the links were busy, as the mean over links.
func (f *Fabric) LinkUtilisation() (mean, max float64) {
	now := f.eng.Now()
	if now == 0 {
		return 0, 0
	}
	n := 0
	for i := range f.out {
		if f.injp != nil && f.extraPort(&f.out[i]) {
			continue // an extra injection port: the topology's links only
		}
		u := float64(f.out[i].busyTime) / float64(now)
		mean += u
		if u > max {
			max = u
		}
		n++
	}
	return mean / float64(n), max
}

// InjectionBusy reports whether host h's injection link is sending (a
// data packet, or credit packets that have not ended yet): local state an
// injection policy may look at.
func (f *Fabric) InjectionBusy(h int) bool {
	o := &f.out[f.hostOut[h]]
	return o.busy || o.idleAt > f.eng.Now()
}

// InjectionCredits returns the credits (in blocks) host h's injection
// link holds on lane vl: the free space of that lane at the first switch's
// input buffer, as far as the NIC knows.
func (f *Fabric) InjectionCredits(h, vl int) int {
	o := &f.out[f.hostOut[h]]
	if o.creditH < len(o.creditQ) {
		f.absorb(o)
	}
	return int(o.credits[vl])
}
