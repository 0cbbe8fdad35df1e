// SPDX-License-Identifier: GPL-2.0
/*
 * Port ranges (docs/DESIGN.md §8): an sk_lookup program, attached to the
 * network namespace, that hands every connection (TCP) or datagram (UDP) to
 * the listen address and a port in [port_lo, port_hi] to the instance's
 * listener socket, so one socket per listener thread serves the whole range.
 *
 * It assigns the socket at key 0; the listeners form one SO_REUSEPORT group,
 * and the kernel runs its reuseport selection on an assigned socket (no
 * BPF_SK_LOOKUP_F_NO_REUSEPORT), so connections still spread over every
 * listener thread by the 4-tuple hash, and a UDP flow keeps its thread.
 * Anything else, and a missing socket, passes to the normal lookup.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "mmp_maps.h"

#define AF_INET 2
#define AF_INET6 10

/* Set by the loader between open and load (user/listen/sk_lookup.c). */
const volatile __u8 proto = IPPROTO_TCP;
const volatile __u16 port_lo = 8443, port_hi = 8443; /* host order, inclusive */
const volatile __u8 match4; /* 0: IPv4 not served, 1: any destination (0.0.0.0, or dual-stack ::), 2: dst4 only */
const volatile __u8 match6; /* 0: IPv6 not served, 1: any destination (::), 2: dst6 only */
const volatile __u32 dst4; /* network order */
const volatile __u32 dst6[4]; /* network order */

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, MMP_MAX_WORKERS);
	__type(key, __u32);
	__type(value, __u64);
} mmp_sk_listeners SEC(".maps");

/*
 * Each context field is read once, into a local: the verifier refuses a
 * context load through a computed pointer, which the compiler emits when it
 * shares one base between the IPv4 and IPv6 comparisons.
 */
static __always_inline bool dst4_matches(struct bpf_sk_lookup *ctx)
{
	__u32 ip4;

	if (match4 == 1)
		return true;
	if (match4 != 2)
		return false;
	ip4 = ctx->local_ip4;
	return ip4 == dst4;
}

static __always_inline bool dst6_matches(struct bpf_sk_lookup *ctx)
{
	__u32 a, b, c, d;

	if (match6 == 1)
		return true;
	if (match6 != 2)
		return false;
	a = ctx->local_ip6[0];
	b = ctx->local_ip6[1];
	c = ctx->local_ip6[2];
	d = ctx->local_ip6[3];
	return a == dst6[0] && b == dst6[1] && c == dst6[2] && d == dst6[3];
}

SEC("sk_lookup")
int mmp_sk_lookup(struct bpf_sk_lookup *ctx)
{
	__u32 key = 0, port = ctx->local_port, family = ctx->family;
	struct bpf_sock *sk;

	if (ctx->protocol != proto || port < port_lo || port > port_hi)
		return SK_PASS;
	if (family == AF_INET ? !dst4_matches(ctx) : family == AF_INET6 ? !dst6_matches(ctx) : true)
		return SK_PASS;
	sk = bpf_map_lookup_elem(&mmp_sk_listeners, &key);
	if (!sk)
		return SK_PASS; /* no listener yet (or any more): the normal lookup answers */
	bpf_sk_assign(ctx, sk, 0); /* an error (a socket of the wrong family) leaves the normal lookup */
	bpf_sk_release(sk);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
