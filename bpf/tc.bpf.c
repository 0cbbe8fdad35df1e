// SPDX-License-Identifier: GPL-2.0
/*
 * The tc engine's data plane: rewrite every packet of a spliced flow from one
 * TCP connection into the other (docs/DESIGN.md §3b).
 *
 * Attached (direct action) at lo ingress and, for a load balancer that is not
 * on this host, at ingress and egress of the interfaces that carry its
 * traffic. For a packet whose 4-tuple is in mmp_tc_tuples:
 *   HOLD mode   the proxy's own segments get window 0, so both peers stop by
 *               flow control while userspace drains the sockets;
 *   SPLICE mode the peers' segments are rewritten: addresses, ports, seq, ack,
 *               SACK edges, timestamps and window; then either continue (both
 *               connections on lo) or are redirected (into lo, or out through
 *               the load balancer's interface).
 * At ingress, an ICMP error quoting a spliced flow's P->L segment (a router's
 * "fragmentation needed" on the way to a remote load balancer) is rewritten
 * into the error about the upstream's segment and delivered to it
 * (tc_icmp.h), so PMTU discovery works across the splice.
 *
 * Headers are copied to the stack, changed there, diffed word by word for the
 * checksums and stored back in one call each, so no packet pointer has to
 * survive a helper that changes packet data.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "common.h"
#include "mmp_steer.h"
#include "mmp_tc.h"
#include "skb_kern.h"

#define TCP_HLEN 20
#define NEXTHDR_HOP 0 /* IPv6 hop-by-hop options */
#define TCP_MAX_OPTS 40
#define IPPROTO_ICMPV6 IPPROTO_ICMPV6_NR

/* parse() results besides 0 (a TCP segment) and -1 (not ours). */
#define PARSE_FRAGMENT (-2)
#define PARSE_ICMP (-3)
#define PARSE_BAD_IP (-4) /* IP version not the ethertype's, or an IPv4 IHL under 5 */

#define TCPOPT_EOL 0
#define TCPOPT_NOP 1
#define TCPOPT_SACK 5
#define TCPOPT_TIMESTAMP 8

/* Flags in byte 13 of the TCP header. */
#define TH_FIN 0x01
#define TH_SYN 0x02
#define TH_RST 0x04
#define TH_ACK 0x10

/* Sized by userspace (--tc-max-flows) between open and load. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4 * MMP_TC_MAX_FLOWS_DEFAULT);
	__type(key, struct mmp_tc_tuple);
	__type(value, struct mmp_tc_tuple_val);
} mmp_tc_tuples SEC(".maps");

/* No prealloc: an update replaces the element under RCU, so the switch from
 * HOLD to SPLICE is seen whole by every CPU. In SPLICE the programs write the
 * entry's stats in place; userspace no longer replaces it (include/mmp_tc.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MMP_TC_MAX_FLOWS_DEFAULT);
	__type(key, __u64);
	__type(value, struct mmp_tc_flow);
} mmp_tc_flows SEC(".maps");

/* Looked up only while a flow's `carrying` has a bit set: the first round trips after its switch. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MMP_TC_MAX_FLOWS_DEFAULT);
	__type(key, __u64);
	__type(value, struct mmp_tc_carry);
} mmp_tc_carry SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MMP_TC_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} mmp_tc_counters SEC(".maps");

/*
 * 60 bytes of header, plus slack so that any index masked with & 63, plus
 * the 8 bytes read from it, stays inside: the verifier then accepts
 * variable offsets without tracking each bound.
 */
struct tcp_hdr_copy {
	__u8 h[72];
};

#define IP_TAIL_LEN 32
#define IP4_TAIL 10 /* IPv4 header bytes 10..19: checksum, saddr, daddr */

/* Where things are in the packet, and stack copies of what may change. */
struct pkt {
	/* Lives in a per-CPU scratch map: variable offsets into the stack are refused. */
	__u32 l3_off;
	__u32 l4_off;
	__u32 tcp_len; /* header incl. options */
	__u32 payload;
	__u32 ip_end; /* offset of the end of the IP packet */
	__u8 family;
	__u16 ip_check; /* IPv4: the header checksum as it came */
	struct mmp_tc_tuple tuple;
	struct tcp_hdr_copy old;
	/*
	 * The IP header's end, right before new, so that commit() writes it
	 * and the TCP header with one store: IPv4's checksum and addresses
	 * (header bytes 10..19) in the last 10 bytes, IPv6's addresses (bytes
	 * 8..39) in all 32.
	 */
	__u8 ip_tail[IP_TAIL_LEN];
	struct tcp_hdr_copy new;
};

_Static_assert(__builtin_offsetof(struct pkt, new) - __builtin_offsetof(struct pkt, ip_tail) == IP_TAIL_LEN,
	       "ip_tail must end where new begins");
_Static_assert(__builtin_offsetof(struct pkt, new) % 4 == 0, "new is read as 32-bit words");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pkt);
} mmp_tc_scratch SEC(".maps");

/* Written by userspace through the skeleton's mmap (include/mmp_tc.h). */
__u64 mmp_tc_ports[MMP_TC_PORT_WORDS];

static __always_inline bool port_marked(__u16 port)
{
	return (mmp_tc_ports[port / 64] >> (port % 64)) & 1;
}

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&mmp_tc_counters, &idx);

	if (v)
		*v += 1;
}

/* x & 63 that clang cannot drop: the verifier needs to see the bound. */
static __always_inline __u32 bound63(__u32 x)
{
	asm volatile("%0 &= 63" : "+r"(x));
	return x;
}

static __always_inline __u32 csum_add32(__u32 a, __u32 b)
{
	__u32 r = a + b;

	return r + (r < a);
}

/* Ones' complement diff of two equally aligned buffers of n 32-bit words. */
static __always_inline __u32 words_diff(const __u32 *old, const __u32 *new, int n, __u32 acc)
{
	for (int i = 0; i < (TCP_HLEN + TCP_MAX_OPTS) / 4; i++) {
		if (i >= n)
			break;
		if (old[i] != new[i]) {
			acc = csum_add32(acc, ~old[i]);
			acc = csum_add32(acc, new[i]);
		}
	}
	return acc;
}

static __always_inline __u32 rd32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

static __always_inline void wr32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static __always_inline int load_len(struct __sk_buff *skb, __u32 off, void *buf, __u32 len);

