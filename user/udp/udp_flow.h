/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UDP flows of one listener thread, and the indexes that find them:
 *   by load balancer ip:port  PROXY v2 and LOCAL flows (one client per LB
 *                             ip:port at a time, since v2 replies carry no
 *                             header): header-less datagrams find their flow
 *   by client ip:port         every spoofed flow: one upstream socket per
 *                             client address (SPP flows are found only here:
 *                             an LB ip:port may carry many SPP clients)
 *   idle list                 least recently active first: the idle timer
 *                             only ever looks at its head
 * No I/O here: the owner opens and closes the sockets.
 */
#ifndef MMP_UDP_FLOW_H
#define MMP_UDP_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "udp/udp_ep.h"
#include "proto/udp_spp.h"

struct udp_flow {
	int fd; /* upstream socket: transparent, bound to the client, connected to the upstream */
	uint8_t format; /* enum mmp_udp_format */
	bool no_gso_up; /* the kernel refused UDP_SEGMENT toward this flow's upstream */
	bool no_gso_down; /* ... or toward its load balancer */
	struct udp_ep client; /* family 0 for LOCAL flows */
	struct udp_ep lb;
	struct udp_ep local; /* our address the load balancer sent to */
	struct sockaddr_storage lb_sa; /* reply destination, as the listen socket saw it */
	/* The load balancer whose --udp-max-flows-per-lb quota the flow holds: the one that opened it. */
	struct sockaddr_storage quota_sa;
	bool quota_held;
	socklen_t lb_salen;
	const struct sockaddr_storage *target; /* -4 or -6, or target_mapped */
	struct sockaddr_storage target_mapped; /* -4/-6 given as a range: the port mapped from local's (docs/DESIGN.md §8) */
	uint8_t spp_hdr[SPP_HEADER_LEN]; /* SPP: the header replies carry */
	uint64_t cookie; /* SO_COOKIE of fd: the key in mmp_udp_flows */
	uint64_t steer_owner; /* its reply tuple in mmp_reply_steer (steer/reply_steer.h); 0: none */
	bool fast; /* handed to the kernel: fast_fwd || fast_rev */
	bool fast_fwd; /* its entry in mmp_udp_fwd: the kernel forwards the LB's datagrams */
	bool fast_rev; /* its entry in mmp_udp_rev: the kernel sends the replies (PROXY v2) */
	/*
	 * Owned by udp_fast.c: what the flow has in the fast path's maps, moved
	 * by the kernel or not (a stale mmp_udp_fwd entry that is no longer
	 * re-armed stays there, fast_fwd false): udp_fast_del deletes each of
	 * them once, whatever fast and fast_fwd say.
	 */
	bool fwd_entry; /* in mmp_udp_fwd, under fwd_key */
	bool drain_entry; /* in mmp_udp_drain, under cookie */
	struct mmp_udp_fkey fwd_key; /* as inserted: local may change since (a wildcard listener) */
	int lb_ifindex; /* where the LB's datagrams arrive (IP_PKTINFO) */
	uint64_t created_ns, last_ns; /* CLOCK_MONOTONIC */
	uint64_t pkts_up, bytes_up, pkts_down, bytes_down;

	/* Owned by udp_flow.c. */
	struct udp_flow *lb_next, *client_next; /* hash chains */
	struct udp_flow *idle_prev, *idle_next;
	bool in_lb, in_client;

	/* Owned by the relay. */
	struct udp_flow *staged_next; /* flows with datagrams staged for the upstream */
	struct udp_flow *to_kernel_next; /* waiting to be handed to the fast path */
	bool to_kernel; /* on that list */
	uint64_t drain_fwd, drain_rev; /* the number of the last DRAIN-marked datagram sent on, per direction */
	uint8_t stale_rearms; /* times the kernel stopped on another header; past a few, it stays here */
	struct udp_flow *draining_next; /* counts to publish (udp_flows_publish_drain) */
	bool draining; /* on that list */
	int stage_head, stage_tail; /* first and last staged datagram, -1: none */
};

struct udp_flow_table {
	struct udp_flow **lb_buckets, **client_buckets;
	size_t nbuckets; /* a power of two, the same for both indexes */
	size_t count; /* flows in the table */
	struct udp_flow *idle_head, *idle_tail;
	uint64_t seed;
};

/* Returns 0 or -ENOMEM. */
int udp_ft_init(struct udp_flow_table *t, uint64_t seed);
/* Frees the indexes only: the flows belong to the caller (empty the table first). */
void udp_ft_free(struct udp_flow_table *t);

/* Insert f (fields client, lb, format and last_ns set). Returns 0 or -ENOMEM (growing the indexes). */
int udp_ft_add(struct udp_flow_table *t, struct udp_flow *f);
void udp_ft_remove(struct udp_flow_table *t, struct udp_flow *f);

/* The v2/LOCAL flow of a load balancer ip:port, or NULL. */
struct udp_flow *udp_ft_by_lb(const struct udp_flow_table *t, const struct udp_ep *lb);
/* The flow bound to a client ip:port, or NULL. */
struct udp_flow *udp_ft_by_client(const struct udp_flow_table *t, const struct udp_ep *client);

/* f now comes from lb and is framed as format: re-index it. */
void udp_ft_move(struct udp_flow_table *t, struct udp_flow *f, const struct udp_ep *lb, uint8_t format);

/* Activity at now_ns: f becomes the most recently active. */
void udp_ft_touch(struct udp_flow_table *t, struct udp_flow *f, uint64_t now_ns);
/*
 * Activity at ts_ns, which may be older than other flows' (the kernel saw
 * it a moment ago): f moves to its place in the idle list, so the list stays
 * in order. The walk is from the newest end, where a recent ts lands.
 */
void udp_ft_touch_at(struct udp_flow_table *t, struct udp_flow *f, uint64_t ts_ns);

/* One flow's activity as the kernel saw it: an element of a touch batch. */
struct udp_ft_touch {
	struct udp_flow *f;
	uint64_t ts_ns;
};

/*
 * udp_ft_touch_at for many flows at once (each at most once in v): O(n + k
 * log k) for a table of n flows, where k calls to udp_ft_touch_at would cost
 * O(n k), since the kernel's timestamps arrive in no order. v is reordered.
 */
void udp_ft_touch_batch(struct udp_flow_table *t, struct udp_ft_touch *v, size_t k);

/* The least recently active flow, or NULL. */
static inline struct udp_flow *udp_ft_oldest(const struct udp_flow_table *t)
{
	return t->idle_head;
}

#endif
