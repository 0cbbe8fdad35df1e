// SPDX-License-Identifier: GPL-2.0
#include "tcp/tcp_log.h"

static const char *const reason_desc[TCP_LOG_REASON_MAX] = {
	[TCP_LOG_NOT_ALLOWED] = "sources not allowed",
	[TCP_LOG_BAD_HEADER] = "invalid PROXY headers",
	[TCP_LOG_CLIENT_POLICY] = "client addresses refused by the client policy",
	[TCP_LOG_HEADER_TIMEOUT] = "PROXY header timeouts",
	[TCP_LOG_UPSTREAM] = "upstream failures",
	[TCP_LOG_CONN_ERROR] = "load-balancer connection errors",
	[TCP_LOG_PENDING] = "connections over the pending-handshake limits",
	[TCP_LOG_ENDPOINT] = "connections refused by the endpoint policy",
};

static void summary(struct mmp_tcp_log *l, enum mmp_tcp_log_reason reason, uint64_t now_ns)
{
	uint32_t n = mmp_rl_take_suppressed(&l->rl[reason], now_ns);

	if (n)
		mmp_log(MMP_LOG_CONN, "tcp: suppressed %u lines in the last second (%s)", n, reason_desc[reason]);
}

bool mmp_tcp_log_allow(struct mmp_tcp_log *l, enum mmp_tcp_log_reason reason, uint64_t now_ns)
{
	summary(l, reason, now_ns);
	return mmp_rl_allow(&l->rl[reason], now_ns);
}

void mmp_tcp_log_tick(struct mmp_tcp_log *l, uint64_t now_ns)
{
	if (mmp_verbosity < MMP_LOG_CONN)
		return;
	for (int r = 0; r < TCP_LOG_REASON_MAX; r++)
		summary(l, r, now_ns);
}