/*
 * Copy len bytes (a multiple of 4, at most 40) at packet offset off into buf.
 * Straight from the linear data when they are all there, as on lo and with
 * most NICs: word loads instead of a bpf_skb_load_bytes call, twice per
 * segment (docs/DESIGN.md §3b). Through the helper otherwise. 0 or -1.
 */
static __always_inline int copy_words(struct __sk_buff *skb, __u32 off, __u8 *buf, __u32 len)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 *dst = (__u32 *)buf;

	if (len > TCP_MAX_OPTS)
		return -1;
	/* Past a long IPv6 hop-by-hop header: the helper, as before. */
	if (off > 255)
		return load_len(skb, off, buf, len);
	/* The bound again where the verifier sees it, so data + off is a packet pointer. */
	asm volatile("%0 &= 255" : "+r"(off));
	if (data + off + len > data_end)
		return load_len(skb, off, buf, len);
#pragma unroll
	for (int i = 0; i < TCP_MAX_OPTS / 4; i++) {
		const __u32 *src = data + off + i * 4;

		if (i * 4 >= len)
			break;
		if ((void *)(src + 1) > data_end)
			return -1;
		dst[i] = *src;
	}
	return 0;
}

/*
 * Parse Ethernet/IP/TCP into p. Returns 0, PARSE_FRAGMENT (an IPv4 fragment),
 * PARSE_ICMP (an ICMP/ICMPv6 packet, parsed by handle_icmp), PARSE_BAD_IP (a
 * malformed IP header) or -1 for anything else not handled.
 */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	__u8 doff;

	if ((void *)(eth + 1) > data_end)
		return -1;
	p->l3_off = ETH_HLEN;
	__builtin_memset(&p->tuple, 0, sizeof(p->tuple));
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return -1;
		/*
		 * The kernel's ip_rcv drops these: translated, such a frame
		 * would move the flow's state (an RST, a FIN) with a segment
		 * that no endpoint receives, and with IHL < 5 its TCP header
		 * would be read from inside the IP header (docs/DESIGN.md §3c,
		 * "Malformed IP headers").
		 */
		if (ip->version != 4 || ip->ihl < 5)
			return PARSE_BAD_IP;
		/* TCP is decided first: the ICMP test costs TCP packets nothing. */
		if (ip->protocol != IPPROTO_TCP)
			return ip->protocol == IPPROTO_ICMP ? PARSE_ICMP : -1;
		if (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET))
			return PARSE_FRAGMENT;
		p->family = 4;
		p->l4_off = ETH_HLEN + ip->ihl * 4;
		p->ip_check = ip->check;
		__builtin_memcpy(p->tuple.saddr, &ip->saddr, 4);
		__builtin_memcpy(p->tuple.daddr, &ip->daddr, 4);
		p->ip_end = ETH_HLEN + bpf_ntohs(ip->tot_len);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		__u8 nexthdr;

		if ((void *)(ip6 + 1) > data_end)
			return -1;
		if (ip6->version != 6)
			return PARSE_BAD_IP;
		p->family = 6;
		p->l4_off = ETH_HLEN + sizeof(*ip6);
		nexthdr = ip6->nexthdr;
		/*
		 * BIG TCP: GSO packets over 64 KiB carry a hop-by-hop jumbo
		 * header (RFC 2675) before TCP. Other extension headers are
		 * not handled: such packets pass untouched.
		 */
		if (nexthdr == NEXTHDR_HOP) {
			struct ipv6_opt_hdr *hbh = (void *)(ip6 + 1);

			if ((void *)(hbh + 1) > data_end)
				return -1;
			nexthdr = hbh->nexthdr;
			p->l4_off += (hbh->hdrlen + 1) * 8;
		}
		if (nexthdr != IPPROTO_TCP)
			return ip6->nexthdr == IPPROTO_ICMPV6 ? PARSE_ICMP : -1;
		__builtin_memcpy(p->tuple.saddr, &ip6->saddr, 16);
		__builtin_memcpy(p->tuple.daddr, &ip6->daddr, 16);
		p->ip_end = bpf_ntohs(ip6->payload_len) ? ETH_HLEN + sizeof(*ip6) + bpf_ntohs(ip6->payload_len) : 0;
	} else {
		return -1;
	}
	p->tuple.family = p->family;
	if (copy_words(skb, p->l4_off, p->old.h, TCP_HLEN))
		return -1;
	p->tuple.sport = *(__be16 *)&p->old.h[0];
	p->tuple.dport = *(__be16 *)&p->old.h[2];
	doff = p->old.h[12] >> 4;
	if (doff < 5 || doff > 15)
		return -1;
	p->tcp_len = doff * 4;
	/*
	 * The IP length, not skb->len: short frames from a NIC still carry their
	 * Ethernet padding here. BIG TCP GSO packets on lo have a 0 length field:
	 * then skb->len is right.
	 */
	if (p->ip_end <= ETH_HLEN || p->ip_end > skb->len)
		p->ip_end = skb->len;
	if (p->ip_end < p->l4_off + p->tcp_len)
		return -1;
	p->payload = p->ip_end - p->l4_off - p->tcp_len;
	return 0;
}

/*
 * Helpers take constant sizes best: the TCP header is 20..60 bytes in steps
 * of 4, so dispatch to one call per possible length.
 */
#define CASE_LOAD(n)                                                              \
	case n:                                                                   \
		return bpf_skb_load_bytes(skb, off, buf, n) ? -1 : 0
/* extra: a constant once inlined, the header bytes stored ahead of the TCP header. */
#define CASE_STORE(n)                                                             \
	case n:                                                                   \
		return bpf_skb_store_bytes(skb, off, buf, n + extra, 0) ? -1 : 0

static __always_inline int load_len(struct __sk_buff *skb, __u32 off, void *buf, __u32 len)
{
	switch (len) {
	case 0:
		return 0;
	CASE_LOAD(4); CASE_LOAD(8); CASE_LOAD(12); CASE_LOAD(16); CASE_LOAD(20);
	CASE_LOAD(24); CASE_LOAD(28); CASE_LOAD(32); CASE_LOAD(36); CASE_LOAD(40);
	}
	return -1;
}

/*
 * Store extra bytes of IP header (0; IPv4's bytes 10..19, IP4_TAIL; IPv6's
 * addresses, IP_TAIL_LEN) followed by a TCP header of tcp_len bytes.
 */
