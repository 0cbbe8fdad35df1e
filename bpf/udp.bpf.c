// SPDX-License-Identifier: GPL-2.0
/*
 * UDP mode in the kernel.
 *
 * Maps: mmp_udp_flows and mmp_udp_cnt are written by userspace, which
 * relays the datagrams (user/udp_forward.c, udp_reply.c), so operators see
 * every flow with bpftool or `mmproxy-bpf stats`. max_entries of the flow
 * maps are set at load to the flow limit; NO_PREALLOC keeps an idle proxy
 * from holding that memory.
 *
 * The fast path (include/mmp_udp.h): once userspace has opened a flow it
 * writes mmp_udp_fwd/mmp_udp_rev, and this TC program (ingress of lo and of
 * the remote LBs' interfaces) moves the flow's later datagrams without a
 * socket, as DESIGN §4 measured:
 *   forward: strip the header by writing the new UDP header over its last
 *       8 bytes and removing the rest with bpf_skb_adjust_room
 *       (BPF_ADJ_ROOM_NET); UDP checksum 0 (IPv4 allows it: the checksum of
 *       a partial skb cannot follow the strip); continue on lo, or zero the
 *       MACs and redirect into lo.
 *   reply: rewrite the upstream's reply to come from the listen address and
 *       go to the LB; continue on lo, or bpf_redirect_neigh out of the LB's
 *       interface.
 * Packets that are not ours return TC_ACT_UNSPEC, so other classifiers on
 * the hook (the tc engine's) still see them.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "mmp_udp.h"

#define TC_ACT_UNSPEC (-1)
#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF
#define IPPROTO_UDP 17
#define L3 ETH_HLEN
#define L4 (ETH_HLEN + 20)
#define V2_HLEN 28 /* 16 + an INET address block: the only v2 form handled here */
#define SPP_HLEN 38

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
	struct iphdr ip;
	struct udphdr uh;
	__u32 plen; /* UDP payload length */
};

/* A plain IPv4/UDP packet, lengths consistent, not a fragment nor GSO. Returns 0, or -1: not ours to touch. */
static __always_inline int parse(struct __sk_buff *skb, struct pkt *p)
{
	__u32 ulen;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return -1;
	if (bpf_skb_load_bytes(skb, L3, &p->ip, sizeof(p->ip)) || p->ip.ihl != 5 || p->ip.protocol != IPPROTO_UDP)
		return -1;
	if (bpf_skb_load_bytes(skb, L4, &p->uh, sizeof(p->uh)))
		return -1;
	ulen = bpf_ntohs(p->uh.len);
	if (ulen < 8 || bpf_ntohs(p->ip.tot_len) != 20 + ulen || skb->len < L4 + ulen)
		return -2;
	if (p->ip.frag_off & bpf_htons(IP_MF | IP_OFFSET) || skb->gso_segs > 1)
		return -2;
	p->plen = ulen - 8;
	return 0;
}

static __always_inline __u16 fold(__s64 sum)
{
	__u32 s = (__u32)sum;

	s = (s & 0xFFFF) + (s >> 16);
	s = (s & 0xFFFF) + (s >> 16);
	return (__u16)~s;
}

/* Store the changed IPv4 header with a fresh checksum. */
static __always_inline int store_ip(struct __sk_buff *skb, struct iphdr *ip)
{
	ip->check = 0;
	ip->check = fold(bpf_csum_diff(NULL, 0, (__be32 *)ip, sizeof(*ip), 0));
	return bpf_skb_store_bytes(skb, L3, ip, sizeof(*ip), BPF_F_RECOMPUTE_CSUM);
}

/* The client an SPP header names, or 0 when h (SPP_HLEN bytes) is not one with an IPv4 client. */
static __always_inline int spp_client(const __u8 *h, __be32 *addr, __be16 *port)
{
	if (h[0] != 0x56 || h[1] != 0xEC || h[12] != 0xFF || h[13] != 0xFF)
		return 0;
	for (int i = 2; i < 12; i++)
		if (h[i])
			return 0;
	__builtin_memcpy(addr, &h[14], 4);
	__builtin_memcpy(port, &h[34], 2);
	return 1;
}

