/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ICMP errors about spliced flows. Included by tc.bpf.c after its maps and
 * helpers (count, csum_add32, words_diff, deliver): one BPF object, so the
 * programs share the maps.
 *
 * What the load balancer receives from us (P->L) are rewritten upstream
 * segments (U->C). A router on the way to a remote load balancer answers a
 * segment too big for its next hop with ICMP "fragmentation needed" (ICMPv6
 * "packet too big"), or reports another error, quoting P->L, for which no
 * socket exists since the hand-off: the kernel would drop it, and the
 * upstream would keep sending segments that never arrive (a black hole on a
 * smaller-MTU path). At ingress the error becomes the one the upstream would
 * have received for its own segment:
 *   - outer destination P -> U; the source stays the router's (tcp_v4_err and
 *     tcp_v6_err read only the quote, and lo accepts foreign sources as it
 *     does for translated L->P segments);
 *   - quoted addresses and ports P->L -> U->C, seq (and ack, when quoted)
 *     back into conn2's space: the kernel ignores an error whose seq is not
 *     within the socket's snd_una..snd_nxt;
 *   - the quoted IPv4 header's checksum, the ICMP checksum (ICMPv6: with the
 *     pseudo header) and the outer IPv4 header checksum follow.
 * Then it is delivered as the data path delivers L->P segments (into lo
 * ingress for a remote load balancer), where the upstream's socket is.
 *
 * IPv4 only when lo takes it (icmp4_to_upstream): lo's route lookup drops an
 * IPv4 packet to 127.0.0.1 from a foreign source as a martian unless lo has
 * route_localnet and accept_local (the TCP data path never meets that
 * lookup: early demux hands its segments to the upstream's socket first).
 * Without them the error keeps its outer destination P, a local address,
 * and goes up the stack where it arrived: tcp_v4_err finds the upstream's
 * socket from the quote alone.
 *
 * The MTU (or pointer) in the error is kept: both connections are of one
 * family with the same TCP options, and the data path rewrites in place, so
 * a conn2 segment and its conn1 translation have the same size and layout.
 * The quoted window, options and TCP checksum are left as they are: no
 * receiver reads them, and the quote is often too short to hold them.
 *
 * The other direction, errors about conn2 segments (C->U), cannot happen:
 * the upstream listens on loopback (the routing requires it), so conn2 never
 * leaves the host and no router sees its segments.
 */
#ifndef MMP_TC_ICMP_H
#define MMP_TC_ICMP_H

/*
 * The errors that report what became of a segment. Redirects (about P's
 * route, not the upstream's), echo and the rest pass untranslated.
 */
#define ICMP_DEST_UNREACH 3 /* code 4: fragmentation needed, MTU in bytes 6..7 */
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAMETERPROB 12
#define ICMPV6_DEST_UNREACH 1
#define ICMPV6_PARAMPROB 4 /* 2 packet too big (MTU in bytes 4..7), 3 time exceeded */
#define ICMP_HLEN 8 /* type, code, checksum, 4 bytes of MTU/pointer/unused */
#define QUOTE_MIN_TCP 8 /* ports and seq: all the kernel reads, and all RFC 792 promises */
#define QUOTE_ACK_TCP 16 /* up to the flags and window: the ack and its flag */

/* Set by userspace before load: lo has route_localnet and accept_local (see above). */
const volatile bool icmp4_to_upstream = false;

/* An ICMP error quoting a TCP segment: offsets and stack copies of what changes. */
struct icmp_quote {
	__u32 icmp_off;
	__u32 in_l3_off; /* the quoted IP header */
	__u32 in_l4_off; /* the quoted TCP header */
	__u32 tcp_len; /* quoted TCP bytes read: QUOTE_MIN_TCP or QUOTE_ACK_TCP */
	__u8 family;
	__u32 outer_dst[4];
	__u32 in_ip[10]; /* the quoted IP header's first 20 (IPv4) or 40 (IPv6) bytes */
	__u32 in_tcp[4];
};

static __always_inline bool icmp_is_error(__u8 family, __u8 type)
{
	if (family == 4)
		return type == ICMP_DEST_UNREACH || type == ICMP_TIME_EXCEEDED || type == ICMP_PARAMETERPROB;
	return type >= ICMPV6_DEST_UNREACH && type <= ICMPV6_PARAMPROB;
}

/*
 * Locate the outer and the quoted headers and copy what may change. Returns
 * 0, or -1: not an error quoting a TCP segment of the same family, or the
 * quote is too short to name the segment (fewer than 8 bytes of TCP).
 */
static __always_inline int icmp_parse(struct __sk_buff *skb, struct icmp_quote *q)
{
	__u32 ip_end;
	__be16 proto;
	__u8 type, *in = (__u8 *)q->in_ip;

	__builtin_memset(q, 0, sizeof(*q));
	if (bpf_skb_load_bytes(skb, 12, &proto, sizeof(proto)))
		return -1;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) || ip.ihl < 5 ||
		    (ip.frag_off & bpf_htons(IP_MF | IP_OFFSET)))
			return -1;
		q->family = 4;
		q->icmp_off = ETH_HLEN + ip.ihl * 4;
		ip_end = ETH_HLEN + bpf_ntohs(ip.tot_len);
		q->outer_dst[0] = ip.daddr;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip6, sizeof(ip6)))
			return -1;
		q->family = 6;
		q->icmp_off = ETH_HLEN + sizeof(ip6);
		ip_end = q->icmp_off + bpf_ntohs(ip6.payload_len);
		__builtin_memcpy(q->outer_dst, &ip6.daddr, 16);
	} else {
		return -1;
	}
	/* Ethernet padding may follow the IP packet; a packet cut short is the kernel's to drop. */
	if (ip_end > skb->len)
		return -1;
	if (bpf_skb_load_bytes(skb, q->icmp_off, &type, 1) || !icmp_is_error(q->family, type))
		return -1;
	q->in_l3_off = q->icmp_off + ICMP_HLEN;
	if (q->family == 4) {
		if (bpf_skb_load_bytes(skb, q->in_l3_off, q->in_ip, 20))
			return -1;
		/* Version, header length, TCP, and the first fragment (the one holding the TCP header). */
		if ((in[0] >> 4) != 4 || (in[0] & 15) < 5 || in[9] != IPPROTO_TCP || ((in[6] & 0x1f) | in[7]))
			return -1;
		q->in_l4_off = q->in_l3_off + (in[0] & 15) * 4;
	} else {
		if (bpf_skb_load_bytes(skb, q->in_l3_off, q->in_ip, 40))
			return -1;
		/* Extension headers are not followed: the data path never emits them. */
		if ((in[0] >> 4) != 6 || in[6] != IPPROTO_TCP)
			return -1;
		q->in_l4_off = q->in_l3_off + 40;
	}
	if (q->in_l4_off + QUOTE_ACK_TCP <= ip_end)
		q->tcp_len = QUOTE_ACK_TCP;
	else if (q->in_l4_off + QUOTE_MIN_TCP <= ip_end)
		q->tcp_len = QUOTE_MIN_TCP;
	else
		return -1;
	if (q->tcp_len == QUOTE_ACK_TCP)
		return bpf_skb_load_bytes(skb, q->in_l4_off, q->in_tcp, QUOTE_ACK_TCP) ? -1 : 0;
	return bpf_skb_load_bytes(skb, q->in_l4_off, q->in_tcp, QUOTE_MIN_TCP) ? -1 : 0;
}

