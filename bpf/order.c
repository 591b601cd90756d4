//go:build ignore

// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* fabemu order: per-flow TCP order measured in the kernel, RFC 4737 applied
 * to TCP byte sequence numbers, without copying any payload.
 *
 * It follows the user-space meter of fabemu's pcap reader (tracefmt/pcap,
 * order.go) within constant per-flow state. Each segment carrying sequence
 * space (payload, SYN, FIN) starts at s and ends at e = s + length, in
 * serial-number arithmetic modulo 2^32 (RFC 1982):
 *   - next is the highest end seen, RFC 4737's NextExp (section 3);
 *   - s >= next is in order; s > next also opens a gap, remembered as
 *     missing bytes in one of MAX_HOLES slots (a sequence discontinuity);
 *   - s < next and some of [s, min(e, next)) missing: reordered (section 3),
 *     the bytes are removed from the gaps;
 *   - s < next and no byte missing: a duplicate (section 3.6), for TCP a
 *     retransmission, counted apart;
 *   - the byte offset (section 4.4) of a reordered segment is the bytes
 *     already received above it, next - e minus those still missing; the
 *     flow keeps its maximum, the "maximum extent in bytes".
 * When the slots are full the lowest gap is forgotten, as the user-space
 * meter does past its 64 gaps; a late segment in a forgotten gap then counts
 * as a retransmission. Extent in arrivals (section 4.2) and late time need
 * a history of arrivals and are left to the user-space meter.
 *
 * The flow table is an LRU hash, so old flows are evicted rather than new
 * ones refused. Two CPUs can handle segments of one flow at once (a qdisc
 * releasing a delayed segment from a timer while the sender transmits
 * another, for instance), so updates take a spin lock. LRU hash values
 * cannot hold one, so the locks are striped: an array of LOCKS locks, the
 * flow's key hashed to pick one. */
#include "parse.h"

#define MAX_HOLES 64

struct flow_key {
	__u8 saddr[16], daddr[16];
	__u16 sport, dport;
	__u8 family, proto;
	__u8 pad[2];
};

struct hole {
	__u32 lo, hi; /* missing [lo, hi); lo == hi is a free slot */
};

struct flow_state {
	__u64 first_ns, last_ns;
	__u64 packets;    /* every TCP packet of the flow, ACKs included */
	__u64 bytes;      /* their lengths as the stack holds them */
	__u64 segments;   /* packets carrying sequence space */
	__u64 reordered;
	__u64 retrans;
	__u64 discs;      /* in-order segments that skipped bytes */
	__u64 forgotten;  /* gaps dropped for want of a slot */
	__u32 next;       /* NextExp, valid once started */
	__u32 max_byte_offset;
	__u32 started;
	__u32 dir;        /* direction of the first packet */
	struct hole holes[MAX_HOLES];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct flow_key);
	__type(value, struct flow_state);
} flows SEC(".maps");

#define LOCKS 1024

struct flow_lock {
	struct bpf_spin_lock lock;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LOCKS);
	__type(key, __u32);
	__type(value, struct flow_lock);
} locks SEC(".maps");

/* lock_of picks the flow's lock: a multiplicative hash of the key's words. */
static __always_inline struct flow_lock *lock_of(const struct flow_key *k)
{
	const __u32 *w = (const __u32 *)k;
	__u32 h = 0;

	for (int i = 0; i < (int)(sizeof(*k) / 4); i++)
		h = (h ^ w[i]) * 0x9e3779b1;
	h = (h >> 16) % LOCKS;
	return bpf_map_lookup_elem(&locks, &h);
}

/* Counters: TCP packets seen, and flows whose state could not be created. */
enum { OCNT_TCP, OCNT_NOSTATE, OCNT_MAX };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ocounters SEC(".maps");

static __always_inline void ocount(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&ocounters, &which);

	if (c)
		*c += 1;
}

/* rel is x's position relative to base, in serial arithmetic. */
static __always_inline __s64 rel(__u32 x, __u32 base) { return (__s32)(x - base); }

/* add_hole records the missing range [lo, hi) in a free slot, or in place
 * of the lowest gap when every slot is taken. */
static __always_inline void add_hole(struct flow_state *f, __u32 lo, __u32 hi)
{
	int victim = -1;
	__s64 low = 0;

	for (int i = 0; i < MAX_HOLES; i++) {
		struct hole *h = &f->holes[i];

		if (h->lo == h->hi) {
			victim = i;
			break;
		}
		if (victim < 0 || rel(h->lo, lo) < low) {
			victim = i;
			low = rel(h->lo, lo);
		}
	}
	if (victim < 0 || victim >= MAX_HOLES)
		return;
	if (f->holes[victim].lo != f->holes[victim].hi)
		f->forgotten++;
	f->holes[victim].lo = lo;
	f->holes[victim].hi = hi;
}

/* fill removes [lo, hi) from the gaps and returns how many bytes were
 * missing. A gap split in two needs a second slot; without one its upper
 * part is forgotten. */
