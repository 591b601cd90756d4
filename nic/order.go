package nic

import (
	"fmt"
	"slices"

	"github.com/fabemu/fabemu/fabric"
	"github.com/fabemu/fabemu/fabric/des"
	"github.com/fabemu/fabemu/reorder"
)

// Stream definitions reported beside every order figure (RFC 4737 §1.3).
const (
	streamBefore = "one stream per source-destination pair, numbered by the source in generation order; observed at arrival to the destination NIC, before rearrangement (resent copies count as duplicates); figures aggregated over the metered streams"
	streamAfter  = "one stream per source-destination pair, numbered by the source in generation order; observed at delivery to the destination host, after rearrangement; figures aggregated over the metered streams"
)

// orderMeters measures the order of every source-destination stream with
// reorder.OrderMeter, at NIC arrival and, with rearrangement, at host
// delivery. A meter costs memory (O(window) per stream), so only the first
// order_streams streams to deliver a packet are metered; the others are
// counted.
type orderMeters struct {
	cfg        DeliveryConfig
	after      bool
	streams    map[uint64]*streamMeters
	metered    int
	unmetered  int
	arrivalsUn uint64
}

type streamMeters struct {
	before, after *reorder.OrderMeter
}

func newOrderMeters(cfg DeliveryConfig, after bool) *orderMeters {
	return &orderMeters{cfg: cfg, after: after, streams: map[uint64]*streamMeters{}}
}

func streamKey(p *fabric.Packet) uint64 { return uint64(uint32(p.Src))<<32 | uint64(uint32(p.Dst)) }

func (o *orderMeters) get(p *fabric.Packet) *streamMeters {
	k := streamKey(p)
	s, ok := o.streams[k]
	if ok {
		return s
	}
	if o.cfg.OrderStreams < 0 || o.metered >= o.cfg.OrderStreams {
		o.streams[k] = nil
		o.unmetered++
		return nil
	}
	name := fmt.Sprintf("h%d>h%d", p.Src, p.Dst)
	before, err := reorder.NewOrderMeter(reorder.MeterConfig{Stream: name + " at NIC arrival", TimeUnit: "ps", HistoryWindow: o.cfg.OrderWindow})
	if err != nil {
		panic(err) // the window was validated
	}
	s = &streamMeters{before: before}
	if o.after {
		// Delivery to the host is in order by construction; a small
		// window suffices to measure it.
		s.after, _ = reorder.NewOrderMeter(reorder.MeterConfig{Stream: name + " at host delivery", TimeUnit: "ps", HistoryWindow: 8, RDThreshold: 2, RBDThreshold: 2})
	}
	o.streams[k] = s
	o.metered++
	return s
}

// arrive observes a data packet arriving at its destination NIC.
func (o *orderMeters) arrive(p *fabric.Packet, at des.Time) { o.arriveAt(o.get(p), p, at) }

// arriveAt is arrive with the stream's meters (nil: not metered) known.
func (o *orderMeters) arriveAt(s *streamMeters, p *fabric.Packet, at des.Time) {
	if s != nil {
		s.before.Observe(p.Seq, int(p.Payload), int64(at))
	} else {
		o.arrivalsUn++
	}
}

// releaseAt observes a data packet handed to the destination host after
// rearrangement.
func (s *streamMeters) releaseAt(p *fabric.Packet, at des.Time) {
	if s != nil && s.after != nil {
		s.after.Observe(p.Seq, int(p.Payload), int64(at))
	}
}

