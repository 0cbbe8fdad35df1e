// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP gate (docs/DESIGN.md §2): a TCP SYN (without ACK) or a UDP
 * datagram to the listen address and port(s) from a source that is not in
 * the allowed subnets is dropped before the stack allocates an skb. The
 * tries are the control plane's own mmp_allow4/mmp_allow6 (the loader reuses
 * the pinned maps), so the gate and accept-time policy never disagree.
 * Everything else passes: the gate only ever removes what accept would refuse.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "mmp_maps.h"
#include "mmp_xdp.h"

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define IP_MF 0x2000
#define IP_OFFSET 0x1FFF
#define IP6_OFFSET 0xFFF8 /* frag_off of the IPv6 fragment header, in 8-byte units << 3 */
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_DEST 60
#define IPV6_EXT_MAX 4 /* extension headers walked before the gate gives up (passes) */

/* Set by the loader between open and load (user/policy/xdp_gate.c). */
const volatile __u8 gate_proto = IPPROTO_TCP;
const volatile __u8 gate_proto2; /* -p tcp,udp: IPPROTO_UDP, judged beside gate_proto; 0: none */
const volatile __u16 port_lo = 8443, port_hi = 8443; /* host order, inclusive */
const volatile __u8 match4; /* 0: IPv4 not judged, 1: any destination (0.0.0.0 or ::), 2: dst4 only */
const volatile __u8 match6; /* 0: IPv6 not judged, 1: any destination (::), 2: dst6 only */
const volatile __u8 dst4[4];
const volatile __u8 dst6[16];

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MMP_ALLOW_MAX_ENTRIES);
	__type(key, struct mmp_allow4_key);
	__type(value, struct mmp_allow_value);
} mmp_allow4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MMP_ALLOW_MAX_ENTRIES);
	__type(key, struct mmp_allow6_key);
	__type(value, struct mmp_allow_value);
} mmp_allow6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MMP_XDP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} mmp_xdp_cnt SEC(".maps");

static __always_inline int count(__u32 which, int verdict)
{
	__u64 *v = bpf_map_lookup_elem(&mmp_xdp_cnt, &which);

	if (v)
		*v += 1; /* per-CPU: no atomic needed */
	return verdict;
}

static __always_inline bool dst4_matches(const __u8 *daddr)
{
	if (match4 == 1)
		return true;
	if (match4 != 2)
		return false;
	for (int i = 0; i < 4; i++)
		if (daddr[i] != dst4[i])
			return false;
	return true;
}

static __always_inline bool dst6_matches(const __u8 *daddr)
{
	if (match6 == 1)
		return true;
	if (match6 != 2)
		return false;
	for (int i = 0; i < 16; i++)
		if (daddr[i] != dst6[i])
			return false;
	return true;
}

/*
 * The transport header at l4: is this a packet the gate judges (a SYN
 * without ACK, or any UDP datagram, to one of our ports)? Returns 1 (judge),
 * 0 (not ours: pass) or -1 (header ends early). first_frag: more fragments
 * follow, so a TCP header cut short after the ports is the tiny-fragment
 * trick (RFC 1858: the flags arrive in the next fragment): judged by its ports.
 */
static __always_inline int judged_l4(void *l4, void *data_end, __u8 proto, bool first_frag)
{
	__u16 dport;

	if (proto != gate_proto && proto != gate_proto2)
		return 0;
	if (proto == IPPROTO_TCP) {
		struct tcphdr *th = l4;

		if ((void *)(th + 1) > data_end) {
			__be16 *ports = l4;

			if (!first_frag || (void *)(ports + 2) > data_end)
				return -1;
			dport = bpf_ntohs(ports[1]);
			return dport >= port_lo && dport <= port_hi ? 1 : -1;
		}
		dport = bpf_ntohs(th->dest);
		if (dport < port_lo || dport > port_hi)
			return 0;
		return th->syn && !th->ack;
	}
	if (proto == IPPROTO_UDP) {
		struct udphdr *uh = l4;

		if ((void *)(uh + 1) > data_end)
			return -1;
		dport = bpf_ntohs(uh->dest);
		return dport >= port_lo && dport <= port_hi;
	}
	return 0;
}

