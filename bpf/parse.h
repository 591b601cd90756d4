/* Shared packet parsing for fabemu's tc programs.
 *
 * Only uapi headers and libbpf's helper headers are used, so no vmlinux.h
 * is needed. Headers are read with bpf_skb_load_bytes rather than direct
 * packet access: it copes with non-linear skbs (GSO super-frames on veth)
 * and keeps the verifier happy without bounds juggling.
 */
#ifndef FABEMU_PARSE_H
#define FABEMU_PARSE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* The tc verdict that lets the frame go on untouched. TC_ACT_UNSPEC (-1)
 * has the same value as tcx's TCX_NEXT, so one program serves both the tcx
 * link and the clsact fallback. */
#define PASS TC_ACT_UNSPEC

/* Directions, as user space reads them. */
#define DIR_INGRESS 0
#define DIR_EGRESS 1

/* What parse_l3l4 found. Addresses are 16 bytes; IPv4 uses the first 4. */
struct pkt {
	__u8 family; /* 4, 6, or 0 when not IP */
	__u8 proto;  /* IP protocol, after IPv6 extension headers are NOT walked */
	__u16 sport, dport; /* host order; 0 without ports */
	__u8 saddr[16], daddr[16];
	__u32 l4off;   /* offset of the transport header */
	__u32 ip_end;  /* offset of the end of the IP datagram */
};

/* parse_l3l4 reads the Ethernet, IP and (for TCP and UDP) port headers.
 * It returns 0 on success, -1 when the frame is not IP or is cut short.
 * A fragment other than the first carries no ports and keeps them 0. */
static __always_inline int parse_l3l4(struct __sk_buff *skb, struct pkt *p)
{
	struct ethhdr eth;
	__u32 off = sizeof(eth);

	if (bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)) < 0)
		return -1;
	if (eth.h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, off, &ip, sizeof(ip)) < 0)
			return -1;
		p->family = 4;
		p->proto = ip.protocol;
		__builtin_memcpy(p->saddr, &ip.saddr, 4);
		__builtin_memcpy(p->daddr, &ip.daddr, 4);
		/* tot_len is 0 for BIG TCP super-frames: use the skb length. */
		p->ip_end = ip.tot_len ? off + bpf_ntohs(ip.tot_len) : skb->len;
		if (ip.frag_off & bpf_htons(0x1fff)) /* not the first fragment */
			return 0;
		off += ip.ihl * 4;
	} else if (eth.h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, off, &ip6, sizeof(ip6)) < 0)
			return -1;
		p->family = 6;
		p->proto = ip6.nexthdr;
		__builtin_memcpy(p->saddr, &ip6.saddr, 16);
		__builtin_memcpy(p->daddr, &ip6.daddr, 16);
		p->ip_end = ip6.payload_len ? off + sizeof(ip6) + bpf_ntohs(ip6.payload_len) : skb->len;
		off += sizeof(ip6);
	} else {
		return -1;
	}
	p->l4off = off;
	if (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) {
		__be16 ports[2];

		if (bpf_skb_load_bytes(skb, off, ports, sizeof(ports)) < 0)
			return -1;
		p->sport = bpf_ntohs(ports[0]);
		p->dport = bpf_ntohs(ports[1]);
	}
	return 0;
}

#endif
