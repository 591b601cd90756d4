package traffic

import (
	"fmt"

	"github.com/fabemu/fabemu/internal/units"
)

// Link describes the host's injection link as the load definition needs
// it. The caller (the NIC model) fills it from the fabric config.
type Link struct {
	// Rate is the payload-carrying bit rate after line coding: the raw
	// signalling rate times the coding efficiency (2.5 Gb/s 1X InfiniBand
	// with 8b/10b carries 2 Gb/s, paper 004 §4.1).
	Rate units.BitRate
	// Overhead is the wire bytes every packet carries besides its payload
	// (headers, trailers, CRCs; 26 for IB LRH+BTH+ICRC+VCRC).
	Overhead int
	// MTU, when positive, is the largest payload of one packet: a message
	// of s bytes travels as ceil(s/MTU) packets, each with Overhead bytes.
	// Zero means messages are single packets.
	MTU int
}

// Validate checks that the link can carry traffic.
func (l Link) Validate() error {
	if l.Rate <= 0 {
		return fmt.Errorf("host link rate must be positive, got %d b/s", int64(l.Rate))
	}
	if l.Overhead < 0 {
		return fmt.Errorf("per-packet overhead must not be negative, got %d bytes", l.Overhead)
	}
	if l.MTU < 0 {
		return fmt.Errorf("MTU must not be negative, got %d bytes", l.MTU)
	}
	return nil
}

// WireBytes returns the bytes a message of payload bytes puts on the wire:
// payload plus Overhead per packet.
func (l Link) WireBytes(payload int) int64 {
	pkts := int64(1)
	if l.MTU > 0 && payload > l.MTU {
		pkts = int64((payload + l.MTU - 1) / l.MTU)
	}
	return int64(payload) + pkts*int64(l.Overhead)
}

// Picos returns the serialization time of wire bytes on the link in
// picoseconds (not rounded): bytes × 8 × 10¹² / Rate.
func (l Link) Picos(wire int64) float64 {
	return float64(wire) * 8e12 / float64(l.Rate)
}
