/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A UDP listener thread: its own SO_REUSEPORT listen socket, epoll loop and
 * flows. Why SO_REUSEPORT sockets rather than one reader handing datagrams
 * to per-core workers: the kernel's reuseport hash of the 4-tuple sends
 * every datagram of one load balancer ip:port to the same socket, so a flow
 * is found, created, timed and closed by one thread with no lock and no
 * hand-off on the data path; cross-thread work is limited to the rare client
 * that changes LB ip:port (udp_registry.h).
 *
 * This header holds the thread's state, which its files (udp_worker.c,
 * udp_forward.c, udp_stage.c, udp_reply.c, udp_lifecycle.c) share.
 */
#ifndef MMP_UDP_THREAD_H
#define MMP_UDP_THREAD_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "lib/config.h"
#include "mmp_udp.h"
#include "udp/udp_flow.h"
#include "lib/ratelimit.h"

struct mmp_port_steer;

struct mmp_policy;
struct udp_fast;
struct udp_maps;
struct udp_registry;

#define UDP_BATCH 64 /* datagrams per recvmmsg / sendmmsg */
#define UDP_SLOT (64 * 1024) /* one datagram, or one GRO train of them */
#define UDP_MAX_SEGS 64 /* UDP_SEGMENT: segments per send (the kernel's limit on older kernels) */
#define UDP_MAX_PAYLOAD 65507 /* UDP over IPv4: 65535 - 20 - 8 */
#define UDP_STAGE_MAX (UDP_BATCH * UDP_MAX_SEGS)

/* What every thread shares. */
struct udp_shared {
	const struct mmp_config *cfg;
	const struct mmp_policy *policy;
	const struct mmp_port_steer *steer; /* how -l's ports reach the listeners (docs/DESIGN.md §8) */
	struct udp_maps *maps;
	struct udp_registry *reg; /* NULL with one listener */
	struct udp_fast *fast; /* NULL: every datagram through userspace */
	atomic_uint nflows; /* flows open in all threads */
	struct mmp_quota *per_lb; /* flows per load-balancer address (--udp-max-flows-per-lb) */
	uint32_t max_flows;
	uint64_t seed;
	uint64_t idle_ns; /* -c */
};

/*
 * Control data of one received or sent datagram: PKTINFO (either family),
 * UDP_GRO/UDP_SEGMENT, SO_MARK, and with a port range the original
 * destination (IP(V6)_ORIGDSTADDR: which port of the range).
 */
union udp_cmsg {
	char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint32_t)) +
		 CMSG_SPACE(sizeof(struct sockaddr_in6))];
	struct cmsghdr align;
};

/* A receive batch: UDP_BATCH slots of UDP_SLOT bytes (mapped lazily: pages are touched as used). */
struct udp_rx {
	uint8_t *bufs;
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH];
	struct sockaddr_storage names[UDP_BATCH];
	union udp_cmsg ctl[UDP_BATCH];
};

/* A payload staged for a flow's upstream socket, in arrival order per flow. */
struct udp_stage {
	const uint8_t *p;
	uint32_t len;
	int next; /* the flow's next staged payload, -1: last */
};

/* One datagram's payload inside a receive slot. */
struct udp_piece {
	const uint8_t *p;
	uint32_t len;
};

/* Replies waiting to go out of the listen socket in one sendmmsg. */
struct udp_reply_tx {
	struct mmsghdr msgs[UDP_BATCH];
	struct iovec iov[UDP_BATCH][2];
	union udp_cmsg ctl[UDP_BATCH];
	struct udp_flow *flow[UDP_BATCH];
	uint32_t segs[UDP_BATCH]; /* datagrams in message i */
	uint32_t seg_size[UDP_BATCH]; /* UDP_SEGMENT size of message i, 0: a single datagram */
	uint32_t payload[UDP_BATCH]; /* payload bytes in message i, headers excluded */
	uint8_t *arena; /* UDP_BATCH slots: where GSO trains are assembled */
	int n;
};

struct udp_worker {
	int id;
	struct udp_shared *sh;
	const struct mmp_config *cfg;
	int epfd, listen_fd, stop_fd, mbox_fd;
	bool wildcard; /* listening on 0.0.0.0 / [::]: replies need the source address set */
	bool header_required; /* --udp-header every or spp */
	struct udp_ep listen_ep; /* the listen address (the local address when not wildcard) */
	/*
	 * A port range (docs/DESIGN.md §8): port_fds[k] sends the replies of port
	 * LO+k. With sk_lookup (multiport) listen_fd receives every port and the
	 * others are opened on a flow's first reply; without, each receives its
	 * own port. NULL for a single port: listen_fd does everything.
	 */
	int *port_fds;
	int n_port_fds;
	uint16_t port_lo; /* host order */
	bool multiport;
	pthread_t thread;
	bool stopping;
	uint64_t now_ns; /* CLOCK_MONOTONIC, taken once per loop iteration */
	uint64_t next_tick_ns; /* map refresh and log summaries, once a second */
	uint64_t last_sync_ns; /* flows active after this go to mmp_udp_flows at the next tick */

	struct udp_flow_table ft;
	/* The tick's fast flows with newer kernel activity, reordered in one batch (udp_ft_touch_batch). */
	struct udp_ft_touch *touch;
	size_t touch_cap;

	/* Forward path: load balancer -> upstream. */
	struct udp_rx rx;
	struct udp_stage stage[UDP_STAGE_MAX];
	int nstage;
	struct udp_flow *staged; /* flows with staged payloads (via staged_next) */
	struct udp_flow *to_kernel; /* flows to hand to the fast path once their staged datagrams are out */
	struct udp_flow *draining; /* flows whose consumed counts changed: published after the flushes */
	uint8_t *gso_buf; /* one UDP_SLOT: a GSO train for an upstream socket */

	/* Reply path: upstream -> load balancer. */
	struct udp_rx rrx;
	int rrx_used; /* slots of rrx holding replies not yet sent */
	struct udp_piece pieces[UDP_STAGE_MAX]; /* replies of one read, GRO trains split */
	struct udp_reply_tx tx;

	uint64_t cnt[MMP_UDP_CNT_MAX]; /* written by this thread only; read by the main thread */
	struct mmp_ratelimit rl[MMP_UDP_CNT_MAX];
};

static inline void udp_cnt_add(struct udp_worker *w, enum mmp_udp_counter c, uint64_t n)
{
	/* One writer per counter array: a relaxed store is enough for the reader. */
	__atomic_store_n(&w->cnt[c], w->cnt[c] + n, __ATOMIC_RELAXED);
}

static inline void udp_cnt_sub(struct udp_worker *w, enum mmp_udp_counter c, uint64_t n)
{
	__atomic_store_n(&w->cnt[c], w->cnt[c] - n, __ATOMIC_RELAXED);
}

#endif
