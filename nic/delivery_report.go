package nic

import (
	"fmt"

	"github.com/fabemu/fabemu/reorder"
)

// WireBytes splits the bytes the NICs injected (whole run, headers
// included) by what they carried.
type WireBytes struct {
	FirstSend int64 `json:"first_send"`
	Resent    int64 `json:"resent"`
	Ack       int64 `json:"ack"`
	Nack      int64 `json:"nack"`
}

// FabricPackets counts every packet the fabric carried, data and
// control, over the whole run: injected = delivered + in flight.
type FabricPackets struct {
	Injected     uint64 `json:"injected"`
	Delivered    uint64 `json:"delivered"`
	InFlight     uint64 `json:"in_flight"`
	DataInjected uint64 `json:"data_injected"`
	DataArrived  uint64 `json:"data_arrived"`
	AckInjected  uint64 `json:"ack_injected"`
	NackInjected uint64 `json:"nack_injected"`
}

// DeliveryReport carries the figures of end-to-end delivery control
// (paper 004 §3): filled by the delivery mode, shared by the sim and replay
// summaries. Counts and bytes are over the whole run, warm-up included.
// Definitions: docs/delivery.md.
type DeliveryReport struct {
	// Delivery is the mode in effect: deterministic, adaptive-ooo or adaptive-inorder.
	Delivery string `json:"delivery"`
	// ReorderMemory, InjectionPolicy and PSNBits are set in adaptive-inorder.
	ReorderMemory   string `json:"reorder_memory,omitempty"`
	InjectionPolicy string `json:"injection_policy,omitempty"`
	PSNBits         uint   `json:"psn_bits,omitempty"`
	// WasteTrafficPct is ACK, NACK and resent bytes over all bytes the NICs
	// injected, in percent (paper 004 §4.3 footnote 3).
	WasteTrafficPct float64 `json:"waste_traffic_pct"`
	// MBSBytes is the largest rearrangement buffer one connection used;
	// MMSBytes the largest memory in use at one NIC at one time (paper 004
	// Tables 1-2); MMSPerNIC spreads MMS over the NICs.
	MBSBytes  int64      `json:"mbs_bytes"`
	MMSBytes  int64      `json:"mms_bytes"`
	MMSPerNIC MinMeanMax `json:"mms_per_nic_bytes"`
	// RejectedPackets counts NACKed packets (refused arrivals plus evicted
	// stored packets, EvictedPackets); ResentPackets the resends.
	RejectedPackets uint64 `json:"rejected_packets"`
	EvictedPackets  uint64 `json:"evicted_packets"`
	ResentPackets   uint64 `json:"resent_packets"`
	// Acks and Nacks count the control packets injected.
	Acks  uint64 `json:"acks"`
	Nacks uint64 `json:"nacks"`
	// LITimeNs is the total time connections spent in the LI state;
	// LIEntries how many times a connection entered it.
	LITimeNs    float64 `json:"li_time_ns"`
	LIEntries   uint64  `json:"li_entries"`
	Connections int     `json:"connections,omitempty"`
	// Bytes and Fabric break down the injected traffic.
	Bytes  WireBytes      `json:"wire_bytes"`
	Fabric *FabricPackets `json:"fabric_packets,omitempty"`
	// ReorderedRatio is the RFC 4737 reordered ratio of the packets
	// arriving at the destination NICs (Order.Stream defines the streams).
	ReorderedRatio float64 `json:"reordered_ratio"`
	// Order is the RFC 4737 / RFC 5236 report at NIC arrival, before
	// rearrangement; OrderAfter at host delivery (adaptive-inorder only:
	// in order by construction). Each carries its stream definition.
	Order                 *reorder.OrderReport `json:"order,omitempty"`
	OrderAfter            *reorder.OrderReport `json:"order_after,omitempty"`
	OrderStreamsMetered   int                  `json:"order_streams_metered,omitempty"`
	OrderStreamsUnmetered int                  `json:"order_streams_unmetered,omitempty"`
}

// MinMeanMax is a spread over hosts or links.
type MinMeanMax struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// DataPackets restates a run's packet counts in adaptive-inorder, where the
// fabric also carries ACKs, NACKs and resends. Resent packets are counted
// once: delivered means handed to the host; injected counts data packets
// put on injection links, resends included; in flight counts data packets
// in the fabric. Control packets are in DeliveryReport.Fabric. ok is false
// outside adaptive-inorder, where the fabric's own counts are the data
// packets.
func (nw *Network) DataPackets() (delivered, injected, inFlight uint64, ok bool) {
	d := nw.del
	if d == nil {
		return 0, 0, 0, false
	}
	return d.hostDelivered, d.dataInjected, d.dataInjected - d.dataArrived, true
}

