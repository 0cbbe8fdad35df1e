// SPDX-License-Identifier: GPL-2.0
/*
 * UDP mode in the kernel.
 *
 * Maps: mmp_udp_flows and mmp_udp_cnt are written by userspace, which
 * relays the datagrams (user/udp/udp_forward.c, udp_reply.c), so operators see
 * every flow with bpftool or `mmproxy-bpf stats`. max_entries of the flow
 * maps are set at load to the flow limit; NO_PREALLOC keeps an idle proxy
 * from holding that memory.
 *
 * The fast path (include/mmp_udp.h): once userspace has opened a flow it
 * writes mmp_udp_fwd/mmp_udp_rev, and this TC program (ingress of lo and of
 * the remote LBs' interfaces) moves the flow's later datagrams without a
 * socket, IPv4 and IPv6 alike (addresses are 16 bytes in the maps):
 *   forward: strip the header by writing the new UDP header over its last
 *       8 bytes and removing the rest with bpf_skb_adjust_room
 *       (BPF_ADJ_ROOM_NET); IPv4: UDP checksum 0; IPv6: the checksum
 *       follows (forward()); continue on lo, or zero the MACs and redirect
 *       into lo, or (an upstream beyond loopback, docs/DESIGN.md §14)
 *       bpf_redirect_neigh out of the upstream's interface.
 *   reply: rewrite the upstream's reply to come from the listen address and
 *       go to the LB, inserting the client's SPP header for SPP flows
 *       (reply()); continue on lo, or bpf_redirect_neigh out of the LB's
 *       interface.
 * The hand-over from userspace (draining()) never reorders a flow.
 * Packets that are not ours return TC_ACT_UNSPEC, so other classifiers on
 * the hook (the tc engine's) still see them; so does a flow's 4-tuple on
 * another interface than the one its entry names (wrong_iface()).
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "common.h"
#include "mmp_udp.h"
#include "skb_kern.h"

/*
 * Set by tests/unit/test_udp_fastpath.c only: BPF_PROG_TEST_RUN skbs are
 * never CHECKSUM_PARTIAL, so this makes its IPv6 forward cases take the
 * full-sum path (fwd_csum6_full) as well as the incremental one.
 */
const volatile bool sum_in_full = false;

#define IPPROTO_UDP 17
#define L3 ETH_HLEN
#define IP4_HLEN 20
#define IP6_HLEN 40
#define V2_HLEN4 28 /* 16 + an INET address block: the only v2 forms handled here */
#define V2_HLEN6 52 /* 16 + an INET6 address block */
#define SPP_HLEN MMP_UDP_SPP_LEN
#define HDR_MAX V2_HLEN6
#define SUM_CHUNK 256
#define SUM_CHUNKS 16 /* a partial IPv6 datagram up to 4 KiB gets its checksum summed here; larger ones: userspace */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct mmp_udp_flow);
} mmp_udp_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mmp_udp_counters);
} mmp_udp_cnt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct mmp_udp_fkey);
	__type(value, struct mmp_udp_fval);
} mmp_udp_fwd SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct mmp_udp_rkey);
	__type(value, struct mmp_udp_rval);
} mmp_udp_rev SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct mmp_udp_drain);
} mmp_udp_drain SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MMP_UDP_KCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} mmp_udp_kcnt SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&mmp_udp_kcnt, &idx);

	if (v)
		*v += 1;
}

struct pkt {
	bool v6;
	__u32 l4; /* offset of the UDP header */
	struct ipv6hdr ip6; /* IPv6 */
	struct iphdr ip; /* IPv4; right before uh, so that forward() stores both with one call */
	struct udphdr uh;
	__be32 saddr[4], daddr[4]; /* IPv6, or IPv4-mapped */
	__u32 plen; /* UDP payload length */
	__u8 h[HDR_MAX]; /* the payload's first bytes (as many as there are, in one of a few fixed sizes) */
};

/* The IPv6 pseudo header's sum is the IPv4 one's with mapped addresses: one layout for both. */
struct pseudo {
	__be32 saddr[4];
	__be32 daddr[4];
	__be32 len;
	__be32 next; /* the protocol: constant, so only the full sum needs it */
};

static __always_inline void mapped(__be32 *out, __be32 a)
{
	out[0] = 0;
	out[1] = 0;
	out[2] = bpf_htonl(0xFFFF);
	out[3] = a;
}