static __always_inline int store_len(struct __sk_buff *skb, __u32 off, void *buf, __u32 tcp_len, __u32 extra)
{
	switch (tcp_len) {
	CASE_STORE(20); CASE_STORE(24); CASE_STORE(28); CASE_STORE(32); CASE_STORE(36); CASE_STORE(40);
	CASE_STORE(44); CASE_STORE(48); CASE_STORE(52); CASE_STORE(56); CASE_STORE(60);
	}
	return -1;
}

/* Copy the TCP options (after parse) into p->old. Returns 0 or -1. */
static __always_inline int load_options(struct __sk_buff *skb, struct pkt *p)
{
	return copy_words(skb, p->l4_off + TCP_HLEN, p->old.h + TCP_HLEN, p->tcp_len - TCP_HLEN);
}

/* Where the timestamp and SACK options are (indices into h[]; 0 = absent). */
struct opt_scan {
	__u32 off; /* into the options */
	__u32 optlen;
	__u32 ts; /* index of TSval */
	__u32 sack; /* index of the first SACK edge */
	__u32 sack_len; /* bytes of edges */
};

/* One option per call, from bpf_loop: verified once instead of per iteration. */
static long scan_option(__u32 i, void *ctx)
{
	struct opt_scan *o = ctx;
	__u32 zero = 0;
	struct pkt *p = bpf_map_lookup_elem(&mmp_tc_scratch, &zero);
	__u8 kind, len;

	if (!p || o->off >= o->optlen)
		return 1;
	kind = p->old.h[bound63(TCP_HLEN + o->off)];
	if (kind == TCPOPT_EOL)
		return 1;
	if (kind == TCPOPT_NOP) {
		o->off++;
		return 0;
	}
	len = p->old.h[bound63(TCP_HLEN + o->off + 1)];
	if (len < 2 || o->off + len > o->optlen)
		return 1;
	if (kind == TCPOPT_TIMESTAMP && len == 10)
		o->ts = TCP_HLEN + o->off + 2;
	else if (kind == TCPOPT_SACK && len > 2)
		o->sack = TCP_HLEN + o->off + 2, o->sack_len = len - 2;
	o->off += len;
	return 0;
}

static __always_inline void scan_options(struct pkt *p, struct opt_scan *o)
{
	__builtin_memset(o, 0, sizeof(*o));
	o->optlen = p->tcp_len - TCP_HLEN;
	/*
	 * Most segments carry exactly NOP NOP TS (Linux puts it first): found
	 * without the loop, which costs a call per option. Anything else is
	 * scanned from the start, so that the loop is always entered in the
	 * same state (the verifier explores its callback once per entry state).
	 */
	if (o->optlen == 12 && p->old.h[TCP_HLEN] == TCPOPT_NOP && p->old.h[TCP_HLEN + 1] == TCPOPT_NOP &&
	    p->old.h[TCP_HLEN + 2] == TCPOPT_TIMESTAMP && p->old.h[TCP_HLEN + 3] == 10) {
		o->ts = TCP_HLEN + 4;
		return;
	}
	bpf_loop(TCP_MAX_OPTS, scan_option, o, 0);
}

/*
 * Rewrite timestamps and SACK edges in p->new. tsecr_known = 0 zeroes TSecr
 * (an echo of a frozen socket's clock means nothing to the new receiver).
 */
static __always_inline void rewrite_options(struct pkt *p, const struct opt_scan *o, __u32 tsval_delta,
					    __u32 tsecr_delta, int tsecr_known, __u32 ack_delta, int has_ack)
{
	if (o->ts) {
		__u8 *ts = &p->new.h[bound63(o->ts)];

		wr32(ts, rd32(ts) + tsval_delta);
		if (has_ack)
			wr32(ts + 4, tsecr_known ? rd32(ts + 4) + tsecr_delta : 0);
	}
	if (o->sack && has_ack) {
		/* Up to 4 blocks of left/right edges, all in the ack space. */
		for (int e = 0; e < 8; e++) {
			if (e * 4 + 4 > o->sack_len)
				break;
			__u8 *edge = &p->new.h[bound63(o->sack + e * 4)];

			wr32(edge, rd32(edge) + ack_delta);
		}
	}
}

/*
 * Store the new TCP header and addresses, then fix the checksums. Returns 0 or -1.
 *
 * A segment sent on this host (CHECKSUM_PARTIAL: every segment on lo) has
 * only the pseudo header's sum in its checksum field, and only the address
 * change moves that: the new sum goes into the header stored anyway, as
 * bpf_l4_csum_replace(BPF_F_PSEUDO_HDR) would compute it, and no checksum
 * helper runs (docs/DESIGN.md §3b, "No checksum helper").
 */