/*
 * How many header bytes start this payload of PROXY v2 flow v: V2_HLEN for
 * a plain header naming exactly v's client, 0 for none where none is
 * required, -1 for none where one is (userspace drops and counts it), -2
 * for any other header (another client, TLVs, IPv6...: userspace's to
 * judge). h holds up to V2_HLEN bytes.
 */
static __always_inline int v2_header_len(const __u8 *h, __u32 plen, const struct mmp_udp_fval *v)
{
	static const __u8 sig[12] = { 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A };
	__be32 addr;
	__be16 port;

	if (plen < 12)
		return v->header_required ? -1 : 0;
	for (int i = 0; i < 12; i++)
		if (h[i] != sig[i])
			return v->header_required ? -1 : 0;
	/* PROXY, INET, DGRAM, exactly the address block: any other form is userspace's. */
	if (plen < V2_HLEN || h[12] != 0x21 || h[13] != 0x12 || h[14] != 0 || h[15] != 12)
		return -2;
	__builtin_memcpy(&addr, &h[16], 4);
	__builtin_memcpy(&port, &h[24], 2);
	return addr == v->client_addr && port == v->client_port ? V2_HLEN : -2;
}

/*
 * Find the flow of this datagram; *hl gets its header length, -1: leave it
 * to userspace. A PROXY v2 header other than the flow's own (the LB reused
 * the ip:port for another client, most likely) marks the entry stale here,
 * so the header-less datagrams right behind it cannot reach the upstream as
 * the old client before userspace has looked.
 */
static __always_inline struct mmp_udp_fval *find_flow(struct __sk_buff *skb, const struct pkt *p, int *hl)
{
	struct mmp_udp_fkey k = {
		.lb_addr = p->ip.saddr,
		.local_addr = p->ip.daddr,
		.lb_port = p->uh.source,
		.local_port = p->uh.dest,
	};
	__u8 h[SPP_HLEN] = { 0 };
	struct mmp_udp_fval *v;

	/* As much of the header as there is, in one of three fixed sizes (loads take constants). */
	if (p->plen >= SPP_HLEN)
		bpf_skb_load_bytes(skb, L4 + 8, h, SPP_HLEN);
	else if (p->plen >= V2_HLEN)
		bpf_skb_load_bytes(skb, L4 + 8, h, V2_HLEN);
	else if (p->plen >= 12)
		bpf_skb_load_bytes(skb, L4 + 8, h, 12);
	if (p->plen >= SPP_HLEN && spp_client(h, &k.client_addr, &k.client_port)) {
		v = bpf_map_lookup_elem(&mmp_udp_fwd, &k);
		if (v) {
			*hl = SPP_HLEN;
			return v;
		}
		/* Not an SPP flow of ours: maybe a v2 flow's payload that starts with the magic. */
		k.client_addr = 0;
		k.client_port = 0;
	}
	v = bpf_map_lookup_elem(&mmp_udp_fwd, &k);
	if (!v)
		return NULL;
	if (v->stale) {
		*hl = -1;
		return v;
	}
	*hl = v->format == MMP_UDP_FMT_V2 ? v2_header_len(h, p->plen, v) : -1;
	if (*hl == -2) {
		v->stale = 1;
		*hl = -1;
	}
	return v;
}

/*
 * An entry still draining (see mmp_udp.h): true when this datagram must go
 * on to userspace, marked and counted; false once userspace has sent every
 * marked one before it, which switches the entry to ACTIVE.
 */
static __always_inline bool draining(struct __sk_buff *skb, __u8 *mode, __u64 *passed, __u64 cookie, bool rev)
{
	struct mmp_udp_drain *d;
	__u64 consumed, n = *passed;

	if (*mode == MMP_UDP_MODE_ACTIVE)
		return false;
	d = bpf_map_lookup_elem(&mmp_udp_drain, &cookie);
	consumed = d ? (rev ? d->rev : d->fwd) : 0;
	if (n && consumed == n) {
		*mode = MMP_UDP_MODE_ACTIVE;
		return false;
	}
	__sync_fetch_and_add(passed, 1);
	skb->mark = MMP_UDP_MARK_DRAIN;
	count(MMP_UDP_KCNT_DRAINED);
	return true;
}