static __always_inline __u32 fill(struct flow_state *f, __u32 lo, __u32 hi)
{
	__u32 got = 0;
	__u32 spill_lo = 0, spill_hi = 0;

	for (int i = 0; i < MAX_HOLES; i++) {
		struct hole *h = &f->holes[i];
		__u32 a, b;

		if (h->lo == h->hi)
			continue;
		a = rel(h->lo, lo) > 0 ? h->lo : lo; /* max(h.lo, lo) */
		b = rel(h->hi, hi) < 0 ? h->hi : hi; /* min(h.hi, hi) */
		if (rel(a, b) >= 0)
			continue;
		got += b - a;
		if (h->lo != a && b != h->hi) { /* split: keep [lo, a), move [b, hi) */
			spill_lo = b;
			spill_hi = h->hi;
			h->hi = a;
		} else if (h->lo != a) {
			h->hi = a;
		} else if (b != h->hi) {
			h->lo = b;
		} else {
			h->lo = h->hi = 0; /* filled */
		}
	}
	if (spill_lo != spill_hi)
		add_hole(f, spill_lo, spill_hi);
	return got;
}

/* missing counts the bytes of [lo, hi) still missing. */
static __always_inline __u32 missing(struct flow_state *f, __u32 lo, __u32 hi)
{
	__u32 n = 0;

	for (int i = 0; i < MAX_HOLES; i++) {
		struct hole *h = &f->holes[i];
		__u32 a, b;

		if (h->lo == h->hi)
			continue;
		a = rel(h->lo, lo) > 0 ? h->lo : lo;
		b = rel(h->hi, hi) < 0 ? h->hi : hi;
		if (rel(a, b) < 0)
			n += b - a;
	}
	return n;
}

static __always_inline void observe(struct flow_state *f, __u32 s, __u32 len)
{
	__u32 e = s + len, filled, above;

	f->segments++;
	if (!f->started || rel(s, f->next) >= 0) {
		if (f->started && rel(s, f->next) > 0) {
			f->discs++;
			add_hole(f, f->next, s);
		}
		f->started = 1;
		f->next = e;
		return;
	}
	filled = fill(f, s, rel(e, f->next) < 0 ? e : f->next);
	if (rel(e, f->next) > 0)
		f->next = e; /* new bytes ride along */
	if (filled == 0) {
		f->retrans++;
		return;
	}
	f->reordered++;
	above = f->next - e - missing(f, e, f->next);
	if ((__s32)above > 0 && above > f->max_byte_offset)
		f->max_byte_offset = above;
}

static __always_inline int order(struct __sk_buff *skb, __u32 dir)
{
	struct pkt p = {};
	struct flow_key k = {};
	struct flow_state *f;
	struct flow_lock *lk;
	struct tcphdr th;
	__u32 len;
	__u64 now;

	if (parse_l3l4(skb, &p) < 0 || p.proto != IPPROTO_TCP || !p.sport)
		return PASS;
	if (bpf_skb_load_bytes(skb, p.l4off, &th, sizeof(th)) < 0)
		return PASS;
	ocount(OCNT_TCP);
	__builtin_memcpy(k.saddr, p.saddr, 16);
	__builtin_memcpy(k.daddr, p.daddr, 16);
	k.sport = p.sport;
	k.dport = p.dport;
	k.family = p.family;
	k.proto = p.proto;

	f = bpf_map_lookup_elem(&flows, &k);
	if (!f) {
		/* A zeroed state, created without a 600-byte stack copy: insert
		 * from a per-CPU zero value would need another map, so insert
		 * the key with BPF_NOEXIST from a static empty state. */
		static const struct flow_state empty;

		if (bpf_map_update_elem(&flows, &k, &empty, BPF_NOEXIST) < 0 &&
		    !bpf_map_lookup_elem(&flows, &k)) {
			ocount(OCNT_NOSTATE);
			return PASS;
		}
		f = bpf_map_lookup_elem(&flows, &k);
		if (!f) {
			ocount(OCNT_NOSTATE);
			return PASS;
		}
		f->first_ns = bpf_ktime_get_ns();
		f->dir = dir;
	}
	lk = lock_of(&k);
	if (!lk)
		return PASS;
	/* Sequence space: payload, plus one each for SYN and FIN. */
	len = p.ip_end - p.l4off - th.doff * 4;
	if ((__s32)len < 0)
		len = 0;
	len += th.syn + th.fin;
	now = bpf_ktime_get_ns(); /* no helper calls under the lock */
	bpf_spin_lock(&lk->lock);
	f->last_ns = now;
	f->packets++;
	f->bytes += skb->len;
	if (len > 0)
		observe(f, bpf_ntohl(th.seq), len);
	bpf_spin_unlock(&lk->lock);
	return PASS;
}

SEC("tc")
int order_ingress(struct __sk_buff *skb) { return order(skb, DIR_INGRESS); }

SEC("tc")
int order_egress(struct __sk_buff *skb) { return order(skb, DIR_EGRESS); }

char __license[] SEC("license") = "Dual BSD/GPL";
