package nic

import (
	"fmt"
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

func (s *Session) fillDelivery(sum *Summary) {
	sum.DeliveryReport = s.DeliveryReport()
	s.deliveryPackets(&sum.Packets)
}

// deliveryPackets restates the packet counts of a summary in
// adaptive-inorder, where the fabric also carries ACKs, NACKs and resends.
// Resent packets are counted once: delivered means handed to the host;
// injected counts data packets put on injection links, resends included;
// in flight counts data packets in the fabric. Control packets are in
// DeliveryReport.Fabric.
func (s *Session) deliveryPackets(p *PacketCounts) {
	if d := s.Net.del; d != nil {
		p.Delivered = d.hostDelivered
		p.Injected = d.dataInjected
		p.InFlight = d.dataInjected - d.dataArrived
	}
}

// DeliveryReport returns the end-to-end delivery figures of the run so
// far (paper 004 §4, RFC 4737, RFC 5236). Sizes are bytes, times ns.
func (s *Session) DeliveryReport() DeliveryReport {
	nw := s.Net
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
	now := s.Eng.Now()
	for h := range d.hosts {
		for _, c := range d.hosts[h].conns {
			if c.pol.Limited() {
				li += now - c.liSince
			}
		}
	}
	r.LITimeNs = li.Nanoseconds()
	r.LIEntries = d.liEntries
	st := s.Fabric.Stats
	r.Fabric = &FabricPackets{Injected: st.Injected, Delivered: st.Delivered, InFlight: s.Fabric.InFabric(),
		DataInjected: d.dataInjected, DataArrived: d.dataArrived, AckInjected: d.ackInjected, NackInjected: d.nackInjected}
	return r
}

// packetsConserved checks packet conservation. Without end-to-end control
// every generated packet is delivered, in the fabric or queued at its
// source. With it, every generated packet is in exactly one place:
// delivered to its host, stored in a rearrangement buffer, a data copy in
// the fabric, rejected with its NACK not yet back at the source, or
// waiting at the source (never sent, to resend, or staged); and every
// packet the fabric carried is a data packet or an ACK or NACK.
func (s *Session) packetsConserved() (bool, []string) {
	st := s.Fabric.Stats
	f := s.Fabric
	occOK := uint64(f.Occupancy()) <= f.InFabric()
	d := s.Net.del
	if d == nil {
		ok := s.Net.Generated == st.Delivered+f.InFabric()+uint64(s.Net.Queued) && occOK
		if !ok {
			return false, []string{"packets: generated != delivered + in flight + queued at sources"}
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
	where := d.hostDelivered + stored + (d.dataInjected - d.dataArrived) + nacksPending + uint64(s.Net.Queued) + staged
	if s.Net.Generated != where {
		v = append(v, fmt.Sprintf("packets: generated %d != delivered to hosts %d + stored %d + data in fabric %d + NACKs pending %d + waiting at sources %d + staged %d",
			s.Net.Generated, d.hostDelivered, stored, d.dataInjected-d.dataArrived, nacksPending, s.Net.Queued, staged))
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

// deliveryInvariants adds the in-order check of adaptive-inorder: every
// packet was handed to its host exactly once and in order.
func (s *Session) deliveryInvariants(r *InvariantReport) {
	d := s.Net.del
	if d == nil {
		return
	}
	ok := d.orderViolations == 0
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
		r.Violations = append(r.Violations, fmt.Sprintf("in order: %d deliveries out of sequence; %d delivered for %d expected", d.orderViolations, d.hostDelivered, want))
	}
	r.InOrder = &ok
	r.OK = r.OK && ok
}