static __always_inline int gate_ipv4(struct iphdr *iph, void *data_end)
{
	struct mmp_allow4_key key = { .prefixlen = 32 };
	int judged;

	if ((void *)(iph + 1) > data_end)
		return count(MMP_XDP_CNT_malformed, XDP_PASS);
	if (iph->version != 4 || iph->ihl < 5)
		return count(MMP_XDP_CNT_malformed, XDP_PASS);
	if (!dst4_matches((const __u8 *)&iph->daddr))
		return count(MMP_XDP_CNT_passed_other, XDP_PASS);
	/* A later fragment has no ports; its first fragment was judged (and dropped, if not allowed). */
	if (bpf_ntohs(iph->frag_off) & IP_OFFSET)
		return count(MMP_XDP_CNT_passed_other, XDP_PASS);
	/* ihl > 5: options skipped */
	judged = judged_l4((void *)iph + iph->ihl * 4, data_end, iph->protocol, bpf_ntohs(iph->frag_off) & IP_MF);
	if (judged < 0)
		return count(MMP_XDP_CNT_malformed, XDP_PASS);
	if (!judged)
		return count(MMP_XDP_CNT_passed_other, XDP_PASS);
	__builtin_memcpy(key.addr, &iph->saddr, 4);
	if (bpf_map_lookup_elem(&mmp_allow4, &key))
		return count(MMP_XDP_CNT_passed, XDP_PASS);
	return count(MMP_XDP_CNT_dropped_not_allowed, XDP_DROP);
}

static __always_inline int gate_ipv6(struct ipv6hdr *ip6h, void *data_end)
{
	struct mmp_allow6_key key = { .prefixlen = 128 };
	void *l4 = ip6h + 1;
	bool first_frag = false;
	__u8 next;
	int judged;

	if (l4 > data_end)
		return count(MMP_XDP_CNT_malformed, XDP_PASS);
	if (!dst6_matches((const __u8 *)&ip6h->daddr))
		return count(MMP_XDP_CNT_passed_other, XDP_PASS);
	next = ip6h->nexthdr;
	/* Extension headers in front of TCP/UDP: a SYN behind one must not slip through. */
	for (int i = 0; i < IPV6_EXT_MAX; i++) {
		if (next == NEXTHDR_FRAGMENT) {
			struct frag_hdr *fh = l4;

			if ((void *)(fh + 1) > data_end)
				return count(MMP_XDP_CNT_malformed, XDP_PASS);
			if (bpf_ntohs(fh->frag_off) & IP6_OFFSET)
				return count(MMP_XDP_CNT_passed_other, XDP_PASS);
			first_frag = bpf_ntohs(fh->frag_off) & 1; /* IP6_MF */
			next = fh->nexthdr;
			l4 = fh + 1;
		} else if (next == NEXTHDR_HOP || next == NEXTHDR_ROUTING || next == NEXTHDR_DEST) {
			struct ipv6_opt_hdr *oh = l4;

			if ((void *)(oh + 1) > data_end)
				return count(MMP_XDP_CNT_malformed, XDP_PASS);
			next = oh->nexthdr;
			l4 += (oh->hdrlen + 1) * 8;
		} else {
			break;
		}
	}
	judged = judged_l4(l4, data_end, next, first_frag);
	if (judged < 0)
		return count(MMP_XDP_CNT_malformed, XDP_PASS);
	if (!judged)
		return count(MMP_XDP_CNT_passed_other, XDP_PASS);
	__builtin_memcpy(key.addr, &ip6h->saddr, 16);
	if (bpf_map_lookup_elem(&mmp_allow6, &key))
		return count(MMP_XDP_CNT_passed, XDP_PASS);
	return count(MMP_XDP_CNT_dropped_not_allowed, XDP_DROP);
}

SEC("xdp")
int mmp_xdp_gate(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	__u16 proto;

	if (l3 > data_end)
		return count(MMP_XDP_CNT_malformed, XDP_PASS);
	proto = bpf_ntohs(eth->h_proto);
	/* One VLAN tag (802.1Q or 802.1ad); a second one is not ours to judge. */
	if (proto == ETH_P_8021Q || proto == ETH_P_8021AD) {
		struct vlan_hdr *vh = l3;

		if ((void *)(vh + 1) > data_end)
			return count(MMP_XDP_CNT_malformed, XDP_PASS);
		proto = bpf_ntohs(vh->h_vlan_encapsulated_proto);
		l3 = vh + 1;
	}
	if (proto == ETH_P_IP && match4)
		return gate_ipv4(l3, data_end);
	if (proto == ETH_P_IPV6 && match6)
		return gate_ipv6(l3, data_end);
	return count(MMP_XDP_CNT_passed_other, XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