static __always_inline int commit(struct __sk_buff *skb, struct pkt *p, const struct mmp_tc_tuple *out)
{
	__u32 tcp_check_off = p->l4_off + 16;
	__u32 ndiff = 0, adiff = 0;
	int naddr = p->family == 4 ? 1 : 4;
	__u32 *os = (__u32 *)p->tuple.saddr, *od = (__u32 *)p->tuple.daddr;
	__u32 *ns = (__u32 *)out->saddr, *nd = (__u32 *)out->daddr;
	bool partial = mmp_csum_partial(skb);

	if (!partial)
		ndiff = words_diff((__u32 *)p->old.h, (__u32 *)p->new.h, p->tcp_len / 4, 0);
	for (int i = 0; i < 4; i++) {
		if (i >= naddr)
			break;
		adiff = csum_add32(adiff, ~os[i]);
		adiff = csum_add32(adiff, ns[i]);
		adiff = csum_add32(adiff, ~od[i]);
		adiff = csum_add32(adiff, nd[i]);
	}
	if (partial && adiff) {
		__u16 seed;

		__builtin_memcpy(&seed, &p->new.h[16], 2);
		seed = ~mmp_csum_fold(csum_add32(adiff, seed));
		__builtin_memcpy(&p->new.h[16], &seed, 2);
	}
	if (p->family == 4 && p->l4_off == p->l3_off + 20) {
		/*
		 * No IP options: the addresses end where TCP starts, so one
		 * store takes the IP checksum, the addresses and the TCP
		 * header; the IP checksum updated here as
		 * bpf_l3_csum_replace would (RFC 1624: ~(~HC + ~m + m')).
		 */
		__u16 check = mmp_csum_fold(csum_add32(adiff, (__u16)~p->ip_check));

		__u8 *tail = &p->ip_tail[IP_TAIL_LEN - IP4_TAIL];

		__builtin_memcpy(tail, &check, 2);
		__builtin_memcpy(tail + 2, &ns[0], 4);
		__builtin_memcpy(tail + 6, &nd[0], 4);
		if (store_len(skb, p->l3_off + 10, tail, p->tcp_len, IP4_TAIL))
			return -1;
	} else if (p->family == 6 && p->l4_off == p->l3_off + 40) {
		/* No hop-by-hop header: the addresses end where TCP starts too. */
		__builtin_memcpy(p->ip_tail, out->saddr, 16);
		__builtin_memcpy(p->ip_tail + 16, out->daddr, 16);
		if (store_len(skb, p->l3_off + 8, p->ip_tail, p->tcp_len, IP_TAIL_LEN))
			return -1;
	} else if (store_len(skb, p->l4_off, p->new.h, p->tcp_len, 0)) {
		return -1;
	} else if (p->family == 4) {
		/* saddr and daddr are adjacent at offset 12 of the IPv4 header. */
		__u32 addrs[2] = { ns[0], nd[0] };

		if (bpf_skb_store_bytes(skb, p->l3_off + 12, addrs, 8, 0) ||
		    bpf_l3_csum_replace(skb, p->l3_off + 10, 0, adiff, 0))
			return -1;
	} else {
		if (bpf_skb_store_bytes(skb, p->l3_off + 8, out->saddr, 16, 0) ||
		    bpf_skb_store_bytes(skb, p->l3_off + 24, out->daddr, 16, 0))
			return -1;
	}
	if (partial)
		return 0;
	/* BPF_F_IPV6: on a CHECKSUM_COMPLETE skb an IPv6 address change cancels out in skb->csum. */
	if (adiff && bpf_l4_csum_replace(skb, tcp_check_off, 0, adiff,
					 BPF_F_PSEUDO_HDR | (p->family == 6 ? BPF_F_IPV6 : 0)))
		return -1;
	if (ndiff && bpf_l4_csum_replace(skb, tcp_check_off, 0, ndiff, 0))
		return -1;
	return 0;
}

/* HOLD: the proxy's own segment advertises a zero window. */
static __always_inline int hold(struct __sk_buff *skb, struct pkt *p)
{
	__u32 old_word, new_word;

	if (p->old.h[14] == 0 && p->old.h[15] == 0)
		return TC_ACT_OK;
	/* Bytes 12..15: data offset, flags, window. */
	__builtin_memcpy(&old_word, &p->old.h[12], 4);
	p->new.h[14] = 0;
	p->new.h[15] = 0;
	__builtin_memcpy(&new_word, &p->new.h[12], 4);
	if (bpf_skb_store_bytes(skb, p->l4_off + 14, &p->new.h[14], 2, 0) ||
	    bpf_l4_csum_replace(skb, p->l4_off + 16, 0, csum_add32(~old_word, new_word), 0))
		return TC_ACT_OK;
	count(MMP_TC_CNT_HELD);
	return TC_ACT_OK;
}

/*
 * Is seq where the receiver's kernel would take a segment of this direction:
 * within [snd_nxt - (wnd + 64 KiB), snd_nxt + wnd]? A blind guess lands
 * there no more often than it would pass the endpoint's own check.
 */
static __always_inline bool acceptable(const struct mmp_tc_stats *st, int dir, __u32 seq)
{
	__u32 wnd = st->rcv_wnd[dir & 1], back = wnd + 65536;

	return seq - (st->snd_nxt[dir & 1] - back) <= wnd + back;
}

/*
 * Does this segment acknowledge only what the other direction's sender could
 * have sent (RFC 5961 §5)? ack, translated into that sender's space, must lie
 * where acceptable() takes a seq of the other direction: [snd_nxt - (wnd +
 * 64 KiB), snd_nxt + wnd], wnd being what this segment's sender last
 * advertised. Below: a receiver that never shrinks its window (Linux does
 * not) has at most that much unacknowledged in flight to it; the 64 KiB take
 * reordered ACKs and the window's scaling rounding. Above: bytes the other
 * sender sent that were not counted here (two CPUs updating snd_nxt at once
 * may lose one update), which it could only send into that window; the ACK
 * then brings snd_nxt up to them (update_stats). A segment without ACK is
 * dropped by an established endpoint: not acceptable either (docs/DESIGN.md
 * §3c, "ACK acceptability").
 */
static __always_inline bool ack_acceptable(const struct mmp_tc_stats *st, int dir, __u8 flags, __u32 ack)
{
	if (!(flags & TH_ACK))
		return false;
	return acceptable(st, dir ^ 1, ack);
}

/*
 * Counters, and the state that judges later RSTs and FINs: only segments the
 * receiver would accept, by seq and by ACK, move snd_nxt, set a FIN or the
 * other direction's window: a blind attacker must guess both numbers to move
 * it, as to make the endpoint take its segment (docs/DESIGN.md §3c).
 * ack: the ACK field translated into the other direction's sender's space.
 * reset: an RST at exactly snd_nxt, which ends the flow.
 *
 * The counts are plain adds, not atomic ones: a direction's segments come
 * from one sender socket (on lo, translated on the CPU that sends them) or
 * one receive queue, so two CPUs on the same counter at once are rare, and
 * then one count is lost, never state. The lock prefix cost 16 ns a segment
 * in pp50 (docs/DESIGN.md §3b, "Plain counts").
 */
