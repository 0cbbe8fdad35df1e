// SPDX-License-Identifier: GPL-2.0
/*
 * Reply steering (docs/DESIGN.md §14), at tc ingress of the interface the
 * route to a non-loopback upstream uses (a bridge, a routed veth, a tunnel,
 * an uplink). A packet whose tuple (upstream ip:port -> client ip:port) the
 * control plane recorded before connect() is a reply to one of the proxy's
 * spoofed connections: it gets skb->mark = MMP_STEER_MARK, which
 * setup-routing's `ip rule fwmark` sends to a table whose `local 0/0 dev lo`
 * delivers it to the proxy's transparent socket. Nothing is rewritten or
 * redirected, and every packet, ours or not, goes on to the next filter
 * (TC_ACT_UNSPEC): the upstream's own traffic (a container's outbound
 * connections) is routed as if the program were not there.
 *
 * Headers are read relative to the network header (bpf_skb_load_bytes_relative),
 * so Ethernet devices (bridge, veth) and L3 devices without a MAC header (GRE,
 * ipip, WireGuard) are handled alike.
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "common.h"
#include "mmp_steer.h"

#define AF_INET_NR 2
#define AF_INET6_NR 10
#define IPPROTO_TCP_NR 6
#define IPPROTO_UDP_NR 17

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MMP_STEER_MAX_ENTRIES);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* an idle proxy costs no memory for the entries it may hold */
	__type(key, struct mmp_steer_key);
	__type(value, struct mmp_steer_val);
} mmp_reply_steer SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MMP_STEER_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} mmp_steer_cnt SEC(".maps");

/*
 * The upstreams' ports (-4/-6, a range too), set by the control plane before
 * it attaches: a packet whose source port is none of them passes after one
 * read, without a hash lookup (most of a bridge's traffic is not ours).
 */
__u32 mmp_steer_ports[65536 / 32];

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&mmp_steer_cnt, &idx);

	if (v)
		*v += 1; /* per-CPU */
}

static __always_inline bool port_marked(__be16 port)
{
	__u32 p = bpf_ntohs(port);

	return mmp_steer_ports[(p >> 5) & 2047] & (1U << (p & 31));
}

#define IPPROTO_ICMP_NR 1
#define IPPROTO_ICMPV6_NR 58
#define ICMP_HLEN 8 /* type, code, checksum, 4 bytes; the quoted packet follows */

/*
 * An ICMP error is an error about the quoted packet: the one a spoofed
 * socket sent (client ip:port -> upstream ip:port). Its key is the reply's,
 * read from the quote with the roles swapped. Errors only (IPv4 destination
 * unreachable, fragmentation needed among them, time exceeded, parameter
 * problem; ICMPv6 the same and packet too big): an echo or an informational
 * message quotes nothing. Returns 0 with the key filled, -1 otherwise.
 */
static __always_inline int icmp_quote_key(struct __sk_buff *skb, __u32 l4off, bool v6, struct mmp_steer_key *k,
					  __be16 *up_port)
{
	__be16 ports[2];
	__u32 inner_l4;
	__u8 type, proto;

	if (bpf_skb_load_bytes_relative(skb, l4off, &type, 1, BPF_HDR_START_NET))
		return -1;
	if (v6) {
		struct ipv6hdr ip6;

		if (type < 1 || type > 4)
			return -1;
		if (bpf_skb_load_bytes_relative(skb, l4off + ICMP_HLEN, &ip6, sizeof(ip6), BPF_HDR_START_NET))
			return -1;
		proto = ip6.nexthdr;
		inner_l4 = l4off + ICMP_HLEN + sizeof(ip6);
		__builtin_memcpy(k->client_addr, &ip6.saddr, 16);
		__builtin_memcpy(k->up_addr, &ip6.daddr, 16);
	} else {
		struct iphdr ip;

		if (type != 3 && type != 11 && type != 12)
			return -1;
		if (bpf_skb_load_bytes_relative(skb, l4off + ICMP_HLEN, &ip, sizeof(ip), BPF_HDR_START_NET) || ip.ihl < 5 ||
		    (ip.frag_off & bpf_htons(IP_OFFSET)))
			return -1;
		proto = ip.protocol;
		inner_l4 = l4off + ICMP_HLEN + ip.ihl * 4;
		k->client_addr[0] = ip.saddr;
		k->up_addr[0] = ip.daddr;
	}
	if (proto != IPPROTO_TCP_NR && proto != IPPROTO_UDP_NR)
		return -1;
	if (bpf_skb_load_bytes_relative(skb, inner_l4, ports, sizeof(ports), BPF_HDR_START_NET))
		return -1;
	k->proto = proto;
	k->client_port = ports[0];
	k->up_port = ports[1];
	*up_port = ports[1];
	return 0;
}

