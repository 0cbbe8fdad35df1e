// SPDX-License-Identifier: GPL-2.0
/*
 * A takeover's SO_REUSEPORT steering (docs/DESIGN.md §15): the successor
 * attaches this program to the listeners' SO_REUSEPORT group, which its
 * predecessor's listeners share, so every new connection picks one of the
 * successor's listeners from then on. The predecessor's listeners then get
 * no new SYN, finish the handshakes they started, and close with nothing in
 * flight: the kernel resets a child whose handshake completes as its
 * listener closes, a race that net.ipv4.tcp_migrate_req does not cover.
 *
 * It is a SELECT_OR_MIGRATE program: what a closing listener still queues
 * moves to one of the successor's listeners too, whatever the sysctl says.
 *
 * Key of mmp_reuseport_listeners: port index * listeners + listener thread.
 * A SOCKMAP, not a REUSEPORT_SOCKARRAY: that one refuses a socket that a
 * SOCKMAP holds already, as a port range's sk_lookup map does.
 * Each port of a range without sk_lookup is its own group: the port index
 * is that of the group's socket. A failed selection (a key not filled, a
 * socket already closed) leaves the kernel's own choice by hash.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "mmp_maps.h"

/* Set by the loader between open and load (user/listen/reuseport_steer.c). */
/* listener threads, each with one socket per port: at least 1 (--listeners takes 1 to 1024) */
const volatile __u32 listeners = 1;
const volatile __u32 port_lo = 0; /* host order: -l's first port */
const volatile __u32 ports = 1; /* sockets per listener thread: 1, or one per port */

struct {
	__uint(type, BPF_MAP_TYPE_SOCKMAP);
	__uint(max_entries, MMP_MAX_WORKERS);
	__type(key, __u32);
	__type(value, __u64);
} mmp_reuseport_listeners SEC(".maps");

SEC("sk_reuseport/migrate")
int mmp_reuseport_select(struct sk_reuseport_md *ctx)
{
	struct bpf_sock *group_sk = ctx->sk;
	__u32 port_index = 0, key;

	if (ports > 1 && group_sk) {
		port_index = group_sk->src_port - port_lo;
		if (port_index >= ports)
			return SK_PASS;
	}
	key = port_index * listeners + ctx->hash % listeners;
	bpf_sk_select_reuseport(ctx, &mmp_reuseport_listeners, &key, 0);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