// DeliveryReport returns the end-to-end delivery figures of the run so
// far (paper 004 §4, RFC 4737, RFC 5236). Sizes are bytes, times ns.
func (nw *Network) DeliveryReport() DeliveryReport {
	r := DeliveryReport{Delivery: string(nw.mode)}
	if nw.order != nil {
		before, after := nw.order.reports()
		r.Order, r.OrderAfter = before, after
		r.ReorderedRatio = before.ReorderedRatio
		r.OrderStreamsMetered = nw.order.metered
		r.OrderStreamsUnmetered = nw.order.unmetered
	}
	d := nw.del
	if d == nil {
		return r
	}
	r.ReorderMemory = d.spec.String()
	r.InjectionPolicy = string(d.policy.Kind())
	r.PSNBits = d.space.Bits
	first := true
	for h := range d.hosts {
		dh := &d.hosts[h]
		st := dh.mem.Stats()
		r.MBSBytes = max(r.MBSBytes, st.MBSBytes)
		r.MMSBytes = max(r.MMSBytes, st.MMSBytes)
		if first || float64(st.MMSBytes) < r.MMSPerNIC.Min {
			r.MMSPerNIC.Min = float64(st.MMSBytes)
		}
		first = false
		r.MMSPerNIC.Max = max(r.MMSPerNIC.Max, float64(st.MMSBytes))
		r.MMSPerNIC.Mean += float64(st.MMSBytes) / float64(len(d.hosts))
		r.RejectedPackets += st.RejectedPackets
		r.EvictedPackets += st.EvictedPackets
		r.Connections += len(dh.rx)
	}
	r.ResentPackets = d.resentPackets
	r.Acks, r.Nacks = d.ackInjected, d.nackInjected
	r.Bytes = WireBytes{FirstSend: d.firstBytes, Resent: d.resentBytes, Ack: d.ackBytes, Nack: d.nackBytes}
	if all := d.firstBytes + d.resentBytes + d.ackBytes + d.nackBytes; all > 0 {
		r.WasteTrafficPct = 100 * float64(d.resentBytes+d.ackBytes+d.nackBytes) / float64(all)
	}
	li := d.liTime
	now := nw.eng.Now()
	for h := range d.hosts {
		for _, c := range d.hosts[h].conns {
			if c.pol.Limited() {
				li += now - c.liSince
			}
		}
	}
	r.LITimeNs = li.Nanoseconds()
	r.LIEntries = d.liEntries
	st := nw.fab.Stats
	r.Fabric = &FabricPackets{Injected: st.Injected, Delivered: st.Delivered, InFlight: nw.fab.InFabric(),
		DataInjected: d.dataInjected, DataArrived: d.dataArrived, AckInjected: d.ackInjected, NackInjected: d.nackInjected}
	return r
}

// PacketsConserved checks packet conservation. Without end-to-end control
// every generated packet is delivered, in the fabric or queued at its
// source. With it, every generated packet is in exactly one place:
// delivered to its host, stored in a rearrangement buffer, a data copy in
// the fabric, rejected with its NACK not yet back at the source, or
// waiting at the source (never sent, to resend, or staged); and every
// packet the fabric carried is a data packet or an ACK or NACK.
// It returns the violations found.
func (nw *Network) PacketsConserved() (bool, []string) {
	st := nw.fab.Stats
	f := nw.fab
	occOK := uint64(f.Occupancy()) <= f.InFabric()
	d := nw.del
	if d == nil {
		ok := nw.Generated == st.Delivered+f.InFabric()+uint64(nw.Queued) && occOK
		if !ok {
			return false, []string{"packets: generated != delivered + in flight + queued at sources"}
		}
		if why := nw.admConserved(); why != "" {
			return false, []string{why}
		}
		return true, nil
	}
	var v []string
	var stored, staged uint64
	for h := range d.hosts {
		dh := &d.hosts[h]
		for _, rc := range dh.rx {
			n, _ := rc.rx.Stored()
			stored += uint64(n)
		}
		if dh.staged != nil {
			staged++
		}
	}
	nacksPending := d.nacksQueued - d.nackArrived
	where := d.hostDelivered + stored + (d.dataInjected - d.dataArrived) + nacksPending + uint64(nw.Queued) + staged
	if nw.Generated != where {
		v = append(v, fmt.Sprintf("packets: generated %d != delivered to hosts %d + stored %d + data in fabric %d + NACKs pending %d + waiting at sources %d + staged %d",
			nw.Generated, d.hostDelivered, stored, d.dataInjected-d.dataArrived, nacksPending, nw.Queued, staged))
	}
	if st.Injected != d.dataInjected+d.ackInjected+d.nackInjected || st.Delivered != d.dataArrived+d.ackArrived+d.nackArrived {
		v = append(v, fmt.Sprintf("packets: fabric injected %d / delivered %d != data %d / %d + ACK %d / %d + NACK %d / %d",
			st.Injected, st.Delivered, d.dataInjected, d.dataArrived, d.ackInjected, d.ackArrived, d.nackInjected, d.nackArrived))
	}
	if !occOK {
		v = append(v, "packets: more packets stored in the fabric than in flight")
	}
	if d.staleNacks > 0 {
		v = append(v, fmt.Sprintf("packets: %d NACKs named a packet that was not in flight", d.staleNacks))
	}
	return len(v) == 0, v
}

// DeliveredInOrder is the in-order check of adaptive-inorder: every
// packet was handed to its host exactly once and in order. checked is
// false in the other modes, where the order is not enforced by the NIC;
// violation says what went wrong when ok is false.
func (nw *Network) DeliveredInOrder() (checked, ok bool, violation string) {
	d := nw.del
	if d == nil {
		return false, false, ""
	}
	ok = d.orderViolations == 0
	var want uint64
	for h := range d.hosts {
		for _, rc := range d.hosts[h].rx {
			want += rc.want
		}
	}
	if want != d.hostDelivered {
		ok = false
	}
	if !ok {
		violation = fmt.Sprintf("in order: %d deliveries out of sequence; %d delivered for %d expected", d.orderViolations, d.hostDelivered, want)
	}
	return true, ok, violation
}
