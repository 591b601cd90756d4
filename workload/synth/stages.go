package synth

import (
	"fmt"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/fabric/topo"
)

// StageSeries is the link utilisation of a multistage network per class
// of link and time bin (run.stage_series): the picture of a congestion
// tree growing from its root toward the sources and collapsing (paper 000
// §4.2-4.3, corner case 2). A class is the host injection links, the up
// links out of each stage, the down links out of each stage and the links
// to the hosts; a value is the mean over the class's links of the
// fraction of the bin each was busy sending data.
type StageSeries struct {
	// Classes name the rows, from the sources toward the root and back:
	// "injection", "up 0-1", ..., "down 1-0", "ejection".
	Classes []string  `json:"classes"`
	Links   []int     `json:"links"` // links per class
	BinUs   float64   `json:"bin_us"`
	TimeUs  []float64 `json:"time_us"` // bin starts
	// Utilisation[class][bin], fraction of time busy. A packet's whole
	// serialisation time counts in the bin it starts in, so a bin can
	// read slightly above 1 when packets are long against the bin.
	Utilisation [][]float64 `json:"utilisation"`
}

// stageSampler reads every link's busy time at each bin boundary.
type stageSampler struct {
	f     *fabric.Fabric
	eng   *des.Engine
	bin   des.Time
	end   des.Time
	class map[[3]int]int // (sw, port, host) -> class
	last  map[[3]int]des.Time
	out   *StageSeries
}

// classifyStages returns the link classes of a MIN and each link's class.
func classifyStages(t *topo.Topology) ([]string, map[[3]int]int, []int) {
	var names []string
	for st := 0; st+1 < t.Stages; st++ {
		names = append(names, fmt.Sprintf("up %d-%d", st, st+1))
	}
	for st := t.Stages - 1; st > 0; st-- {
		names = append(names, fmt.Sprintf("down %d-%d", st, st-1))
	}
	names = append([]string{"injection"}, append(names, "ejection")...)
	up := func(st int) int { return 1 + st }
	down := func(st int) int { return 1 + (t.Stages - 1) + (t.Stages - 1 - st) }
	class := map[[3]int]int{}
	links := make([]int, len(names))
	add := func(k [3]int, c int) { class[k] = c; links[c]++ }
	for h := range t.Hosts {
		add([3]int{-1, 0, h}, 0)
	}
	for s, sw := range t.Switches {
		for p := 0; p < sw.Ports; p++ {
			pr, ok := t.Peer(s, p)
			if ok {
				if t.Switches[pr.Switch].Stage > sw.Stage {
					add([3]int{s, p, -1}, up(sw.Stage))
				} else {
					add([3]int{s, p, -1}, down(sw.Stage))
				}
				continue
			}
			if _, ok := t.HostAt(s, p); ok {
				add([3]int{s, p, -1}, len(names)-1)
			}
		}
	}
	return names, class, links
}

// measureStages starts sampling every bin from 0 to end.
func measureStages(eng *des.Engine, f *fabric.Fabric, t *topo.Topology, bin, end des.Time) (*StageSeries, error) {
	if t.Kind != topo.KindMIN {
		return nil, fmt.Errorf("run.stage_series: needs a multistage network (topology.kind min), not %s", t.Kind)
	}
	names, class, links := classifyStages(t)
	st := &StageSeries{Classes: names, Links: links, BinUs: float64(bin) / float64(des.Microsecond), Utilisation: make([][]float64, len(names))}
	s := &stageSampler{f: f, eng: eng, bin: bin, end: end, class: class, last: map[[3]int]des.Time{}, out: st}
	eng.Schedule(bin, s, 0, 0, nil)
	return st, nil
}

// Handle closes the bin that ends now.
func (s *stageSampler) Handle(ev *des.Event) {
	sums := make([]float64, len(s.out.Classes))
	s.f.LinkBusy(func(sw, port, host int, busy des.Time) {
		k := [3]int{sw, port, host}
		c, ok := s.class[k]
		if !ok {
			return
		}
		sums[c] += float64(busy - s.last[k])
		s.last[k] = busy
	})
	s.out.TimeUs = append(s.out.TimeUs, float64(ev.At-s.bin)/float64(des.Microsecond))
	for c := range sums {
		u := 0.0
		if s.out.Links[c] > 0 {
			u = sums[c] / float64(s.bin) / float64(s.out.Links[c])
		}
		s.out.Utilisation[c] = append(s.out.Utilisation[c], u)
	}
	if ev.At+s.bin <= s.end {
		s.eng.Schedule(ev.At+s.bin, s, 0, 0, nil)
	}
}