static __always_inline void addr_copy(__be32 *dst, const __be32 *src)
{
	dst[0] = src[0];
	dst[1] = src[1];
	dst[2] = src[2];
	dst[3] = src[3];
}

/*
 * Copy the IP or UDP header at off (n a multiple of 4, both constants once
 * inlined) into buf: as words straight from the linear data when it is all
 * there, as on lo or from a NIC; through the helper otherwise (docs/DESIGN.md
 * §3b, "No checksum helper"). The PROXY header in find_flow() still goes
 * through the helper: read in place, clang keeps its words in registers and
 * forward()'s stack frame grows past 512 bytes. 0 or a negative errno.
 */
static __always_inline int load_words(struct __sk_buff *skb, __u32 off, void *buf, __u32 n)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	const __u32 *src = data + off;
	__u32 *dst = buf;

	if ((void *)src + n > data_end)
		return bpf_skb_load_bytes(skb, off, buf, n);
#pragma unroll
	for (__u32 i = 0; i < n / 4; i++)
		dst[i] = src[i];
	return 0;
}

/*
 * A plain IPv4 or IPv6 UDP packet (no IP options, no IPv6 extension header),
 * lengths consistent, not a fragment nor GSO. Returns 0, or -1: not ours to
 * touch.
 */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p)
{
	__u32 ulen, l3_payload;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (load_words(skb, L3, &p->ip, sizeof(p->ip)) || p->ip.ihl != 5 ||
		    p->ip.protocol != IPPROTO_UDP || p->ip.frag_off & bpf_htons(IP_MF | IP_OFFSET))
			return -1;
		p->v6 = false;
		p->l4 = L3 + IP4_HLEN;
		mapped(p->saddr, p->ip.saddr);
		mapped(p->daddr, p->ip.daddr);
		l3_payload = bpf_ntohs(p->ip.tot_len) - IP4_HLEN;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		/* A fragment or an extension header is another next header: not ours. */
		if (load_words(skb, L3, &p->ip6, sizeof(p->ip6)) || p->ip6.nexthdr != IPPROTO_UDP)
			return -1;
		p->v6 = true;
		p->l4 = L3 + IP6_HLEN;
		__builtin_memcpy(p->saddr, &p->ip6.saddr, 16);
		__builtin_memcpy(p->daddr, &p->ip6.daddr, 16);
		l3_payload = bpf_ntohs(p->ip6.payload_len); /* 0 for a jumbogram: never equal to ulen */
	} else {
		return -1;
	}
	if (load_words(skb, p->l4, &p->uh, sizeof(p->uh)))
		return -1;
	ulen = bpf_ntohs(p->uh.len);
	if (ulen < 8 || l3_payload != ulen || skb->len < p->l4 + ulen || skb->gso_segs > 1)
		return -1;
	p->plen = ulen - 8;
	return 0;
}

_Static_assert(__builtin_offsetof(struct pkt, uh) == __builtin_offsetof(struct pkt, ip) + IP4_HLEN,
	       "the IPv4 header must end where the UDP header begins");

/*
 * Store the changed IPv4 header with a fresh checksum, summed here: five
 * words in a 64-bit sum, folded, cost less than a bpf_csum_diff call. len:
 * IP4_HLEN, or IP4_HLEN + 8 to store p->uh with it.
 */
static __always_inline int store_ip(struct __sk_buff *skb, struct iphdr *ip, __u32 len)
{
	const __u32 *w = (const __u32 *)ip;
	__u64 sum = 0;

	ip->check = 0;
	for (int i = 0; i < IP4_HLEN / 4; i++)
		sum += w[i];
	sum = (sum & 0xFFFFFFFF) + (sum >> 32);
	sum = (sum & 0xFFFFFFFF) + (sum >> 32);
	ip->check = mmp_csum_fold(sum);
	return bpf_skb_store_bytes(skb, L3, ip, len, BPF_F_RECOMPUTE_CSUM);
}

/* The new addresses and the length of the UDP datagram into p's IPv4 header copy. */
static __always_inline void set_ip4(struct pkt *p, __be32 saddr, __be32 daddr, __u16 ulen)
{
	p->ip.saddr = saddr;
	p->ip.daddr = daddr;
	p->ip.tot_len = bpf_htons(IP4_HLEN + ulen);
}

