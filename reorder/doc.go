// Package reorder owns in-order delivery at the destination NIC and the
// measurement of packet order.
//
// It is a pure library: no fabric, no I/O, no goroutines, no clock; the
// same calls give the same results. Three parts:
//
//   - Sequence numbers: Space and PSN, per-connection packet sequence
//     numbers that wrap (24 bits by default) and are compared only with
//     serial-number arithmetic (RFC 1982).
//   - Rearrangement (paper 004, "In-Order Packet Delivery in
//     Interconnection Networks using Adaptive Routing", §3): a Receiver per
//     connection delivers the expected packet with every stored successor
//     under one cumulative ACK, stores early packets if they fit, and
//     otherwise rejects stored packets with larger PSNs, or the arriving
//     packet, one NACK each. Their buffers live in a Memory per NIC: static
//     (a fixed buffer per connection), dynamic (a shared pool with a
//     per-connection cap) or unlimited (never rejects, to measure need).
//     Memory and Receiver keep MBS, MMS, rejections, ACK and NACK counts.
//   - Order metrics: OrderMeter, a streaming accumulator of the RFC 4737
//     metrics (reordered ratio, extent, late time, byte offset, gap,
//     reordering-free runs, n-reordering) and the RFC 5236 densities (RD
//     with a displacement threshold, RBD with a buffer threshold), with
//     bounded memory per stream and the caller's stream definition reported
//     beside every figure.
//
// Choices where the texts leave room (each is tested):
//   - Duplicates are removed before every RFC 4737 metric, n-reordering
//     included: the denominator of the n-reordering degree is the number of
//     distinct packets (RFC 4737 §3.6); the duplicate count is reported so
//     the §5 reading (duplicates included) can be derived.
//   - RD and RBD follow the Colorado State reference algorithms of 2004
//     (rd_algo.txt, rbd_algo.txt) exactly, including their duplicate rules;
//     with RBD the largest occupancy that can appear is BT-1.
//
// See docs/reorder.md for the mechanism and every metric's definition.
package reorder
