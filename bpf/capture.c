//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* fabemu capture: copy the first snaplen bytes of every frame seen by a tc
 * hook, with its metadata, into a BPF ring buffer for user space to write
 * as pcapng. Frames the ring buffer has no room for are counted, never
 * silently lost. The program never changes or drops a frame. */
#include "parse.h"

/* Largest snap length; user space caps --snaplen to it. */
#define MAX_SNAP 1536

/* Configuration, set by user space before loading. */
volatile const __u32 snaplen = 128;
volatile const __u8 filter_family;     /* 0: any host; 4 or 6: match filter_host */
volatile const __u8 filter_host[16];
volatile const __u16 filter_port;      /* 0: any port */
volatile const __u16 filter_proto = 0xffff; /* 0xffff: any protocol */

/* One record in the ring buffer: this header, then cap_len bytes. */
struct event {
	__u64 ts_ns;    /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
	__u32 ifindex;
	__u32 orig_len; /* skb->len: the frame as the stack holds it */
	__u32 cap_len;
	__u32 dir;      /* DIR_INGRESS or DIR_EGRESS */
	__u8 data[MAX_SNAP];
};

/* Counters, per CPU so that they need no atomics: frames that passed the
 * filter, records written, and records lost because the ring was full. */
enum { CNT_MATCHED, CNT_CAPTURED, CNT_DROPPED, CNT_MAX };

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* user space may resize before loading */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Scratch space for one record: too big for the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event);
} scratch SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

static __always_inline int addr_eq(const __u8 *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != filter_host[i])
			return 0;
	return 1;
}

/* wanted applies the --filter terms; all given terms must hold. */
static __always_inline int wanted(struct __sk_buff *skb)
{
	struct pkt p = {};

	if (!filter_family && !filter_port && filter_proto == 0xffff)
		return 1;
	if (parse_l3l4(skb, &p) < 0)
		return 0;
	if (filter_proto != 0xffff && p.proto != filter_proto)
		return 0;
	if (filter_port && p.sport != filter_port && p.dport != filter_port)
		return 0;
	if (filter_family) {
		int n = filter_family == 4 ? 4 : 16;

		if (p.family != filter_family)
			return 0;
		if (!addr_eq(p.saddr, n) && !addr_eq(p.daddr, n))
			return 0;
	}
	return 1;
}

static __always_inline int capture(struct __sk_buff *skb, __u32 dir)
{
	__u32 zero = 0, len;
	struct event *e;

	if (!wanted(skb))
		return PASS;
	count(CNT_MATCHED);
	e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return PASS;
	e->ts_ns = bpf_ktime_get_ns();
	e->ifindex = skb->ifindex;
	e->orig_len = skb->len;
	e->dir = dir;
	len = skb->len < snaplen ? skb->len : snaplen;
	/* The verifier must see 1 <= size <= MAX_SNAP on the register passed
	 * to the helper: bound len - 1 and add the 1 back, with an empty asm
	 * so that clang does not fold the checks into another form. */
	if (len > 0) {
		__u32 n = len - 1;

		asm volatile("" : "+r"(n));
		if (n > MAX_SNAP - 1)
			n = MAX_SNAP - 1;
		len = n + 1;
		if (bpf_skb_load_bytes(skb, 0, e->data, len) < 0)
			len = 0;
	}
	e->cap_len = len;
	/* Variable-size output: header plus the captured bytes only. */
	if (bpf_ringbuf_output(&events, e, offsetof(struct event, data) + len, 0) < 0)
		count(CNT_DROPPED);
	else
		count(CNT_CAPTURED);
	return PASS;
}

SEC("tc")
int capture_ingress(struct __sk_buff *skb) { return capture(skb, DIR_INGRESS); }

SEC("tc")
int capture_egress(struct __sk_buff *skb) { return capture(skb, DIR_EGRESS); }

char __license[] SEC("license") = "Dual BSD/GPL";