/* The new addresses and length (of the UDP datagram) into the IP header. */
static __always_inline int store_l3(struct __sk_buff *skb, struct pkt *p, const __be32 *saddr, const __be32 *daddr,
				    __u16 ulen)
{
	if (!p->v6) {
		set_ip4(p, saddr[3], daddr[3], ulen);
		return store_ip(skb, &p->ip, IP4_HLEN);
	}
	p->ip6.payload_len = bpf_htons(ulen);
	__builtin_memcpy(&p->ip6.saddr, saddr, 16);
	__builtin_memcpy(&p->ip6.daddr, daddr, 16);
	/* payload_len through daddr, in one store. */
	return bpf_skb_store_bytes(skb, L3 + 4, (__u8 *)&p->ip6 + 4, IP6_HLEN - 4, BPF_F_RECOMPUTE_CSUM);
}

/*
 * Adjust the UDP checksum at off, once the packet's bytes are rewritten
 * (stored with BPF_F_RECOMPUTE_CSUM, the checksum field still holding its old
 * value old): dp is the change of the pseudo header's sum, dd that of the
 * UDP header and payload (checksum field aside).
 *
 * The helpers know what the field holds: on a CHECKSUM_PARTIAL skb (sent on
 * this host: lo, veth) only the pseudo header's sum, so only dp applies
 * (BPF_F_PSEUDO_HDR), and dd is ignored; otherwise the full checksum, and
 * both apply. MARK_MANGLED_0: an IPv4 "no checksum" 0 stays 0, and a result
 * of 0 is written 0xFFFF.
 *
 * On a CHECKSUM_COMPLETE skb, skb->csum must follow the field's own change:
 * BPF_F_IPV6 keeps the helper from adjusting it for the pseudo header (our
 * stores already accounted the address bytes), and bpf_csum_update adds the
 * field's change (a no-op error for any other kind of skb).
 */
static __always_inline int udp_csum_update(struct __sk_buff *skb, __u32 off, __be16 old, __s64 dp, __s64 dd)
{
	__u64 flags = BPF_F_MARK_MANGLED_0 | BPF_F_IPV6;
	__be32 was = old, now = 0;

	if (dp < 0 || dd < 0)
		return -1;
	if (bpf_l4_csum_replace(skb, off, 0, (__u32)dp, flags | BPF_F_PSEUDO_HDR) ||
	    bpf_l4_csum_replace(skb, off, 0, (__u32)dd, flags))
		return -1;
	if (bpf_skb_load_bytes(skb, off, &now, 2))
		return -1;
	if (now != was)
		bpf_csum_update(skb, bpf_csum_diff(&was, 4, &now, 4, 0));
	return 0;
}

/*
 * A flow's datagrams arrive on one interface only: the LB's (lo for a local
 * one), and the upstream's replies on lo. The same 4-tuple on any other
 * hooked interface is someone else's packet (a spoofed reply, or a remote
 * LB's address forged on another link, which the redirect into lo would
 * carry past rp_filter): it is neither rewritten nor allowed to change the
 * entry (stale), as the tc engine's in_ifindex (bpf/tc.bpf.c). Counted
 * (docs/DESIGN.md §4a).
 */
static __always_inline bool wrong_iface(const struct __sk_buff *skb, __u32 in_ifindex)
{
	if (skb->ifindex == in_ifindex)
		return false;
	count(MMP_UDP_KCNT_WRONG_IFINDEX);
	return true;
}

