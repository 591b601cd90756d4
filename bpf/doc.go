// Package bpf owns fabemu's eBPF programs and their loaders: a capture
// program that copies the head of every frame on an interface into a ring
// buffer (Capture, written out as pcapng) and a per-flow TCP order meter
// that applies RFC 4737 to sequence numbers in the kernel (Order).
//
// Both attach to an interface's ingress and egress with tcx links (Linux
// 6.6 and later), or, on older kernels, as direct-action filters under a
// clsact qdisc. They never change or drop a frame. The C sources sit beside
// this file; the Go bindings and BPF objects bpf2go made from them are
// committed, so building fabemu needs no C toolchain (see README.md).
package bpf