static __always_inline void update_stats(struct mmp_tc_stats *st, int dir, struct pkt *p, __u8 flags, __u32 ack,
					 const struct mmp_tc_dir *d, bool reset)
{
	__u32 seq = rd32(&p->old.h[4]), end, win;
	int other = (dir ^ 1) & 1;
	bool acks_all;

	st->packets[dir & 1] += 1;
	st->bytes[dir & 1] += p->payload;
	st->last_seen_ns = bpf_ktime_get_coarse_ns();
	if (reset)
		st->rst = 1;
	if ((flags & (TH_SYN | TH_RST)) || !acceptable(st, dir, seq) || !ack_acceptable(st, dir, flags, ack))
		return;
	end = seq + p->payload + (flags & TH_FIN ? 1 : 0);
	if ((__s32)(end - st->snd_nxt[dir & 1]) > 0) {
		st->snd_nxt[dir & 1] = end;
		st->acked_all[other] = 0;
	}
	if (flags & TH_FIN)
		st->fin[dir & 1] = 1;
	/*
	 * The other direction's bytes up to ack reached this sender: count them
	 * if they were not. Without this one lost update left snd_nxt behind
	 * for good: this sender's ACKs were beyond it, so none of its segments
	 * was acceptable again, nor, once they acked its bytes, the other's;
	 * neither FIN was recorded and the flow outlived its endpoints
	 * (docs/DESIGN.md §3c, "The state heals from ACKs").
	 */
	if ((__s32)(ack - st->snd_nxt[other]) > 0) {
		st->snd_nxt[other] = ack;
		count(MMP_TC_CNT_SND_NXT_RAISED_BY_ACK);
	}
	/* Every segment here has an ACK (ack_acceptable). */
	acks_all = ack == st->snd_nxt[other];
	st->acked_all[dir & 1] = acks_all;
	/*
	 * This sender's receive window: what the other direction's segments may
	 * use. It shrinks only from a segment that acks every byte counted: a
	 * reordered older segment would otherwise put back the smaller window
	 * of an older ack.
	 */
	win = ((__u32)p->old.h[14] << 8 | p->old.h[15]) << (d->wscale_in & 15);
	if (win > st->rcv_wnd[other] || acks_all)
		st->rcv_wnd[other] = win;
}

/*
 * A window probe that acks new bytes goes at its receiver's next seq. A
 * sender whose window is 0 and who has nothing in flight probes with a pure
 * ACK one byte below what its receiver expects (RFC 9293 §3.8.6.1), which
 * the receiver answers and drops whole, its ack with it. When the probe
 * leaves while an ACK of the sender's is delayed, its kernel counts that
 * ACK as sent: the receiver's bytes were then acked only by the probe, and
 * waited for their RTO (t60: a one-unit window filled by the upstream, acked
 * by nothing else; docs/DESIGN.md §3c, "Window probes that carry an ACK").
 * Only a probe whose ack covers bytes not acked before is moved: the next
 * probe, with the same ack, stays a probe and gets the receiver's window.
 */
static __always_inline void probe_ack_deliver(const struct mmp_tc_stats *st, int dir, struct pkt *p, __u8 flags,
					      __u32 ack, const struct mmp_tc_dir *d)
{
	__u32 nxt = st->snd_nxt[dir & 1];

	if (p->payload || flags != TH_ACK || rd32(&p->old.h[4]) != nxt - 1)
		return;
	if (ack != st->snd_nxt[(dir ^ 1) & 1] || st->acked_all[dir & 1])
		return;
	wr32(&p->new.h[4], nxt + d->seq_delta);
	count(MMP_TC_CNT_PROBE_ACKS_DELIVERED);
}

/* Send a rewritten packet on the way of its direction: this path, into lo, or out to the load balancer. */
static __always_inline int deliver(struct __sk_buff *skb, const struct mmp_tc_dir *d)
{
	if (!d->redirect_ifindex)
		return TC_ACT_OK;
	if (d->redirect_ingress) {
		/* lo drops frames whose destination MAC is not its own (zero) as OTHERHOST. */
		__u8 zero[12] = { 0 };

		bpf_skb_store_bytes(skb, 0, zero, sizeof(zero), 0);
		return bpf_redirect(d->redirect_ifindex, BPF_F_INGRESS);
	}
	return bpf_redirect_neigh(d->redirect_ifindex, NULL, 0, 0);
}

/*
 * The upstream connection's SO_MARK (-m), set by userspace before load: a
 * translated client -> upstream segment stands for one the proxy's upstream
 * socket would have sent, so it carries the same mark for fwmark routing
 * rules and netfilter (docs/DESIGN.md §3b, eligibility). 0: none.
 */
const volatile __u32 mmp_tc_upstream_mark = 0;

#define CARRY_PASS 0
#define CARRY_DROP 1

/*
 * The segment's sender is the receiver of carry k, whose bytes userspace
 * still delivers (include/mmp_tc.h, struct mmp_tc_carry). Its ack is
 * recorded for that sender; while below the carry's end, the ack the other
 * peer sees is raised to what that peer was already acked (anything lower
 * is an old ACK to it: ignored at best, the segment dropped once beyond its
 * max_window), and its window is 0. A raised pure ACK, which then opens no
 * window, is a duplicate ACK to the other peer: dropped (docs/DESIGN.md
 * §3b).
 */
static __always_inline int carry_clamp(struct mmp_tc_flow *flow, struct mmp_tc_carry *c, int k, struct pkt *p,
				       const struct mmp_tc_dir *d, __u8 flags, __u32 *ack)
{
	__u32 raw = rd32(&p->old.h[8]), gap, wnd, edge;
	__u32 bit = k ? MMP_TC_CARRY_DOWN : MMP_TC_CARRY_UP;

	k &= 1;
	c->seen[k] += 1;
	wnd = ((__u32)p->old.h[14] << 8 | p->old.h[15]) << (d->wscale_in & 15);
	if (!(flags & (TH_SYN | TH_RST))) {
		edge = raw + wnd;
		if ((__s32)(edge - c->edge[k]) > 0)
			c->edge[k] = edge;
	}
	if ((__s32)(raw - c->acked[k]) > 0)
		c->acked[k] = raw;
	gap = c->end[k] - raw;
	/*
	 * Cleared with a plain write: the two directions may race to clear
	 * their bits, and one may put the other's back. That costs a lookup
	 * on its next segment, which finds the carry done and clears it again.
	 */
	if ((__s32)gap <= 0) {
		flow->carrying &= ~bit;
		return CARRY_PASS;
	}
	*ack = c->end[k] + d->ack_delta;
	wr32(&p->new.h[8], *ack);
	count(MMP_TC_CNT_CARRY_ACKS_CLAMPED);
	if (flags & (TH_SYN | TH_RST))
		return CARRY_PASS;
	/*
	 * Window 0 until the carry is acked, as the switch's window update
	 * said (tc_handoff.c): a byte the other peer sent beyond the carry
	 * could not be acked before the whole carry is, and timed out (RTO)
	 * whenever the carry took longer than that peer's RTO (3 of the 4 RTOs
	 * traced in t60's remote case). At window 0 it has nothing in flight
	 * to time out; the ack that covers the carry opens the window (DESIGN
	 * §3b, "Window 0 behind a carry").
	 */
	p->new.h[14] = 0;
	p->new.h[15] = 0;
	if (p->payload == 0 && !(flags & TH_FIN)) {
		count(MMP_TC_CNT_CARRY_ACKS_DROPPED);
		return CARRY_DROP;
	}
	return CARRY_PASS;
}