static __always_inline bool spp_tail_eq(const __u8 *a, const __u8 *b)
{
	for (int i = 0; i < MMP_UDP_SPP_TAIL_LEN; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/*
 * How many header bytes start this payload of PROXY v2 flow v: the plain
 * header's length (INET for an IPv4 flow, INET6 for an IPv6 one) when it
 * names exactly v's client, 0 for none where none is required, -1 for none
 * where one is (userspace drops and counts it), -2 for any other header
 * (another client, TLVs, the other family...: userspace's to judge).
 */
static __always_inline int v2_header_len(const struct pkt *p, const struct mmp_udp_fval *v)
{
	static const __u8 sig[12] = { 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A };
	const __u8 *h = p->h;
	__be32 addr[4];
	__be16 port;

	if (p->plen < 12)
		return v->header_required ? -1 : 0;
	for (int i = 0; i < 12; i++)
		if (h[i] != sig[i])
			return v->header_required ? -1 : 0;
	/* PROXY, DGRAM, exactly the address block: any other form is userspace's. */
	if (!p->v6) {
		if (p->plen < V2_HLEN4 || h[12] != 0x21 || h[13] != 0x12 || h[14] != 0 || h[15] != 12)
			return -2;
		mapped(addr, 0);
		__builtin_memcpy(&addr[3], &h[16], 4);
		__builtin_memcpy(&port, &h[24], 2);
	} else {
		if (p->plen < V2_HLEN6 || h[12] != 0x21 || h[13] != 0x22 || h[14] != 0 || h[15] != 36)
			return -2;
		__builtin_memcpy(addr, &h[16], 16);
		__builtin_memcpy(&port, &h[48], 2);
	}
	if (addr[0] != v->client_addr[0] || addr[1] != v->client_addr[1] || addr[2] != v->client_addr[2] ||
	    addr[3] != v->client_addr[3] || port != v->client_port)
		return -2;
	return p->v6 ? V2_HLEN6 : V2_HLEN4;
}

/* find_flow()'s *hl for a flow's 4-tuple on another interface (wrong_iface). */
#define HL_WRONG_IFACE -3

/*
 * Find the flow of this datagram; *hl gets its header length, -1: leave it
 * to userspace, HL_WRONG_IFACE: not the flow's at all (checked first, so
 * that such a datagram changes nothing). A header other than the flow's own
 * (PROXY v2: the LB reused the ip:port for another client, most likely;
 * SPP: another proxy address or port, which the replies must echo) marks
 * the entry stale here, so the datagrams right behind it cannot go on as
 * before userspace has looked.
 */
static __always_inline struct mmp_udp_fval *find_flow(struct __sk_buff *skb, struct pkt *p, int *hl)
{
	struct mmp_udp_fkey k = {
		.lb_port = p->uh.source,
		.local_port = p->uh.dest,
	};
	__u32 off = p->l4 + 8;
	struct mmp_udp_fval *v;

	addr_copy(k.lb_addr, p->saddr);
	addr_copy(k.local_addr, p->daddr);
	/* As much of the header as there is, in one of four fixed sizes (loads take constants). */
	if (p->plen >= V2_HLEN6)
		bpf_skb_load_bytes(skb, off, p->h, V2_HLEN6);
	else if (p->plen >= SPP_HLEN)
		bpf_skb_load_bytes(skb, off, p->h, SPP_HLEN);
	else if (p->plen >= V2_HLEN4)
		bpf_skb_load_bytes(skb, off, p->h, V2_HLEN4);
	else if (p->plen >= 12)
		bpf_skb_load_bytes(skb, off, p->h, 12);
	if (p->plen >= SPP_HLEN && p->h[0] == 0x56 && p->h[1] == 0xEC) {
		/* The client as the header has it (IPv4-mapped for IPv4): the key's form. */
		__builtin_memcpy(k.client_addr, &p->h[2], 16);
		__builtin_memcpy(&k.client_port, &p->h[34], 2);
		v = bpf_map_lookup_elem(&mmp_udp_fwd, &k);
		if (v) {
			if (wrong_iface(skb, v->in_ifindex)) {
				*hl = HL_WRONG_IFACE;
				return v;
			}
			*hl = -1;
			if (!v->stale && spp_tail_eq(v->spp_tail, &p->h[MMP_UDP_SPP_TAIL_OFF]))
				*hl = SPP_HLEN;
			else
				v->stale = 1;
			return v;
		}
		/* Not an SPP flow of ours: maybe a v2 flow's payload that starts with the magic. */
		__builtin_memset(k.client_addr, 0, 16);
		k.client_port = 0;
	}
	v = bpf_map_lookup_elem(&mmp_udp_fwd, &k);
	if (!v)
		return NULL;
	if (wrong_iface(skb, v->in_ifindex)) {
		*hl = HL_WRONG_IFACE;
		return v;
	}
	if (v->stale) {
		*hl = -1;
		return v;
	}
	*hl = v->format == MMP_UDP_FMT_V2 ? v2_header_len(p, v) : -1;
	if (*hl == -2) {
		v->stale = 1;
		*hl = -1;
	}
	return v;
}

enum drain { DRAIN_DONE, DRAIN_PASS, DRAIN_HOLD };

/*
 * An entry still draining (see mmp_udp.h): DRAIN_PASS when this datagram
 * must go on to userspace, numbered in its mark; DRAIN_HOLD when it must be
 * dropped because userspace is too far behind; DRAIN_DONE once userspace
 * has sent the last one passed, which switches the entry to ACTIVE.
 * (Two CPUs may number one datagram alike: userspace then publishes that
 * number early, and the switch waits for the next one.)
 */
static __always_inline enum drain draining(struct __sk_buff *skb, __u8 *mode, __u64 *passed, __u64 *held,
					   __u64 cookie, bool rev)
{
	struct mmp_udp_drain *d;
	__u64 sent, n = *passed;
	__u32 behind;

	if (*mode == MMP_UDP_MODE_ACTIVE)
		return DRAIN_DONE;
	d = bpf_map_lookup_elem(&mmp_udp_drain, &cookie);
	sent = d ? (rev ? d->rev : d->fwd) : 0;
	behind = (__u32)(n - sent) & MMP_UDP_DRAIN_SEQ_MASK;
	if (n && !behind) {
		*mode = MMP_UDP_MODE_ACTIVE;
		return DRAIN_DONE;
	}
	if (behind >= MMP_UDP_DRAIN_BEHIND && __sync_fetch_and_add(held, 1) % MMP_UDP_DRAIN_PROBE) {
		count(MMP_UDP_KCNT_HELD);
		return DRAIN_HOLD;
	}
	n = __sync_fetch_and_add(passed, 1) + 1;
	skb->mark = (rev ? MMP_UDP_MARK_DRAIN_REV : MMP_UDP_MARK_DRAIN_FWD) | (__u32)(n & MMP_UDP_DRAIN_SEQ_MASK);
	count(MMP_UDP_KCNT_DRAINED);
	return DRAIN_PASS;
}

/* seed plus the ones' complement sum of len bytes at off (even), -1 on error. */
static __always_inline __s64 sum_bytes(struct __sk_buff *skb, __u32 off, __u32 len, __s64 seed)
{
	__u8 tail[4] = { 0 };
	__u32 done = 0;
	void *data, *end;
	__u8 *q;

	if (len > SUM_CHUNK * SUM_CHUNKS || bpf_skb_pull_data(skb, off + len))
		return -1;
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	for (int i = 0; i < SUM_CHUNKS && seed >= 0; i++) {
		if (len - done < SUM_CHUNK)
			break;
		q = data + off + (done & 0x1FFF);
		if ((void *)(q + SUM_CHUNK) > end)
			return -1;
		seed = bpf_csum_diff(NULL, 0, (__be32 *)q, SUM_CHUNK, (__u32)seed);
		done += SUM_CHUNK;
	}
	/* The rest below a chunk, by halves: every size a constant. */
#define SUM_PART(n)                                                                  \
	if (seed >= 0 && len - done >= (n)) {                                         \
		q = data + off + (done & 0x1FFF);                                     \
		if ((void *)(q + (n)) > end)                                          \
			return -1;                                                    \
		seed = bpf_csum_diff(NULL, 0, (__be32 *)q, (n), (__u32)seed);         \
		done += (n);                                                          \
	}
	SUM_PART(128)
	SUM_PART(64)
	SUM_PART(32)
	SUM_PART(16)
	SUM_PART(8)
	SUM_PART(4)
#undef SUM_PART
	/* 0 to 3 bytes left, at a word boundary: zero-padded into one word. */
	for (int i = 0; i < 3; i++) {
		if (done + i >= len)
			break;
		q = data + off + ((done + i) & 0x1FFF);
		if ((void *)(q + 1) > end)
			return -1;
		tail[i] = *q;
	}
	if (seed < 0)
		return -1;
	return bpf_csum_diff(NULL, 0, (__be32 *)tail, 4, (__u32)seed);
}

/*
 * IPv6 forward of a CHECKSUM_PARTIAL skb. The strip leaves its csum_start
 * on the old UDP header offset, behind the new one, so the socket no longer
 * takes the partial checksum as verified and checks the field in full: it
 * must hold the whole checksum, summed here over the new datagram (its
 * UDP header written with check 0).
 */
static __always_inline int fwd_csum6_full(struct __sk_buff *skb, const struct mmp_udp_fval *v, __u32 ulen)
{
	struct pseudo ph = { .len = bpf_htonl(ulen), .next = bpf_htonl(IPPROTO_UDP) };
	__s64 sum;
	__u16 check;

	addr_copy(ph.saddr, v->client_addr);
	addr_copy(ph.daddr, v->up_addr);
	sum = bpf_csum_diff(NULL, 0, (__be32 *)&ph, sizeof(ph), 0);
	if (sum < 0)
		return -1;
	sum = sum_bytes(skb, L3 + IP6_HLEN, ulen, sum); /* a constant offset: the verifier bounds packet pointers */
	if (sum < 0)
		return -1;
	check = mmp_csum_fold(sum);
	if (!check)
		check = 0xFFFF;
	return bpf_skb_store_bytes(skb, L3 + IP6_HLEN + 6, &check, 2, 0);
}

/*
 * IPv6 forward, after the strip: the checksum follows the new addresses and
 * length (pseudo header), ports and length (UDP header), and the header
 * bytes that left (hl: V2_HLEN6, SPP_HLEN or 0, from p->h).
 */
static __always_inline int fwd_csum6(struct __sk_buff *skb, const struct pkt *p, const struct mmp_udp_fval *v,
				     const struct udphdr *nu, int hl)
{
	struct pseudo ph_old = { .len = bpf_htonl(8 + p->plen) }, ph_new = { .len = bpf_htonl(bpf_ntohs(nu->len)) };
	/* The old UDP header (check 0) and the stripped header, zero-padded to whole words. */
	__u8 gone[8 + V2_HLEN6] = { 0 };
	struct udphdr now = *nu;
	__s64 dd;

	addr_copy(ph_old.saddr, p->saddr);
	addr_copy(ph_old.daddr, p->daddr);
	addr_copy(ph_new.saddr, v->client_addr);
	addr_copy(ph_new.daddr, v->up_addr);
	__builtin_memcpy(gone, &p->uh, 6);
	now.check = 0;
	if (hl == V2_HLEN6) {
		__builtin_memcpy(gone + 8, p->h, V2_HLEN6);
		dd = bpf_csum_diff((__be32 *)gone, 8 + V2_HLEN6, (__be32 *)&now, 8, 0);
	} else if (hl == SPP_HLEN) {
		__builtin_memcpy(gone + 8, p->h, SPP_HLEN);
		dd = bpf_csum_diff((__be32 *)gone, 8 + SPP_HLEN + 2, (__be32 *)&now, 8, 0);
	} else {
		/* No header (a "first" flow's later datagrams): only ports and length change. */
		dd = bpf_csum_diff((__be32 *)gone, 8, (__be32 *)&now, 8, 0);
	}
	return udp_csum_update(skb, p->l4 + 6, nu->check,
			       bpf_csum_diff((__be32 *)&ph_old, sizeof(ph_old), (__be32 *)&ph_new, sizeof(ph_new), 0), dd);
}

/*
 * A datagram of a known flow from its LB: strip its header and send it to
 * the upstream as the client. The new UDP header goes over the header's
 * last 8 bytes and the room before them is removed (BPF_ADJ_ROOM_NET), so
 * the payload never moves.
 *
 * IPv4: UDP checksum 0 (allowed, and cheaper than following the strip).
 * IPv6: the checksum is mandatory. It follows incrementally (fwd_csum6),
 * except on a CHECKSUM_PARTIAL skb (an LB on this host or behind a veth),
 * whose checksum is summed in full (fwd_csum6_full says why); past 4 KiB
 * such a datagram goes to userspace instead.
 */
static __always_inline int forward(struct __sk_buff *skb, struct pkt *p, struct mmp_udp_fval *v, int hl)
{
	__u32 ulen = 8 + p->plen - hl;
	struct udphdr nu;
	bool full = p->v6 && hl && (sum_in_full || mmp_csum_partial(skb));

	/* Too long to sum here: userspace sends it (before the hand-over counts it). */
	if (full && ulen > SUM_CHUNK * SUM_CHUNKS) {
		count(MMP_UDP_KCNT_PASS_BIG);
		return TC_ACT_UNSPEC;
	}
	if (v->redirect_out) {
		/* Beyond loopback (§14): a redirect does not fragment; the socket does. */
		if (p->l4 - L3 + ulen > v->max_len) {
			count(MMP_UDP_KCNT_PASS_BIG);
			return TC_ACT_UNSPEC;
		}
		/*
		 * A partial checksum (an LB on a veth) would be finished by the
		 * device from csum_start, which the strip leaves behind the new
		 * UDP header (and IPv4's check 0 is not a partial sum): fine
		 * for a local socket, corrupt on a wire. Userspace sends it.
		 */
		if (mmp_csum_partial(skb)) {
			count(MMP_UDP_KCNT_PASS_PARTIAL);
			return TC_ACT_UNSPEC;
		}
	}
	switch (draining(skb, &v->mode, &v->passed, &v->held, v->cookie, false)) {
	case DRAIN_PASS:
		return TC_ACT_UNSPEC;
	case DRAIN_HOLD:
		return TC_ACT_SHOT;
	case DRAIN_DONE:
		break;
	}
	nu.source = v->client_port;
	nu.dest = v->up_port;
	nu.len = bpf_htons(ulen);
	nu.check = p->v6 && !full ? p->uh.check : 0;
	if (!p->v6) {
		/*
		 * The room first: then the new UDP header lands right after the
		 * IP header, and one store takes both. It replaces the same
		 * bytes as storing the UDP header over the PROXY header's last 8
		 * and then the IP header would.
		 */
		if (hl && bpf_skb_adjust_room(skb, -hl, BPF_ADJ_ROOM_NET, 0))
			goto fail;
		set_ip4(p, v->client_addr[3], v->up_addr[3], ulen);
		p->uh = nu;
		if (store_ip(skb, &p->ip, IP4_HLEN + sizeof(nu)))
			goto fail;
	} else {
		if (bpf_skb_store_bytes(skb, p->l4 + hl, &nu, sizeof(nu), BPF_F_RECOMPUTE_CSUM))
			goto fail;
		if (hl && bpf_skb_adjust_room(skb, -hl, BPF_ADJ_ROOM_NET, 0))
			goto fail;
		if (store_l3(skb, p, v->client_addr, v->up_addr, ulen))
			goto fail;
		if (full ? fwd_csum6_full(skb, v, ulen) : fwd_csum6(skb, p, v, &nu, hl))
			goto fail;
	}
	/*
	 * Plain adds, as the tc engine's (docs/DESIGN.md §3b, "Plain counts"):
	 * these per-flow counts are for display; the exact totals are the
	 * per-CPU mmp_udp_kcnt ones.
	 */
	v->pkts += 1;
	v->bytes += p->plen - hl;
	v->last_ns = bpf_ktime_get_coarse_ns(); /* see mmp_udp.h: no clock read per datagram */
	count(MMP_UDP_KCNT_FWD);
	if (!v->redirect_ifindex)
		return TC_ACT_OK;
	if (v->redirect_out)
		return bpf_redirect_neigh(v->redirect_ifindex, NULL, 0, 0);
	{
		/* lo takes a frame only if its destination MAC is its own, all zero (else OTHERHOST). */
		__u8 zero[12] = { 0 };

		bpf_skb_store_bytes(skb, 0, zero, sizeof(zero), 0);
	}
	return bpf_redirect(v->redirect_ifindex, BPF_F_INGRESS);
fail:
	/* The packet may be half rewritten: it must not reach anyone. */
	count(MMP_UDP_KCNT_ERRORS);
	return TC_ACT_SHOT;
}

/*
 * The upstream's reply to a known flow: from the listen address to the LB;
 * for SPP, with v->spp_hdr inserted before the payload (BPF_ADJ_ROOM_NET
 * adds zeroed room between the IP and UDP headers: the new UDP header and
 * the SPP header are written over it and the old UDP header).
 *
 * Both families, the UDP checksum incrementally (udp_csum_update). The
 * inserted room leaves a CHECKSUM_PARTIAL skb's csum_start on the old UDP
 * header, 38 bytes into the new one: harmless for a local LB (the socket
 * takes a partial checksum as verified, nothing computes it), but a NIC or
 * skb_checksum_help on the way out would compute from there and write the
 * result into the SPP header. Replies from the upstream on lo are always
 * partial, so userspace writes no SPP entry for a remote LB: it sends those.
 */
static __always_inline int reply(struct __sk_buff *skb, struct pkt *p, struct mmp_udp_rval *v)
{
	__u32 grow = v->format == MMP_UDP_FMT_SPP ? SPP_HLEN : 0;
	struct pseudo ph_old = { .len = bpf_htonl(8 + p->plen) }, ph_new = { .len = bpf_htonl(8 + p->plen + grow) };
	/* The new UDP header (check 0 for the sums), the SPP header, zero-padded to whole words. */
	__u8 hdrs[8 + SPP_HLEN + 2] = { 0 };
	struct udphdr nu, old = p->uh;
	__s64 dd;

	/* A redirect does not fragment: larger replies go to the flow's socket, and userspace sends them. */
	if (p->l4 - L3 + 8 + p->plen + grow > v->max_len) {
		count(MMP_UDP_KCNT_PASS_BIG);
		return TC_ACT_UNSPEC;
	}
	switch (draining(skb, &v->mode, &v->passed, &v->held, v->cookie, true)) {
	case DRAIN_PASS:
		return TC_ACT_UNSPEC;
	case DRAIN_HOLD:
		return TC_ACT_SHOT;
	case DRAIN_DONE:
		break;
	}
	if (grow && bpf_skb_adjust_room(skb, SPP_HLEN, BPF_ADJ_ROOM_NET, 0))
		goto fail;
	nu.source = v->local_port;
	nu.dest = v->lb_port;
	nu.len = bpf_htons(8 + p->plen + grow);
	nu.check = 0;
	__builtin_memcpy(hdrs, &nu, sizeof(nu));
	old.check = 0;
	addr_copy(ph_old.saddr, p->saddr);
	addr_copy(ph_old.daddr, p->daddr);
	addr_copy(ph_new.saddr, v->local_addr);
	addr_copy(ph_new.daddr, v->lb_addr);
	if (grow) {
		__builtin_memcpy(hdrs + 8, v->spp_hdr, SPP_HLEN);
		dd = bpf_csum_diff((__be32 *)&old, 8, (__be32 *)hdrs, 8 + SPP_HLEN + 2, 0);
	} else {
		dd = bpf_csum_diff((__be32 *)&old, 8, (__be32 *)hdrs, 8, 0);
	}
	/* The UDP (and SPP) header with the old checksum, which udp_csum_update then adjusts. */
	__builtin_memcpy(hdrs + 6, &p->uh.check, 2);
	if (grow) {
		if (bpf_skb_store_bytes(skb, p->l4, hdrs, 8 + SPP_HLEN, BPF_F_RECOMPUTE_CSUM))
			goto fail;
	} else if (bpf_skb_store_bytes(skb, p->l4, hdrs, 8, BPF_F_RECOMPUTE_CSUM)) {
		goto fail;
	}
	if (store_l3(skb, p, v->local_addr, v->lb_addr, 8 + p->plen + grow))
		goto fail;
	if (udp_csum_update(skb, p->l4 + 6, p->uh.check,
			    bpf_csum_diff((__be32 *)&ph_old, sizeof(ph_old), (__be32 *)&ph_new, sizeof(ph_new), 0), dd))
		goto fail;
	v->pkts += 1; /* plain adds: see forward() */
	v->bytes += p->plen;
	v->last_ns = bpf_ktime_get_coarse_ns(); /* see mmp_udp.h: no clock read per datagram */
	count(MMP_UDP_KCNT_REV);
	if (!v->redirect_ifindex)
		return TC_ACT_OK; /* the LB is on this host: up the stack to its socket */
	return bpf_redirect_neigh(v->redirect_ifindex, NULL, 0, 0);
fail:
	count(MMP_UDP_KCNT_ERRORS);
	return TC_ACT_SHOT;
}

/*
 * Both directions at ingress: the LB's datagrams on lo or its interface,
 * the upstream's replies on lo (or on its interface beyond loopback, where
 * bpf/steer.bpf.c, ahead of us, marks them for local delivery). Ingress runs in the same pass that queues a
 * datagram on its socket, so once userspace finds a flow's socket queue
 * empty, no older datagram of that direction is still on its way there and
 * the kernel may take over without reordering (at lo egress, replies would
 * still sit in the loopback backlog).
 */
SEC("tc")
int mmp_udp_ingress(struct __sk_buff *skb)
{
	struct mmp_udp_fval *fv;
	struct mmp_udp_rval *rv;
	struct mmp_udp_rkey rk;
	struct pkt p;
	int hl = -1;

	if (parse(skb, &p))
		return TC_ACT_UNSPEC;
	fv = find_flow(skb, &p, &hl);
	if (fv) {
		if (hl == HL_WRONG_IFACE)
			return TC_ACT_UNSPEC; /* untouched, as if no flow matched: the stack judges it */
		if (hl < 0) {
			/* A stale entry's datagrams tell userspace to look (and re-arm). */
			if (fv->stale)
				skb->mark = MMP_UDP_MARK_STALE;
			count(MMP_UDP_KCNT_PASS_HEADER);
			return TC_ACT_UNSPEC;
		}
		return forward(skb, &p, fv, hl);
	}
	addr_copy(rk.up_addr, p.saddr);
	addr_copy(rk.client_addr, p.daddr);
	rk.up_port = p.uh.source;
	rk.client_port = p.uh.dest;
	rv = bpf_map_lookup_elem(&mmp_udp_rev, &rk);
	if (!rv || wrong_iface(skb, rv->in_ifindex))
		return TC_ACT_UNSPEC;
	return reply(skb, &p, rv);
}

char LICENSE[] SEC("license") = "GPL";
