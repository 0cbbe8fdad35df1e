// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <stdint.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "core/clock.h"
#include "core/counters.h"
#include "core/lifecycle.h"
#include "core/loop.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "tcp/idle.h"

#define SWEEP_MIN_MS 1000
#define SWEEP_MAX_MS 30000

int mmp_tcp_keepalive_set(int fd, const struct mmp_config *cfg)
{
	int one = 1;

	if (!cfg->keepalive_idle_s)
		return 0;
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &cfg->keepalive_idle_s, sizeof(int)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &cfg->keepalive_intvl_s, sizeof(int)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cfg->keepalive_cnt, sizeof(int)))
		return -errno;
	return 0;
}

/*
 * Milliseconds since fd last received data, from TCP_INFO (the kernel keeps
 * it for every socket, sockmap's included: userspace never sees those bytes).
 * UINT32_MAX when it cannot be read, so that an unreadable socket never
 * keeps a flow open on its own.
 */
static uint32_t ms_since_data(int fd)
{
	struct tcp_info ti;
	socklen_t len = offsetof(struct tcp_info, tcpi_last_data_recv) + sizeof(ti.tcpi_last_data_recv);

	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    len < offsetof(struct tcp_info, tcpi_last_data_recv) + sizeof(ti.tcpi_last_data_recv))
		return UINT32_MAX;
	return ti.tcpi_last_data_recv;
}

static void close_idle(struct mmp_loop *loop, struct mmp_conn *c)
{
	char client[MMP_ADDRSTRLEN];

	mmp_count(loop->counters, MMP_TCP_CNT_closed_idle, 1);
	if (mmp_verbosity >= MMP_LOG_CONN)
		pr_conn("connection of %s closed: no data either way for --idle-timeout %d s",
			mmp_conn_client_name(c, client), loop->cfg->idle_timeout_s);
	mmp_conn_close(loop, c, MMP_CLOSE_FIN); /* FIN both ways: nothing is in flight */
}

static uint64_t sweep_period_ms(const struct mmp_config *cfg)
{
	uint64_t ms = SWEEP_MAX_MS;

	/* Often enough that a flow outlives its timeout by at most half of it, or 30 s. */
	if (cfg->idle_timeout_s && (uint64_t)cfg->idle_timeout_s * 500 < ms)
		ms = (uint64_t)cfg->idle_timeout_s * 500;
	if (cfg->keepalive_idle_s && (uint64_t)cfg->keepalive_idle_s * 500 < ms)
		ms = (uint64_t)cfg->keepalive_idle_s * 500;
	return ms < SWEEP_MIN_MS ? SWEEP_MIN_MS : ms;
}

/*
 * One pass over the flows in CONN_SPLICING. The upstream socket gets its
 * keepalive here, on the first pass it is seen, not at connect: a short
 * flow is gone by then and pays no system call for it; the client socket
 * inherited it from the listener. Keepalive idle is at least a second and
 * a pass comes at least every half of it, so no probe is due before then.
 */
static void sweep(struct mmp_loop *loop, struct mmp_timer *t)
{
	const struct mmp_config *cfg = loop->cfg;
	uint32_t idle_ms = (uint32_t)cfg->idle_timeout_s * 1000;
	struct mmp_conn *c, *next;

	for (c = loop->active.head; c; c = next) {
		next = c->next;
		if (cfg->keepalive_idle_s && !c->keepalive_set && c->upstream.fd >= 0) {
			int err = mmp_tcp_keepalive_set(c->upstream.fd, cfg);

			if (err)
				pr_conn("keepalive on an upstream socket failed: %s", strerror(-err));
			c->keepalive_set = true; /* once, failed or not */
		}
		if (idle_ms && c->client.fd >= 0 && c->upstream.fd >= 0 && ms_since_data(c->client.fd) >= idle_ms &&
		    ms_since_data(c->upstream.fd) >= idle_ms)
			close_idle(loop, c);
	}
	mmp_loop_timer_arm(loop, t, mmp_now_ms() + sweep_period_ms(cfg));
}

void mmp_tcp_idle_start(struct mmp_loop *loop, struct mmp_timer *sweep_timer)
{
	const struct mmp_config *cfg = loop->cfg;

	if (!cfg->idle_timeout_s && !cfg->keepalive_idle_s)
		return;
	sweep_timer->fn = sweep;
	mmp_loop_timer_arm(loop, sweep_timer, mmp_now_ms() + sweep_period_ms(cfg));
}
