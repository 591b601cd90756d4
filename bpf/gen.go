package bpf

// The programs are compiled for little- and big-endian BPF by bpf2go; the
// generated Go and objects are committed so that building fabemu needs no
// clang. See README.md for the toolchain this needs.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" capture capture.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -tags linux -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" order order.c
