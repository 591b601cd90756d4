package fabric

import "github.com/fabemu/fabemu/fabric/des"

// RECNStats are the counters of the recn switch, the figures paper 000
// reports (§4.3, §4.4: SAQs per port and network-wide) and the events
// behind them.
type RECNStats struct {
	MaxSAQsPerInput  int    `json:"max_saqs_per_input"`  // most SAQs in use at one input port at once
	MaxSAQsPerOutput int    `json:"max_saqs_per_output"` // most SAQs in use at one output port at once
	MaxSAQsTotal     int    `json:"max_saqs_total"`      // most SAQs in use network-wide at once
	Detections       uint64 `json:"detections"`          // output ports that became the root of a congestion tree
	Notifications    uint64 `json:"notifications"`       // congestion notifications sent (to inputs, and upstream on links)
	Allocations      uint64 `json:"allocations"`         // SAQs allocated
	Deallocations    uint64 `json:"deallocations"`       // SAQs freed (each passes its token downstream)
	Tokens           uint64 `json:"tokens"`              // tokens passed to a parent
	Markers          uint64 `json:"markers"`             // in-order markers placed
	Xoff             uint64 `json:"xoff"`                // Xoff sent
	Xon              uint64 `json:"xon"`                 // Xon sent
	Exhausted        uint64 `json:"saq_exhausted"`       // notifications refused for want of a free SAQ (packets stay in the normal queue)
	ExhaustedInput   uint64 `json:"saq_exhausted_input"`
	ExhaustedOutput  uint64 `json:"saq_exhausted_output"`
	// At the hosts' injection ports (fabric.recn.nic_saqs > 0; absent
	// otherwise). Their SAQs are not in the switch figures above.
	ExhaustedNIC     uint64 `json:"saq_exhausted_nic,omitempty"`   // notifications a NIC refused (all its SAQs in use); also in saq_exhausted
	MaxSAQsPerNIC    int    `json:"max_saqs_per_nic,omitempty"`    // most SAQs in use at one NIC at once
	NICAllocations   uint64 `json:"nic_allocations,omitempty"`     // SAQs allocated at NICs
	NICDeallocations uint64 `json:"nic_deallocations,omitempty"`   // SAQs freed at NICs (each passes its token to the first switch)
	NICSetAside      uint64 `json:"nic_set_aside,omitempty"`       // packets a NIC set aside in a SAQ rather than sending from its queue
	MaxNICSAQBytes   int64  `json:"max_nic_saq_bytes,omitempty"`   // most bytes held in one NIC's SAQs at once
	NICMemoryFull    uint64 `json:"nic_saq_memory_full,omitempty"` // times a NIC's head packet, bound for a SAQ, waited for SAQ memory
}

// RECNReport is the RECN part of a run's summary: the counters, the SAQs
// in use at the end, and network-wide SAQs over time.
type RECNReport struct {
	RECNStats
	SAQsAtEnd int `json:"saqs_at_end"`
	// MeanSAQsPerPort is the SAQs in use network-wide averaged over the
	// run, per switch port (inputs and outputs counted apart): paper 000
	// §4.4 finds about one per port.
	MeanSAQsPerPort float64 `json:"mean_saqs_per_port"`
	// SAQsOverTime holds, per time bin from 0, the most SAQs in use
	// network-wide during the bin (paper 000 Figure 5).
	SAQsOverTime []int `json:"saqs_over_time"`
	// SAQsPerInputOverTime and SAQsPerOutputOverTime hold, per time bin,
	// the most SAQs in use at any one switch input (output) port during
	// the bin (paper 000 Figs. 4 and 5); only with
	// fabric.recn.port_series.
	SAQsPerInputOverTime  []int `json:"saqs_per_input_over_time,omitempty"`
	SAQsPerOutputOverTime []int `json:"saqs_per_output_over_time,omitempty"`
}

// RECN returns the RECN report of the run so far with SAQs over time in
// bins bins of width bin from 0, or nil when the switch is not recn.
func (f *Fabric) RECN(bin des.Time, bins int) *RECNReport {
	a, ok := f.arch.(*recnArch)
	if !ok {
		return nil
	}
	r := &RECNReport{RECNStats: a.stats, SAQsAtEnd: a.total}
	if now := f.eng.Now(); now > 0 && len(a.series) > 0 {
		var area float64 // SAQ-picoseconds
		for i, s := range a.series {
			end := now
			if i+1 < len(a.series) {
				end = a.series[i+1].at
			}
			area += float64(s.total) * float64(end-s.at)
		}
		ports := 0
		for i := range f.in {
			if f.in[i].sw >= 0 {
				ports += 2 // the in-port and the out-port of the same switch port
			}
		}
		r.MeanSAQsPerPort = area / float64(now) / float64(ports)
	}
	if bin <= 0 || bins <= 0 {
		return r
	}
	r.SAQsOverTime = a.binPeaks(bin, bins, func(s saqSample) int { return s.total })
	if a.ports != nil {
		r.SAQsPerInputOverTime = a.binPeaks(bin, bins, func(s saqSample) int { return s.maxIn })
		r.SAQsPerOutputOverTime = a.binPeaks(bin, bins, func(s saqSample) int { return s.maxOt })
	}
	return r
}

// binPeaks is, per time bin of width bin from 0, the peak of what v reads
// from the SAQ samples during the bin (the value at its start included).
func (a *recnArch) binPeaks(bin des.Time, n int, v func(saqSample) int) []int {
	out := make([]int, n)
	cur, j := 0, 0
	for b := 0; b < n; b++ {
		end := des.Time(b+1) * bin
		peak := cur
		for ; j < len(a.series) && a.series[j].at < end; j++ {
			cur = v(a.series[j])
			peak = max(peak, cur)
		}
		out[b] = peak
	}
	return out
}
