// SPDX-License-Identifier: GPL-2.0
/* Bounds on half-open work: --max-pending (per thread share) and --max-pending-per-source (shared quota). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "core/clock.h"
#include "core/counters.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/quota.h"
#include "lib/sockaddr.h"
#include "tcp/pending.h"
#include "tcp/tcp_log.h"
#include "tcp/worker.h"

static struct mmp_quota *per_source; /* one per process, shared by the listener threads */

int mmp_pending_open(const struct mmp_config *cfg)
{
	uint64_t seed = 0;
	int err;

	/* Sources choose their addresses: keep the table's hash unpredictable. */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint64_t)(uintptr_t)&seed ^ (uint64_t)mmp_now_ns();
	err = mmp_quota_open(cfg->max_pending_per_source, seed, &per_source);
	if (err)
		pr_err("out of memory for the pending-connection table");
	return err;
}

void mmp_pending_close(void)
{
	mmp_quota_close(per_source);
	per_source = NULL;
}

static bool is_pending(enum mmp_conn_state s)
{
	return s == CONN_HEADER || s == CONN_CONNECTING;
}

/* This thread's share of --max-pending: at least 1. */
static size_t thread_share(const struct mmp_config *cfg)
{
	uint32_t n = cfg->listeners > 0 ? (uint32_t)cfg->listeners : 1;

	return cfg->max_pending / n ? cfg->max_pending / n : 1;
}

bool mmp_pending_admit(struct mmp_worker *w, const struct sockaddr_storage *peer)
{
	const struct mmp_config *cfg = w->loop.cfg;
	char lb[MMP_ADDRSTRLEN];
	int err;

	if (w->loop.header_wait.len + w->loop.connect_wait.len >= thread_share(cfg)) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_refused_pending, 1);
		pr_conn_rl(&w->log, TCP_LOG_PENDING, mmp_now_ns(),
			   "connection from %s refused: %u connections are waiting for their PROXY header or upstream (raise --max-pending, or lower --header-timeout)",
			   mmp_fmt_addr((const struct sockaddr *)peer, lb), cfg->max_pending);
		return false;
	}
	err = per_source ? mmp_quota_take(per_source, (const struct sockaddr *)peer) : 0;
	if (err == -EDQUOT || err == -ENOMEM) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_refused_pending_source, 1);
		pr_conn_rl(&w->log, TCP_LOG_PENDING, mmp_now_ns(),
			   "connection from %s refused: that address has %u connections waiting for their PROXY header or upstream (raise --max-pending-per-source if it is a busy load balancer)",
			   mmp_fmt_addr((const struct sockaddr *)peer, lb), cfg->max_pending_per_source);
		return false;
	}
	return true; /* err == -EAFNOSUPPORT cannot happen on an inet listener; nothing was taken then */
}

void mmp_pending_forget(const struct sockaddr_storage *peer)
{
	if (per_source)
		mmp_quota_give(per_source, (const struct sockaddr *)peer);
}

void mmp_pending_state_changed(struct mmp_worker *w, const struct mmp_conn *c, enum mmp_conn_state old)
{
	(void)w;
	if (is_pending(old) && !is_pending(c->state))
		mmp_pending_forget(&c->lb_addr);
}
