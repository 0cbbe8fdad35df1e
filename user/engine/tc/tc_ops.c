// SPDX-License-Identifier: GPL-2.0
/* The tc engine behind the engine interface: when a flow's hand-off starts, and what it holds. */
#include <errno.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "core/clock.h"
#include "core/conn.h"
#include "core/counters.h"
#include "core/loop.h"
#include "engine/engine.h"
#include "engine/tc/tc_carry.h"
#include "engine/tc/tc_engine.h"
#include "engine/tc/tc_internal.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

static int tc_open(const struct mmp_config *cfg, void **proc)
{
	return mmp_tc_load(cfg, (struct mmp_tc **)proc);
}

static void tc_close(void *proc, bool keep)
{
	mmp_tc_unload(proc, keep);
}

/* A listener thread's carriers of bytes across hand-offs (tc_carry.c). */
static int tc_worker_open(struct mmp_engine *e, struct mmp_loop *loop)
{
	struct mmp_tc_worker *w = calloc(1, sizeof(*w));

	if (w)
		w->scratch = malloc(80 + MMP_TC_SEGMENT_MAX);
	if (!w || !w->scratch) {
		free(w);
		pr_err("tc engine: out of memory for a listener thread's state");
		return -ENOMEM;
	}
	w->tc = e->proc;
	w->loop = loop;
	e->worker = w;
	return 0;
}

/*
 * The thread ends (a stop, a takeover's drain): bytes still carried are
 * delivered first, for up to 2 s; nothing else would send them.
 */
static void tc_worker_close(struct mmp_engine *e, struct mmp_loop *loop)
{
	struct mmp_tc_worker *w = e->worker;

	if (!w)
		return;
	mmp_tc_carry_flush(w, 2000);
	free(w->scratch);
	free(w);
	e->worker = NULL;
}

/* conn1's MSS: the upstream's segments must fit the load balancer's path. */
static int conn2_mss(int client_fd)
{
	int mss = 0;
	socklen_t len = sizeof(mss);

	if (getsockopt(client_fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len))
		return 0;
	/* TCP_MAXSEG takes at most 32767; above that (loopback) both paths carry 64 KiB anyway. */
	return mss > 0 && mss <= 32767 ? mss : 0;
}

/*
 * A load balancer on loopback reaches us over lo, whose MSS (65483) is above
 * what conn2_mss passes on: skip its getsockopt (one syscall per connection).
 */
static bool lb_on_loopback(const struct mmp_conn *c)
{
	struct sockaddr_storage lb = c->lb_addr;

	mmp_unmap_v4(&lb);
	if (lb.ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)&lb)->sin_addr.s_addr) >> 24) == 127;
	return lb.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&lb)->sin6_addr);
}

static int tc_pre_connect(struct mmp_engine *e, struct mmp_conn *c, struct mmp_preconnect *pc)
{
	int err;

	if (c->src_addr.ss_family) {
		err = mmp_tc_claim_client(e->proc, (const struct sockaddr *)&c->src_addr,
					  (const struct sockaddr *)c->target);
	} else {
		/* An unspoofed connection's port must not be a spliced flow's either (docs/DESIGN.md §3c). */
		err = mmp_tc_unspoofed_source(e->proc, (const struct sockaddr *)c->target, &pc->src);
		pc->have_src = !err;
	}
	pc->mss = lb_on_loopback(c) ? 0 : conn2_mss(c->client.fd);
	return err;
}

/*
 * A connection just went to splice: start its hand-off now, or after
 * --tc-handoff-delay. The hand-off holds the flow for a few round trips, which
 * a connection that ends within milliseconds pays without ever gaining from
 * the kernel path (bench connrate: 0.18 of no proxy at once, splice's 0.32
 * with the delay).
 */
static int tc_start(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_tc_conn *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM; /* the flow stays on splice */
	c->takeover_ctx = t;
	if (!tc_of(c)->cfg->tc_handoff_delay_ms) {
		mmp_tc_bound_queues(c);
		mmp_tc_begin(loop, c);
		return 0;
	}
	/*
	 * The queues are bounded halfway through the delay, not now: a
	 * connection that ends sooner (connrate, HTTP close) never pays the
	 * eight syscalls (docs/DESIGN.md §3b, "Bounded queues"). The retry
	 * timer doubles as the delay: attempts 0 marks a first try.
	 */
	t->bound_ms = mmp_now_ms() + (uint64_t)tc_of(c)->cfg->tc_handoff_delay_ms / 2;
	t->retry_ms = mmp_now_ms() + (uint64_t)tc_of(c)->cfg->tc_handoff_delay_ms;
	mmp_loop_poll_add(loop, c);
	return 0;
}

/* A flow that did not quiet down (or waited out the delay): try the hand-off once its time came. */
static void retry(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_tc_conn *t = T(c);

	if (c->state != CONN_SPLICING || !t->retry_ms)
		return;
	if (!t->bounded && !t->attempts && mmp_now_ms() >= t->bound_ms)
		mmp_tc_bound_queues(c);
	if (mmp_now_ms() < t->retry_ms) {
		mmp_loop_poll_add(loop, c);
		return;
	}
	if (!mmp_tc_queues_small(c)) {
		t->retry_ms = mmp_now_ms() + TC_WAIT_SMALL_RECHECK_MS;
		mmp_loop_poll_add(loop, c);
		return;
	}
	t->retry_ms = 0;
	mmp_tc_begin(loop, c);
}

static void tc_poll(struct mmp_loop *loop, struct mmp_conn *c)
{
	if (T(c)->holding)
		mmp_tc_check(loop, c);
	else if (T(c)->retry_ms)
		retry(loop, c);
}

/* The drain moved: a hand-off in progress re-checks at once. */
static void tc_event(struct mmp_loop *loop, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events)
{
	if (T(c)->holding)
		mmp_tc_check(loop, c);
}

static void tc_release(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_tc_conn *t = T(c);

	if (!t)
		return;
	if (t->holding)
		mmp_tc_abort(loop, c, "the connection closed");
	else if (t->retry_ms && !t->attempts)
		mmp_count(loop->counters, MMP_TCP_CNT_tc_short, 1);
	free(t);
	c->takeover_ctx = NULL;
}

/*
 * Once a second, by one loop: finished flows are collected, a bounded part at
 * a time, and a moved upstream's new interface is hooked.
 */
static void tc_tick(struct mmp_engine *e)
{
	mmp_tc_collect_step(e->proc, CLOSED_LINGER_NS, COLLECT_TICK_ENTRIES);
	mmp_tc_note_empty(e->proc);
	mmp_tc_follow_upstreams(e->proc);
}

static void tc_ended_first(struct mmp_loop *loop, struct mmp_conn *c)
{
	mmp_count(loop->counters, MMP_TCP_CNT_tc_short, 1);
}

const struct mmp_engine_ops mmp_tc_ops = {
	.name = "tc",
	.flags = MMP_ENGINE_F_TAKES_OVER | MMP_ENGINE_F_TC_PROGRAMS,
	.open = tc_open,
	.close = tc_close,
	.worker_open = tc_worker_open,
	.worker_close = tc_worker_close,
	.tick = tc_tick,
	.pre_connect = tc_pre_connect,
	.start = tc_start,
	.event = tc_event,
	.poll = tc_poll,
	.release = tc_release,
	.ended_first = tc_ended_first,
};