/*
 * Rewrite the error in place into the one about the upstream's segment (see
 * the top of this file). Returns 0, or -1 when the packet could not be
 * written.
 */
static __always_inline int icmp_rewrite(struct __sk_buff *skb, struct icmp_quote *q, const struct mmp_tc_flow *flow,
					bool to_upstream)
{
	/* The upstream's segments go U->C: the reverse of the up direction's output tuple C->U. */
	const struct mmp_tc_tuple *cu = &flow->up.out;
	__u32 old_tcp[3], new_tcp[3], new_addr[8], *old_addr;
	__u32 icmp_csum_off = q->icmp_off + 2;
	__u32 diff, addr_diff = 0, outer_diff = 0;
	int naddr = q->family == 4 ? 2 : 8;
	int ntcp = q->tcp_len == QUOTE_ACK_TCP ? 3 : 2;
	__u8 *tcp = (__u8 *)q->in_tcp;

	/* IPv4: saddr and daddr at offset 12 of the header; IPv6: at 8. Both adjacent. */
	old_addr = q->family == 4 ? &q->in_ip[3] : &q->in_ip[2];
	__builtin_memcpy(old_tcp, q->in_tcp, sizeof(old_tcp));
	__builtin_memcpy(new_tcp, q->in_tcp, sizeof(new_tcp));
	__builtin_memcpy((__u8 *)new_tcp, &cu->dport, 2);
	__builtin_memcpy((__u8 *)new_tcp + 2, &cu->sport, 2);
	/* conn1's seq is conn2's plus down.seq_delta (mod 2^32); ack likewise with down.ack_delta. */
	wr32((__u8 *)&new_tcp[1], rd32(tcp + 4) - flow->down.seq_delta);
	if (ntcp == 3 && (tcp[13] & TH_ACK))
		wr32((__u8 *)&new_tcp[2], rd32(tcp + 8) - flow->down.ack_delta);
	if (q->family == 4) {
		__builtin_memcpy(new_addr, cu->daddr, 4);
		__builtin_memcpy(&new_addr[1], cu->saddr, 4);
	} else {
		__builtin_memcpy(new_addr, cu->daddr, 16);
		__builtin_memcpy(&new_addr[4], cu->saddr, 16);
	}
	for (int i = 0; i < 8; i++) {
		if (i >= naddr)
			break;
		addr_diff = csum_add32(addr_diff, ~old_addr[i]);
		addr_diff = csum_add32(addr_diff, new_addr[i]);
	}
	/* Everything inside the ICMP message that changes, for its checksum. */
	diff = words_diff(old_tcp, new_tcp, ntcp, addr_diff);
	if (q->family == 4) {
		/* The quoted IPv4 header's checksum follows its addresses: ~(~old + diff). */
		__u16 old_csum = ((__u16 *)q->in_ip)[5];
		__u16 new_csum = mmp_csum_fold(csum_add32((__u16)~old_csum, addr_diff));

		diff = csum_add32(diff, (__u16)~old_csum);
		diff = csum_add32(diff, new_csum);
		if (bpf_skb_store_bytes(skb, q->in_l3_off + 10, &new_csum, 2, 0) ||
		    bpf_skb_store_bytes(skb, q->in_l3_off + 12, new_addr, 8, 0))
			return -1;
	} else if (bpf_skb_store_bytes(skb, q->in_l3_off + 8, new_addr, 32, 0)) {
		return -1;
	}
	if (ntcp == 3) {
		if (bpf_skb_store_bytes(skb, q->in_l4_off, new_tcp, 12, 0))
			return -1;
	} else if (bpf_skb_store_bytes(skb, q->in_l4_off, new_tcp, 8, 0)) {
		return -1;
	}
	if (bpf_l4_csum_replace(skb, icmp_csum_off, 0, diff, 0))
		return -1;

	/* The outer destination: P becomes U. */
	if (!to_upstream)
		return 0;
	if (q->family == 4)
		return bpf_skb_store_bytes(skb, ETH_HLEN + 16, cu->daddr, 4, 0) ||
		       bpf_l3_csum_replace(skb, ETH_HLEN + 10, q->outer_dst[0], *(__u32 *)cu->daddr, 4) ?
			       -1 : 0;
	for (int i = 0; i < 4; i++) {
		outer_diff = csum_add32(outer_diff, ~q->outer_dst[i]);
		outer_diff = csum_add32(outer_diff, ((__u32 *)cu->daddr)[i]);
	}
	if (bpf_skb_store_bytes(skb, ETH_HLEN + 24, cu->daddr, 16, 0))
		return -1;
	/* ICMPv6's checksum covers the pseudo header (RFC 4443 2.3); BPF_F_IPV6 as in commit(). */
	return bpf_l4_csum_replace(skb, icmp_csum_off, 0, outer_diff, BPF_F_PSEUDO_HDR | BPF_F_IPV6) ? -1 : 0;
}

