/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rate-limited per-connection log lines for the TCP path: a flood of
 * connections (from sources not allowed, with garbage headers, naming
 * impossible clients) prints at most MMP_RL_BURST lines a second per reason
 * and listener thread, then one "suppressed" summary (ratelimit.h).
 */
#ifndef MMP_TCP_LOG_H
#define MMP_TCP_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include "lib/log.h"
#include "lib/ratelimit.h"

enum mmp_tcp_log_reason {
	TCP_LOG_NOT_ALLOWED, /* source not in the allowed subnets */
	TCP_LOG_BAD_HEADER, /* invalid or truncated PROXY header */
	TCP_LOG_CLIENT_POLICY, /* the header names an impossible client */
	TCP_LOG_HEADER_TIMEOUT,
	TCP_LOG_UPSTREAM, /* upstream bind, connect or timeout */
	TCP_LOG_CONN_ERROR, /* the load balancer's socket failed or closed early */
	TCP_LOG_PENDING, /* --max-pending or --max-pending-per-source reached */
	TCP_LOG_ENDPOINT, /* the header names no endpoint of --allowed-endpoints */
	TCP_LOG_REASON_MAX,
};

/* One listener thread's limiters, one per reason. */
struct mmp_tcp_log {
	struct mmp_ratelimit rl[TCP_LOG_REASON_MAX];
};

/* Print the summary of reason's suppressed lines if its window is over; true if one more line may print. */
bool mmp_tcp_log_allow(struct mmp_tcp_log *l, enum mmp_tcp_log_reason reason, uint64_t now_ns);
/* Print every summary whose window is over (call about once a second). */
void mmp_tcp_log_tick(struct mmp_tcp_log *l, uint64_t now_ns);

/* pr_conn, at most MMP_RL_BURST a second per reason; costs nothing below -v 1. */
#define pr_conn_rl(log, reason, now_ns, ...)                                              \
	do {                                                                              \
		if (mmp_verbosity >= MMP_LOG_CONN && mmp_tcp_log_allow(log, reason, now_ns)) \
			mmp_log(MMP_LOG_CONN, __VA_ARGS__);                                \
	} while (0)

#endif