/*
 * What carry k's receiver's options tell the carrier, while it still owes
 * the receiver bytes: its ts_recent (TSecr), and its SACK blocks (raw: its
 * own sequence space, as carry_clamp records its ack). A segment without
 * blocks says it holds nothing beyond its ack: 0 blocks, so that blocks it
 * dropped since (pruned out of order under memory pressure) are not
 * trusted. Once its ack covers the carry, the translated segments that it
 * takes in sequence raise its ts_recent as they should: nothing to note.
 */
static __always_inline void carry_note_options(struct mmp_tc_carry *c, int k, const struct pkt *p,
					       const struct opt_scan *o)
{
	__u32 n = 0;

	k &= 1;
	if ((__s32)(c->end[k] - rd32(&p->old.h[8])) <= 0)
		return;
	/* Its TSecr is its ts_recent: the carried segments' TSval must not be below it (include/mmp_tc.h). */
	if (o->ts) {
		__u32 tsecr = rd32(&p->old.h[bound63(o->ts + 4)]);

		if ((__s32)(tsecr - c->tsval[k]) > 0) {
			c->tsval[k] = tsecr;
			count(MMP_TC_CNT_CARRY_TSVAL_RAISED);
		}
	}
	if (o->sack) {
		for (int e = 0; e < MMP_TC_CARRY_SACK_BLOCKS * 2; e++) {
			if (e * 4 + 4 > o->sack_len)
				break;
			c->sack[k][e] = rd32(&p->old.h[bound63(o->sack + e * 4)]);
			n = e / 2 + 1;
		}
	}
	c->sack_n[k] = n;
}

/* SPLICE: rewrite a peer's segment into the other connection. */
static __always_inline int translate(struct __sk_buff *skb, struct pkt *p, struct mmp_tc_flow *flow, const __u64 *id,
				     int dir, const struct mmp_tc_dir *d, const struct mmp_tc_dir *other, bool reset)
{
	struct mmp_tc_stats *st = &flow->st;
	struct mmp_tc_carry *carry = NULL;
	bool behind = false; /* a pure ACK to a receiver that still takes carried bytes */
	bool acks_carry = false; /* the sender is a receiver of carried bytes */
	bool opts = p->tcp_len > TCP_HLEN && (d->timestamps || d->sack);
	struct opt_scan o;
	__u8 flags = p->old.h[13];
	int has_ack = flags & TH_ACK;
	__u32 seq, ack = 0, win;

	if (load_options(skb, p))
		return TC_ACT_OK;
	__builtin_memcpy(&p->new, &p->old, sizeof(p->new));
	if (opts)
		scan_options(p, &o);

	/* Ports. */
	__builtin_memcpy(&p->new.h[0], &d->out.sport, 2);
	__builtin_memcpy(&p->new.h[2], &d->out.dport, 2);
	/* Sequence space. */
	seq = rd32(&p->new.h[4]) + d->seq_delta;
	wr32(&p->new.h[4], seq);
	if (has_ack) {
		ack = rd32(&p->new.h[8]) + d->ack_delta;
		wr32(&p->new.h[8], ack);
	}
	/* Window: what the sender means, in the receiver's scale. */
	if (!(flags & (TH_SYN | TH_RST))) {
		win = ((__u32)p->new.h[14] << 8 | p->new.h[15]);
		win = (win << (d->wscale_in & 15)) >> (d->wscale_out & 15);
		if (win > 65535)
			win = 65535;
		p->new.h[14] = win >> 8;
		p->new.h[15] = win;
	}
	/*
	 * Right after a switch that carried bytes across (include/mmp_tc.h):
	 * dir's sender acks carry dir ^ 1 (up's segments the bytes carried to
	 * the load balancer, and back), and its receiver still takes carry dir.
	 */
	if (flow->carrying) {
		__u32 mine = dir ? MMP_TC_CARRY_DOWN : MMP_TC_CARRY_UP;

		carry = bpf_map_lookup_elem(&mmp_tc_carry, id);
		if (!carry) {
			flow->carrying = 0; /* userspace removed it: done, or given up */
		} else {
			acks_carry = has_ack && (flow->carrying & ~mine);
			/* Before the clamp: the pure ACKs it drops bring the newest blocks and TSecr. */
			if (acks_carry && opts)
				carry_note_options(carry, dir ^ 1, p, &o);
			if (acks_carry && carry_clamp(flow, carry, dir ^ 1, p, d, flags, &ack) == CARRY_DROP)
				return TC_ACT_SHOT;
			if (has_ack && !(flags & (TH_SYN | TH_RST)) && (__s32)(ack - carry->fwd_ack[dir & 1]) >= 0) {
				carry->fwd_ack[dir & 1] = ack;
				carry->fwd_win[dir & 1] = (__u32)p->new.h[14] << 8 | p->new.h[15];
			}
			behind = (flow->carrying & mine) && p->payload == 0 && !(flags & (TH_SYN | TH_FIN | TH_RST));
			if (behind || ((flags & TH_RST) && (flow->carrying & mine)))
				wr32(&p->new.h[4], carry->acked[dir & 1]);
			if (reset)
				carry->reset = 1;
		}
	}
	if (!behind)
		probe_ack_deliver(st, dir, p, flags, ack, d);
	if (opts) {
		int tsecr_known = 0;

		/*
		 * TSval: the offset userspace computed at the switch (no packet
		 * sets it). TSecr echoes the other direction's translated clock:
		 * undo that; an echo below its ts_base is of a frozen socket's
		 * clock, which means nothing to the new receiver (0).
		 */
		if (o.ts)
			tsecr_known = (__s32)(rd32(&p->old.h[bound63(o.ts + 4)]) - other->ts_base) >= 0;
		rewrite_options(p, &o, d->tsval_delta, -other->tsval_delta, tsecr_known, d->ack_delta, has_ack);
		if (behind && carry && o.ts)
			wr32(&p->new.h[bound63(o.ts)], carry->tsval[dir & 1]);
	}

	if (commit(skb, p, &d->out)) {
		count(MMP_TC_CNT_REDIRECT_FAILED);
		return TC_ACT_SHOT;
	}
	update_stats(st, dir, p, flags, ack, d, reset);
	count(MMP_TC_CNT_TRANSLATED);
	if (dir == 0 && mmp_tc_upstream_mark)
		skb->mark = mmp_tc_upstream_mark;
	/*
	 * An upstream beyond loopback: reply steering, ahead of this filter,
	 * marked the segment for local delivery to a socket that is gone. It
	 * goes to the load balancer now: no fwmark rule may route it.
	 */
	if (dir == 1 && (skb->mark & MMP_STEER_RULE_MASK) == MMP_STEER_RULE_MARK)
		skb->mark = 0;
	return deliver(skb, d);
}