/*
 * An ICMP/ICMPv6 packet at ingress (parse() said so). A spliced flow's error
 * is rewritten and delivered; anything else is not ours (TC_ACT_UNSPEC).
 * Not inlined: TCP segments never get here, and their path stays as short.
 */
static __noinline int handle_icmp(struct __sk_buff *skb)
{
	struct icmp_quote q;
	struct mmp_tc_tuple key;
	struct mmp_tc_tuple_val *tv;
	struct mmp_tc_flow *flow;
	bool to_upstream;
	int ret;

	if (icmp_parse(skb, &q))
		return TC_ACT_UNSPEC;
	/*
	 * The quoted segment went P->L. The proxy's own P->L tuple is gone since
	 * the switch; the flow is found by the reverse, L->P, the UP tuple.
	 */
	__builtin_memset(&key, 0, sizeof(key));
	key.family = q.family;
	__builtin_memcpy(&key.sport, (__u8 *)q.in_tcp + 2, 2);
	__builtin_memcpy(&key.dport, (__u8 *)q.in_tcp, 2);
	if (q.family == 4) {
		__builtin_memcpy(key.saddr, &q.in_ip[4], 4);
		__builtin_memcpy(key.daddr, &q.in_ip[3], 4);
	} else {
		__builtin_memcpy(key.saddr, &q.in_ip[6], 16);
		__builtin_memcpy(key.daddr, &q.in_ip[2], 16);
	}
	/* Sent to the quoted source, P, or it is not about our segment. */
	for (int i = 0; i < 4; i++)
		if (q.outer_dst[i] != ((__u32 *)key.daddr)[i])
			return TC_ACT_UNSPEC;
	tv = bpf_map_lookup_elem(&mmp_tc_tuples, &key);
	if (!tv || tv->role != MMP_TC_ROLE_UP)
		return TC_ACT_UNSPEC;
	flow = bpf_map_lookup_elem(&mmp_tc_flows, &tv->flow);
	/*
	 * Before the switch the proxy's conn1 socket still exists and takes the
	 * error itself; after it, the upstream's next segment that is too big
	 * draws a new error, and that one is translated.
	 */
	if (!flow || flow->mode != MMP_TC_MODE_SPLICE)
		return TC_ACT_UNSPEC;
	/* From the load balancer's side, as its segments are (tc.bpf.c, handle). */
	if (skb->ifindex != flow->up.in_ifindex) {
		count(MMP_TC_CNT_WRONG_IFACE);
		return TC_ACT_UNSPEC;
	}
	to_upstream = q.family == 6 || icmp4_to_upstream;
	ret = icmp_rewrite(skb, &q, flow, to_upstream);
	if (ret) {
		count(MMP_TC_CNT_REDIRECT_FAILED);
		return TC_ACT_SHOT;
	}
	count(MMP_TC_CNT_ICMP_TRANSLATED);
	/* Still addressed to P: delivered locally from here, wherever it arrived. */
	return to_upstream ? deliver(skb, &flow->up) : TC_ACT_OK;
}

#endif
