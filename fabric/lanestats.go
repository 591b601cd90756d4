package fabric

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/topo"
)

// Transit queue occupation and channel utilisation per direction and lane
// on tori, as paper 002 plots them (Figures 5, 8 and 10: "Each column
// represents a virtual (transit) channel"). Kept only when asked for
// (MeasureLanes); until then sending costs one nil check.

// laneStats is the measurement state.
type laneStats struct {
	f      *Fabric
	from   des.Time
	every  des.Time
	busy   []des.Time // [out-port*nVL+vl]: time the link carried data on the lane, since from
	occ    []float64  // [out-port*nVL+vl]: sum over samples of the downstream lane's packets
	n      int        // samples taken
	unitBl int32      // blocks of one packet (a slot)
}

// MeasureLanes samples, every every from time from on, the packets in the
// input lane at the far end of each switch-to-switch channel, and adds up
// the time each channel's link carries data on each lane.
func (f *Fabric) MeasureLanes(from, every des.Time) {
	n := len(f.out) * f.nVL
	f.lanes = &laneStats{f: f, from: from, every: max(every, des.Nanosecond), busy: make([]des.Time, n), occ: make([]float64, n),
		unitBl: f.blocks(f.maxPacket)}
	f.eng.Schedule(from, f.lanes, 0, 0, nil)
}

// recordLane is send's hook: lane vl of out-port oi carries data from
// start to end.
func (l *laneStats) record(oi int32, vl int, start, end des.Time) {
	if end <= l.from {
		return
	}
	l.busy[int(oi)*l.f.nVL+vl] += end - max(start, l.from)
}

// Handle takes one sample and schedules the next.
func (l *laneStats) Handle(*des.Event) {
	f := l.f
	for oi := range f.out {
		o := &f.out[oi]
		if o.sw < 0 || f.in[o.down].sw < 0 {
			continue
		}
		ls := f.in[o.down].lanes
		for v := range ls {
			l.occ[oi*f.nVL+v] += float64(ls[v].used) / float64(l.unitBl)
		}
	}
	l.n++
	f.eng.After(l.every, l, 0, 0, nil)
}

// LaneReport is the transit queue occupation and channel utilisation per
// direction of a torus and lane.
type LaneReport struct {
	// Directions names the rows: d0+, d0-, d1+, ... (d0 is X).
	Directions []string `json:"directions"`
	// Lanes names the columns: esc0.. for escape lanes, ad0.. for adaptive.
	Lanes []string `json:"lanes"`
	// Occupancy is the mean packets in the transit queues (the input lane
	// at the far end of the channels of a direction).
	Occupancy [][]float64 `json:"occupancy_packets"`
	// Utilisation is the fraction of time the channels of a direction
	// carried data on the lane.
	Utilisation [][]float64 `json:"utilisation"`
	// Means over every direction of the escape and the adaptive lanes.
	EscapeOccupancy     float64 `json:"escape_occupancy_packets"`
	AdaptiveOccupancy   float64 `json:"adaptive_occupancy_packets"`
	EscapeUtilisation   float64 `json:"escape_utilisation"`
	AdaptiveUtilisation float64 `json:"adaptive_utilisation"`
	Samples             int     `json:"samples"`
}

// LaneReport returns the measurement up to now, or nil when MeasureLanes
// was not called or the topology is not a torus or mesh.
func (f *Fabric) LaneReport() *LaneReport {
	l := f.lanes
	t := f.topo
	if l == nil || (t.Kind != topo.KindTorus && t.Kind != topo.KindMesh) {
		return nil
	}
	now := f.eng.Now()
	window := now - l.from
	r := &LaneReport{Samples: l.n}
	nd := len(t.DimPorts)
	for d := 0; d < nd; d++ {
		r.Directions = append(r.Directions, fmt.Sprintf("d%d+", d), fmt.Sprintf("d%d-", d))
	}
	esc := f.router.EscapeVLs()
	for v := 0; v < f.nVL; v++ {
		if v < esc {
			r.Lanes = append(r.Lanes, fmt.Sprintf("esc%d", v))
		} else {
			r.Lanes = append(r.Lanes, fmt.Sprintf("ad%d", v-esc))
		}
	}
	occ := make([][]float64, 2*nd)
	util := make([][]float64, 2*nd)
	count := make([]int, 2*nd)
	for i := range occ {
		occ[i], util[i] = make([]float64, f.nVL), make([]float64, f.nVL)
	}
	for oi := range f.out {
		o := &f.out[oi]
		if o.sw < 0 || f.in[o.down].sw < 0 {
			continue
		}
		row := -1
		for d, dp := range t.DimPorts {
			switch int(o.port) {
			case dp[0]:
				row = 2 * d
			case dp[1]:
				row = 2*d + 1
			}
		}
		if row < 0 {
			continue
		}
		count[row]++
		for v := 0; v < f.nVL; v++ {
			if l.n > 0 {
				occ[row][v] += l.occ[oi*f.nVL+v] / float64(l.n)
			}
			if window > 0 {
				util[row][v] += float64(l.busy[oi*f.nVL+v]) / float64(window)
			}
		}
	}
	var escN, adN int
	for i := range occ {
		for v := range occ[i] {
			if count[i] > 0 {
				occ[i][v] /= float64(count[i])
				util[i][v] /= float64(count[i])
			}
			if v < esc {
				r.EscapeOccupancy += occ[i][v]
				r.EscapeUtilisation += util[i][v]
				escN++
			} else {
				r.AdaptiveOccupancy += occ[i][v]
				r.AdaptiveUtilisation += util[i][v]
				adN++
			}
		}
	}
	if escN > 0 {
		r.EscapeOccupancy /= float64(escN)
		r.EscapeUtilisation /= float64(escN)
	}
	if adN > 0 {
		r.AdaptiveOccupancy /= float64(adN)
		r.AdaptiveUtilisation /= float64(adN)
	}
	r.Occupancy, r.Utilisation = occ, util
	return r
}