/*
 * A carried segment, on its way out: the carrier's raw socket sends it on
 * the frozen socket's tuple (down, toward the load balancer, on conn1's;
 * up on conn2's). It carries the ack and window of the other peer's last
 * translated segment as the carrier last read them (mmp_tc_carry.fwd_ack),
 * up to a round of segments and a timer step ago. Meanwhile that peer's
 * translated acks keep moving the receiver's snd_una, flat out by more than
 * its max_window (t60: 0.4-1.2 MB), and the receiver then drops the segment
 * whole as too old (SKB_DROP_REASON_TCP_TOO_OLD_ACK): a hole, filled only by
 * the carrier's 200 ms timer, while the other peer's bytes behind it wait
 * out their own RTO. Here the segment takes the newest ack and window.
 */
static __always_inline void carried_ack_refresh(struct __sk_buff *skb, struct pkt *p, struct mmp_tc_flow *flow,
						__u64 id, bool down)
{
	__u32 old_ack, new_ack, old_words[2], new_words[2], diff;
	struct mmp_tc_carry *carry;
	int k = down ? 1 : 0;

	if (!(flow->carrying & (down ? MMP_TC_CARRY_DOWN : MMP_TC_CARRY_UP)) || !(p->old.h[13] & TH_ACK))
		return;
	carry = bpf_map_lookup_elem(&mmp_tc_carry, &id);
	if (!carry)
		return;
	old_ack = rd32(&p->old.h[8]);
	new_ack = carry->fwd_ack[k];
	if ((__s32)(new_ack - old_ack) <= 0)
		return;
	/* Bytes 8..11: the ack; 12..15: data offset, flags, window. */
	__builtin_memcpy(&p->new, &p->old, TCP_HLEN);
	wr32(&p->new.h[8], new_ack);
	p->new.h[14] = carry->fwd_win[k] >> 8;
	p->new.h[15] = carry->fwd_win[k];
	__builtin_memcpy(old_words, &p->old.h[8], 8);
	__builtin_memcpy(new_words, &p->new.h[8], 8);
	diff = csum_add32(csum_add32(~old_words[0], new_words[0]), csum_add32(~old_words[1], new_words[1]));
	if (bpf_skb_store_bytes(skb, p->l4_off + 8, &p->new.h[8], 8, 0) ||
	    bpf_l4_csum_replace(skb, p->l4_off + 16, 0, diff, 0)) {
		count(MMP_TC_CNT_REDIRECT_FAILED);
		return;
	}
	count(MMP_TC_CNT_CARRY_ACKS_REFRESHED);
}

#include "tc_icmp.h"

static __always_inline int handle(struct __sk_buff *skb, bool ingress)
{
	struct mmp_tc_tuple_val *tv;
	struct mmp_tc_flow *flow;
	const struct mmp_tc_dir *d, *other;
	struct mmp_tc_stats *st;
	__u32 zero = 0;
	struct pkt *p = bpf_map_lookup_elem(&mmp_tc_scratch, &zero);
	bool reset = false;
	int ret, dir;
	__u8 flags;

	if (!p)
		return TC_ACT_UNSPEC;
	ret = parse(skb, p);
	if (ret) {
		if (ret == PARSE_FRAGMENT)
			count(MMP_TC_CNT_NOT_TCP_OR_FRAGMENT);
		else if (ret == PARSE_BAD_IP)
			count(MMP_TC_CNT_BAD_IP_HEADER);
		/* Errors about our segments come back in: only ingress looks at ICMP. */
		if (ret == PARSE_ICMP && ingress)
			return handle_icmp(skb);
		return TC_ACT_UNSPEC;
	}
	/*
	 * The host's other traffic stops here: its tuple lookup would touch a
	 * random bucket of a large table, a cache miss on a busy host.
	 */
	if (!port_marked(p->tuple.sport) && !port_marked(p->tuple.dport))
		return TC_ACT_UNSPEC;
	tv = bpf_map_lookup_elem(&mmp_tc_tuples, &p->tuple);
	if (!tv)
		return TC_ACT_UNSPEC;
	flow = bpf_map_lookup_elem(&mmp_tc_flows, &tv->flow);
	if (!flow)
		return TC_ACT_UNSPEC;

	if (tv->role == MMP_TC_ROLE_HOLD_CONN1 || tv->role == MMP_TC_ROLE_HOLD_CONN2) {
		if (flow->mode != MMP_TC_MODE_HOLD && flow->mode != MMP_TC_MODE_FREEZE) {
			/*
			 * The switch has not closed the frozen socket yet: what it
			 * sends is stale (include/mmp_tc.h). An RST here is the
			 * switch's own (a reset that reached a frozen socket).
			 */
			if ((tv->flags & MMP_TC_TUPLE_SOCKET_OPEN) && !(p->old.h[13] & TH_RST)) {
				count(MMP_TC_CNT_FROZEN_ACKS_DROPPED);
				return TC_ACT_SHOT;
			}
			/* After the switch the frozen sockets send nothing: data here is carried. */
			if (flow->carrying && p->payload)
				carried_ack_refresh(skb, p, flow, tv->flow, tv->role == MMP_TC_ROLE_HOLD_CONN1);
			return TC_ACT_OK;
		}
		/*
		 * A frozen socket still runs its timers: a delayed ACK can leave it
		 * after its state was read. Its ack and window are stale by then
		 * (the switch's window updates carry both, an abort's reopen
		 * too), and one that lands after the window update would close
		 * the peer's window again, or be dropped by PAWS (docs/DESIGN.md
		 * §3b). Data and FINs still pass: quiet() sees them unacked.
		 */
		if (flow->mode == MMP_TC_MODE_FREEZE && p->payload == 0 &&
		    !(p->old.h[13] & (TH_SYN | TH_FIN | TH_RST))) {
			count(MMP_TC_CNT_FROZEN_ACKS_DROPPED);
			return TC_ACT_SHOT;
		}
		__builtin_memcpy(&p->new, &p->old, TCP_HLEN);
		return hold(skb, p);
	}
	if (tv->role == MMP_TC_ROLE_UP) {
		dir = 0;
		d = &flow->up;
		other = &flow->down;
	} else if (tv->role == MMP_TC_ROLE_DOWN) {
		dir = 1;
		d = &flow->down;
		other = &flow->up;
	} else {
		return TC_ACT_OK;
	}
	/*
	 * A peer's packets come in on one interface only (lo, or the remote
	 * load balancer's): the same tuple anywhere else (src 127.0.0.1 on a
	 * veth) is someone else's packet, and not ours to translate.
	 */
	if (skb->ifindex != d->in_ifindex) {
		count(MMP_TC_CNT_WRONG_IFACE);
		return TC_ACT_UNSPEC;
	}
	flags = p->old.h[13];
	if (flow->mode == MMP_TC_MODE_HOLD || flow->mode == MMP_TC_MODE_FREEZE) {
		/*
		 * A dropped segment is retransmitted after the switch, but a
		 * dropped RST is not: let it reach the frozen socket, where
		 * userspace sees it and forwards the reset.
		 */
		if (flow->mode == MMP_TC_MODE_FREEZE && !(flags & TH_RST)) {
			count(MMP_TC_CNT_FREEZE_DROPS);
			return TC_ACT_SHOT;
		}
		return TC_ACT_OK;
	}
	if (flow->mode != MMP_TC_MODE_SPLICE)
		return TC_ACT_OK;
	st = &flow->st;
	/*
	 * As kernel TCP judges them (RFC 5961; docs/DESIGN.md §3c
	 * hardening). A SYN on a flow that ended (FIN both ways, or an RST at
	 * snd_nxt: no TIME_WAIT) is a new connection reusing its port: forget
	 * the tuple so its segments pass untouched. A SYN on a live flow is
	 * translated: the endpoint answers it with a challenge ACK, as for its
	 * own connection.
	 */
	if (flags & TH_SYN) {
		if (mmp_tc_flow_ended(st)) {
			st->rst = 1;
			bpf_map_delete_elem(&mmp_tc_tuples, &p->tuple);
			count(MMP_TC_CNT_TUPLE_REUSED);
			return TC_ACT_OK;
		}
		count(MMP_TC_CNT_SYN_CHALLENGED);
	}
	/*
	 * An RST ends the flow only at exactly the seq the receiver expects;
	 * elsewhere in its window it is passed on for the endpoint to
	 * challenge; outside, dropped.
	 */
	if (flags & TH_RST) {
		__u32 off = rd32(&p->old.h[4]) - st->snd_nxt[dir & 1];

		if (off == 0) {
			reset = true;
		} else if (off < st->rcv_wnd[dir & 1]) {
			count(MMP_TC_CNT_RST_CHALLENGED);
		} else {
			count(MMP_TC_CNT_RST_DROPPED);
			return TC_ACT_SHOT;
		}
	}
	return translate(skb, p, flow, &tv->flow, dir, d, other, reset);
}

