package main

import (
	"fmt"

	"github.com/fabemu/fabemu/internal/report"
	"github.com/fabemu/fabemu/nic"
)

// deliverySection renders the end-to-end delivery figures of a summary
// (sim and replay) when the mode is not deterministic.
func deliverySection(d nic.DeliveryReport) (report.Section, bool) {
	sec := report.Section{Title: "Delivery"}
	if d.Delivery == "" || d.Delivery == string(nic.DeliveryDeterministic) {
		return sec, false
	}
	sec.Add("mode", d.Delivery, "")
	if d.Delivery == string(nic.DeliveryAdaptiveInOrder) {
		sec.Add("reorder memory / injection policy", d.ReorderMemory+" / "+d.InjectionPolicy, "")
		sec.Add("waste traffic", f3(d.WasteTrafficPct), "% of injected bytes (ACK + NACK + resent)")
		sec.Add("MBS / MMS", fmt.Sprintf("%d / %d", d.MBSBytes, d.MMSBytes), "bytes (largest buffer of a connection / memory of a NIC)")
		sec.Add("rejected / resent packets", fmt.Sprintf("%s / %s", report.FormatUint(d.RejectedPackets), report.FormatUint(d.ResentPackets)), "")
		sec.Add("ACKs / NACKs sent", fmt.Sprintf("%s / %s", report.FormatUint(d.Acks), report.FormatUint(d.Nacks)), "packets")
		sec.Add("time in LI", f3(d.LITimeNs), fmt.Sprintf("ns, summed over connections (%d entries)", d.LIEntries))
	}
	if o := d.Order; o != nil {
		sec.Add("reordered ratio (RFC 4737)", f3(d.ReorderedRatio), "at NIC arrival, per source-destination stream")
		sec.Add("extent mean / max", fmt.Sprintf("%s / %d", f3(o.Extent.Mean), o.Extent.Max), "packets")
		sec.Add("byte offset mean / max", fmt.Sprintf("%s / %d", f3(o.ByteOffset.Mean), o.ByteOffset.Max), "bytes")
		sec.Add("late time mean / max", fmt.Sprintf("%s / %s", f3(o.LateTime.Mean/1000), f3(float64(o.LateTime.Max)/1000)), "ns")
		sec.Add("1- / 3-reordering degree", fmt.Sprintf("%s / %s", f3(o.NReordering[0].Degree), f3(o.NReordering[2].Degree)), "")
		sec.Add("streams metered", fmt.Sprintf("%d (%d not metered)", d.OrderStreamsMetered, d.OrderStreamsUnmetered), "")
	}
	if a := d.OrderAfter; a != nil {
		sec.Add("reordered ratio after rearrangement", f3(a.ReorderedRatio), "at host delivery")
	}
	return sec, true
}

func orderCheckName(mode string) string {
	if mode == string(nic.DeliveryAdaptiveInOrder) {
		return "exactly once, adaptive-inorder"
	}
	return "deterministic routing"
}