// reports aggregates the stream reports (before, and after when metered).
func (o *orderMeters) reports() (before, after *reorder.OrderReport) {
	keys := make([]uint64, 0, len(o.streams))
	for k, s := range o.streams {
		if s != nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var bs, as []reorder.OrderReport
	for _, k := range keys {
		s := o.streams[k]
		bs = append(bs, s.before.Report())
		if s.after != nil {
			as = append(as, s.after.Report())
		}
	}
	b := mergeOrderReports(streamBefore, bs)
	before = &b
	if o.after {
		a := mergeOrderReports(streamAfter, as)
		after = &a
	}
	return before, after
}

// mergeOrderReports aggregates per-stream reports: counts add up, means
// are weighted by their counts, maxima are the largest, ratios and
// densities are recomputed from the summed counts.
func mergeOrderReports(stream string, rs []reorder.OrderReport) reorder.OrderReport {
	out := reorder.OrderReport{Stream: stream, SeqBits: 64}
	out.LateTime.Unit, out.GapTime.Unit = "ps", "ps"
	out.RD.Stream, out.RBD.Stream = stream, stream
	for i := range out.NReordering {
		out.NReordering[i].N = i + 1
	}
	rd, rbd := map[int]uint64{}, map[int]uint64{}
	sum := func(into *reorder.Summary, s reorder.Summary) {
		if s.Count == 0 {
			return
		}
		tot := into.Count + s.Count
		into.Mean = (into.Mean*float64(into.Count) + s.Mean*float64(s.Count)) / float64(tot)
		into.Count = tot
		into.Max = max(into.Max, s.Max)
	}
	for _, r := range rs {
		out.SeqBits, out.HistoryWindow = r.SeqBits, r.HistoryWindow
		out.Arrivals += r.Arrivals
		out.Received += r.Received
		out.Duplicates += r.Duplicates
		out.Reordered += r.Reordered
		out.BeyondWindow += r.BeyondWindow
		out.SequenceDiscontinuities += r.SequenceDiscontinuities
		out.DiscontinuityTotal += r.DiscontinuityTotal
		sum(&out.Extent, r.Extent)
		sum(&out.LateTime.Summary, r.LateTime.Summary)
		sum(&out.ByteOffset, r.ByteOffset)
		sum(&out.Gap, r.Gap)
		sum(&out.GapTime.Summary, r.GapTime.Summary)
		f := &out.FreeRuns
		f.Runs += r.FreeRuns.Runs
		f.InOrder += r.FreeRuns.InOrder
		f.Packets += r.FreeRuns.Packets
		f.SumSquares += r.FreeRuns.SumSquares
		for i := range out.NReordering {
			out.NReordering[i].Packets += r.NReordering[i].Packets
		}
		out.RD.Threshold, out.RBD.Threshold = r.RD.Threshold, r.RBD.Threshold
		out.RD.Samples += r.RD.Samples
		out.RD.Discarded += r.RD.Discarded
		out.RD.Duplicates += r.RD.Duplicates
		out.RBD.Samples += r.RBD.Samples
		out.RBD.Duplicates += r.RBD.Duplicates
		out.RBD.ForcedReleases += r.RBD.ForcedReleases
		for _, b := range r.RD.Bins {
			rd[b.Value] += b.Count
		}
		for _, b := range r.RBD.Bins {
			rbd[b.Value] += b.Count
		}
	}
	if out.Received > 0 {
		out.ReorderedRatio = float64(out.Reordered) / float64(out.Received)
		for i := range out.NReordering {
			out.NReordering[i].Degree = float64(out.NReordering[i].Packets) / float64(out.Received)
		}
	}
	// RFC 4737 §4.6: %in-order = 100·a/p, mean run = a/x, variability = (q/a)/(a/x).
	f := &out.FreeRuns
	if f.Packets > 0 {
		f.InOrderPercent = 100 * float64(f.InOrder) / float64(f.Packets)
	}
	if f.Runs > 0 && f.InOrder > 0 {
		f.MeanRun = float64(f.InOrder) / float64(f.Runs)
		f.Variability = (float64(f.SumSquares) / float64(f.InOrder)) / f.MeanRun
	}
	out.RD.Bins = bins(rd, out.RD.Samples)
	out.RBD.Bins = bins(rbd, out.RBD.Samples)
	return out
}

func bins(m map[int]uint64, samples uint64) []reorder.Bin {
	out := make([]reorder.Bin, 0, len(m))
	for v, c := range m {
		b := reorder.Bin{Value: v, Count: c}
		if samples > 0 {
			b.Fraction = float64(c) / float64(samples)
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b reorder.Bin) int { return a.Value - b.Value })
	return out
}