SEC("tc")
int mmp_steer_in(struct __sk_buff *skb)
{
	struct mmp_steer_key k = {};
	struct mmp_steer_val *v;
	__be16 ports[2];
	__u32 l4off;
	__u8 proto;

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes_relative(skb, 0, &ip, sizeof(ip), BPF_HDR_START_NET) || ip.ihl < 5)
			return TC_ACT_UNSPEC;
		/* A later fragment carries no ports (§14: UDP replies must fit the path MTU). */
		if (ip.frag_off & bpf_htons(IP_OFFSET))
			return TC_ACT_UNSPEC;
		proto = ip.protocol;
		l4off = ip.ihl * 4;
		k.family = AF_INET_NR;
		k.up_addr[0] = ip.saddr;
		k.client_addr[0] = ip.daddr;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6;

		if (bpf_skb_load_bytes_relative(skb, 0, &ip6, sizeof(ip6), BPF_HDR_START_NET))
			return TC_ACT_UNSPEC;
		proto = ip6.nexthdr; /* extension headers are not walked (§14) */
		l4off = sizeof(ip6);
		k.family = AF_INET6_NR;
		__builtin_memcpy(k.up_addr, &ip6.saddr, 16);
		__builtin_memcpy(k.client_addr, &ip6.daddr, 16);
	} else {
		return TC_ACT_UNSPEC;
	}
	if (proto == IPPROTO_ICMP_NR || proto == IPPROTO_ICMPV6_NR) {
		/*
		 * An error about a spoofed connection's packet (a router on the
		 * way to a remote upstream: fragmentation needed, packet too
		 * big) is addressed to the client too: steered like a reply,
		 * the socket learns the path MTU instead of the host routing
		 * the error out of the uplink (docs/DESIGN.md §14, "ICMP errors").
		 */
		struct mmp_steer_key q = { .family = k.family };
		__be16 up_port;

		if ((proto == IPPROTO_ICMPV6_NR) != (k.family == AF_INET6_NR) ||
		    icmp_quote_key(skb, l4off, k.family == AF_INET6_NR, &q, &up_port) || !port_marked(up_port))
			return TC_ACT_UNSPEC;
		/* The error goes where the quoted packet came from, or it is not about ours. */
		if ((q.client_addr[0] ^ k.client_addr[0]) | (q.client_addr[1] ^ k.client_addr[1]) |
		    (q.client_addr[2] ^ k.client_addr[2]) | (q.client_addr[3] ^ k.client_addr[3]))
			return TC_ACT_UNSPEC;
		if (!bpf_map_lookup_elem(&mmp_reply_steer, &q)) {
			count(MMP_STEER_CNT_passed);
			return TC_ACT_UNSPEC;
		}
		skb->mark = MMP_STEER_MARK;
		count(MMP_STEER_CNT_icmp_marked);
		return TC_ACT_UNSPEC;
	}
	if (proto != IPPROTO_TCP_NR && proto != IPPROTO_UDP_NR)
		return TC_ACT_UNSPEC;
	if (bpf_skb_load_bytes_relative(skb, l4off, ports, sizeof(ports), BPF_HDR_START_NET))
		return TC_ACT_UNSPEC;
	if (!port_marked(ports[0]))
		return TC_ACT_UNSPEC;
	k.proto = proto;
	k.up_port = ports[0];
	k.client_port = ports[1];
	v = bpf_map_lookup_elem(&mmp_reply_steer, &k);
	if (!v) {
		count(MMP_STEER_CNT_passed);
		return TC_ACT_UNSPEC;
	}
	skb->mark = MMP_STEER_MARK;
	count(v->closed_ns ? MMP_STEER_CNT_marked_late : MMP_STEER_CNT_marked);
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "GPL";
