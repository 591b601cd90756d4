// Package traffic owns fabemu's synthetic workloads: which destination a
// host sends each packet to (destination patterns), when it creates packets
// (injection processes at an offered load, optionally modulated by rate
// phases), and how large they are (size mixes).
//
// It is pure and deterministic: no clock, no I/O, no goroutines, and it
// imports only the standard library and internal/, so any layer may use it
// (workload/synth drives hosts with it). Time is an int64 count of
// picoseconds, sizes are bytes, rates bits per second.
// Randomness comes only from the *rand.Rand streams the caller passes in
// (normally internal/rng streams per host), so the same seed gives the same
// packets.
//
// Offered load is defined on the wire: load = (wire bytes offered per unit
// time, headers included) / (host link capacity), where the capacity is the
// link's payload-carrying bit rate after line coding. Load 1.0 therefore
// saturates the injection link exactly. See Link and docs/traffic.md.
//
// The patterns follow the seed papers: uniform, butterfly, complement,
// bit-reversal and perfect shuffle (paper 001 §4.1), bit-reversal and
// uniform (paper 004 §4.1), hot-region (paper 002 §3, item 4), the two
// corner cases of paper 000 (§4.2, Table 1), hot-spot (paper 003 §2.9 and
// §4.2.2) and transpose (Dally and Towles, "Principles and Practices of
// Interconnection Networks", §3.2).
package traffic