/* A datagram of a known flow from its LB: strip its header and send it to the upstream as the client. */
static __always_inline int forward(struct __sk_buff *skb, struct pkt *p, struct mmp_udp_fval *v, int hl)
{
	if (draining(skb, &v->mode, &v->passed, v->cookie, false))
		return TC_ACT_UNSPEC;
	p->uh.source = v->client_port;
	p->uh.dest = v->up_port;
	p->uh.len = bpf_htons(8 + p->plen - hl);
	p->uh.check = 0;
	/* The new UDP header goes over the header's last 8 bytes; the room before them is removed. */
	if (bpf_skb_store_bytes(skb, L4 + hl, &p->uh, sizeof(p->uh), BPF_F_RECOMPUTE_CSUM))
		goto fail;
	if (hl && bpf_skb_adjust_room(skb, -hl, BPF_ADJ_ROOM_NET, 0))
		goto fail;
	p->ip.saddr = v->client_addr;
	p->ip.daddr = v->up_addr;
	p->ip.tot_len = bpf_htons(bpf_ntohs(p->ip.tot_len) - hl);
	if (store_ip(skb, &p->ip))
		goto fail;
	__sync_fetch_and_add(&v->pkts, 1);
	__sync_fetch_and_add(&v->bytes, p->plen - hl);
	v->last_ns = bpf_ktime_get_ns();
	count(MMP_UDP_KCNT_FWD);
	if (!v->redirect_ifindex)
		return TC_ACT_OK;
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

/* The upstream's reply to a known flow: from the listen address to the LB. */
static __always_inline int reply(struct __sk_buff *skb, struct pkt *p, struct mmp_udp_rval *v)
{
	__u64 csum_flags = BPF_F_MARK_MANGLED_0;
	__be32 old;
	__be16 oldp;

	/* A redirect does not fragment: larger replies go to the flow's socket, and userspace sends them. */
	if (bpf_ntohs(p->ip.tot_len) > v->max_len) {
		count(MMP_UDP_KCNT_PASS_BIG);
		return TC_ACT_UNSPEC;
	}
	if (draining(skb, &v->mode, &v->passed, v->cookie, true))
		return TC_ACT_UNSPEC;
	/*
	 * Addresses are in the pseudo header, ports are not: for a
	 * CHECKSUM_PARTIAL skb the helper updates only the former, as it should.
	 * MANGLED_0 keeps a "no checksum" 0 from turning into a wrong one.
	 */
	old = p->ip.saddr;
	if (bpf_l4_csum_replace(skb, L4 + 6, old, v->local_addr, csum_flags | BPF_F_PSEUDO_HDR | 4))
		goto fail;
	old = p->ip.daddr;
	if (bpf_l4_csum_replace(skb, L4 + 6, old, v->lb_addr, csum_flags | BPF_F_PSEUDO_HDR | 4))
		goto fail;
	oldp = p->uh.source;
	if (bpf_l4_csum_replace(skb, L4 + 6, oldp, v->local_port, csum_flags | 2))
		goto fail;
	oldp = p->uh.dest;
	if (bpf_l4_csum_replace(skb, L4 + 6, oldp, v->lb_port, csum_flags | 2))
		goto fail;
	if (bpf_skb_store_bytes(skb, L4, &v->local_port, 2, 0) || bpf_skb_store_bytes(skb, L4 + 2, &v->lb_port, 2, 0))
		goto fail;
	p->ip.saddr = v->local_addr;
	p->ip.daddr = v->lb_addr;
	if (store_ip(skb, &p->ip))
		goto fail;
	__sync_fetch_and_add(&v->pkts, 1);
	__sync_fetch_and_add(&v->bytes, p->plen);
	v->last_ns = bpf_ktime_get_ns();
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
 * the upstream's replies on lo. Ingress runs in the same pass that queues a
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
		if (hl < 0) {
			/* A stale entry's datagrams tell userspace to look (and re-arm). */
			if (fv->stale)
				skb->mark = MMP_UDP_MARK_STALE;
			count(MMP_UDP_KCNT_PASS_HEADER);
			return TC_ACT_UNSPEC;
		}
		return forward(skb, &p, fv, hl);
	}
	rk.up_addr = p.ip.saddr;
	rk.client_addr = p.ip.daddr;
	rk.up_port = p.uh.source;
	rk.client_port = p.uh.dest;
	rv = bpf_map_lookup_elem(&mmp_udp_rev, &rk);
	if (!rv)
		return TC_ACT_UNSPEC;
	return reply(skb, &p, rv);
}

char LICENSE[] SEC("license") = "GPL";