/*
 * Egress hooks (on a remote load balancer's interfaces; lo has none) only
 * zero the window of the proxy's own segments while a flow is held. Until
 * this CLOCK_MONOTONIC time, which userspace pushes past the longest a hold
 * can last whenever one starts (mmp_tc_begin), they look; after it, every
 * segment the host sends there passes after one read instead of a hash
 * lookup (docs/DESIGN.md §3b).
 */
volatile __u64 mmp_tc_egress_until_ns;

SEC("tc")
int mmp_tc_egress(struct __sk_buff *skb)
{
	if (bpf_ktime_get_coarse_ns() > mmp_tc_egress_until_ns)
		return TC_ACT_UNSPEC;
	return handle(skb, false);
}

SEC("tc")
int mmp_tc_ingress(struct __sk_buff *skb)
{
	return handle(skb, true);
}

/*
 * Not attached: userspace runs it (BPF_PROG_TEST_RUN) to read one of its
 * sockets' TCP state in place, live during a hold (the ACKs it sends in the
 * socket's name) and frozen at the switch (the translation, and the TSval
 * offsets from ts_recent, the peer's last TSval its kernel accepted).
 */
SEC("tc")
int mmp_tc_sock_probe(struct __sk_buff *skb)
{
	struct mmp_tc_sock_query q;
	struct bpf_sock_tuple t;
	struct bpf_sock *sk;
	struct tcp_sock *tp;

	if (bpf_skb_load_bytes(skb, ETH_HLEN, &q, sizeof(q)))
		return TC_ACT_SHOT;
	__builtin_memset(&t, 0, sizeof(t));
	if (q.tuple.family == 4) {
		__builtin_memcpy(&t.ipv4.saddr, q.tuple.saddr, 4);
		__builtin_memcpy(&t.ipv4.daddr, q.tuple.daddr, 4);
		t.ipv4.sport = q.tuple.sport;
		t.ipv4.dport = q.tuple.dport;
		sk = bpf_sk_lookup_tcp(skb, &t, sizeof(t.ipv4), BPF_F_CURRENT_NETNS, 0);
	} else {
		__builtin_memcpy(t.ipv6.saddr, q.tuple.saddr, 16);
		__builtin_memcpy(t.ipv6.daddr, q.tuple.daddr, 16);
		t.ipv6.sport = q.tuple.sport;
		t.ipv6.dport = q.tuple.dport;
		sk = bpf_sk_lookup_tcp(skb, &t, sizeof(t.ipv6), BPF_F_CURRENT_NETNS, 0);
	}
	q.found = 0;
	if (!sk)
		goto out;
	/* A tuple no connection has falls back to the listener on its port: not ours. */
	tp = sk->state != BPF_TCP_LISTEN ? bpf_skc_to_tcp_sock(sk) : NULL;
	if (tp) {
		q.ts_recent = tp->rx_opt.ts_recent;
		q.rcv_nxt = tp->rcv_nxt;
		q.snd_una = tp->snd_una;
		q.snd_nxt = tp->snd_nxt;
		q.write_seq = tp->write_seq;
		q.snd_wl1 = tp->snd_wl1;
		q.snd_wnd = tp->snd_wnd;
		q.max_window = tp->max_window;
		q.rcv_wnd = tp->rcv_wnd;
		q.rcv_wup = tp->rcv_wup;
		q.ofo = tp->out_of_order_queue.rb_node != NULL;
		q.found = 1;
	}
	bpf_sk_release(sk);
out:
	bpf_skb_store_bytes(skb, ETH_HLEN, &q, sizeof(q), 0);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
