// SPDX-License-Identifier: GPL-2.0
/*
 * Which engines a run uses, and the dispatch from the loop and the handshake
 * to them. The only file that names the engines.
 */
#include <errno.h>
#include <string.h>
#include "core/conn.h"
#include "core/lifecycle.h"
#include "core/loop.h"
#include "engine/engine.h"
#include "engine/sockmap/sockmap.h"
#include "engine/splice/splice.h"
#include "engine/tc/tc_engine.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

static int open_one(struct mmp_engine *e, const struct mmp_engine_ops *ops, const struct mmp_config *cfg)
{
	int err = 0;

	e->ops = ops;
	e->proc = NULL;
	if (ops->open)
		err = ops->open(cfg, &e->proc);
	if (err)
		e->ops = NULL;
	return err;
}

int mmp_engines_open(const struct mmp_config *cfg, struct mmp_engines *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	/*
	 * auto = tc for every eligible flow, splice for the others: measured
	 * fastest here (docs/DESIGN.md §5); sockmap is slower
	 * than splice on this kernel, so it runs only when asked for.
	 */
	switch (cfg->engine) {
	case MMP_ENGINE_SOCKMAP:
		err = open_one(&out->first, &mmp_sockmap_ops, cfg);
		if (err)
			return err;
		open_one(&out->fallback, &mmp_splice_ops, cfg);
		return 0;
	case MMP_ENGINE_TC:
	case MMP_ENGINE_AUTO:
		open_one(&out->first, &mmp_splice_ops, cfg);
		err = open_one(&out->takeover, &mmp_tc_ops, cfg);
		if (err && cfg->engine == MMP_ENGINE_TC)
			return err;
		if (err)
			pr_err("warning: the tc engine is unavailable (see above); engine auto uses splice for every flow");
		return 0;
	case MMP_ENGINE_SPLICE:
		break;
	}
	return open_one(&out->first, &mmp_splice_ops, cfg);
}

static void close_one(struct mmp_engine *e, bool keep)
{
	if (e->ops && e->ops->close)
		e->ops->close(e->proc, keep);
	e->ops = NULL;
	e->proc = NULL;
}

void mmp_engines_close(struct mmp_engines *e, bool keep)
{
	close_one(&e->takeover, keep);
	close_one(&e->fallback, keep);
	close_one(&e->first, keep);
}

const char *mmp_engines_describe(const struct mmp_engines *e)
{
	if (e->takeover.ops)
		return "tc (splice for ineligible flows)";
	return e->first.ops ? e->first.ops->name : "none";
}

int mmp_engines_worker_open(struct mmp_engines *mine, const struct mmp_engines *proc, struct mmp_loop *loop)
{
	struct mmp_engine *all[3] = { &mine->first, &mine->fallback, &mine->takeover };

	*mine = *proc;
	for (int i = 0; i < 3; i++) {
		int err;

		all[i]->worker = NULL;
		if (!all[i]->ops || !all[i]->ops->worker_open)
			continue;
		err = all[i]->ops->worker_open(all[i], loop);
		if (err)
			return err;
	}
	return 0;
}

void mmp_engines_worker_close(struct mmp_engines *mine, struct mmp_loop *loop)
{
	struct mmp_engine *all[3] = { &mine->first, &mine->fallback, &mine->takeover };

	for (int i = 0; i < 3; i++)
		if (all[i]->ops && all[i]->ops->worker_close)
			all[i]->ops->worker_close(all[i], loop);
}

bool mmp_engines_strip_header(const struct mmp_engines *e)
{
	return e->first.ops && (e->first.ops->flags & MMP_ENGINE_F_STRIPS_HEADER);
}

int mmp_engines_pre_connect(struct mmp_engines *e, struct mmp_conn *c, struct mmp_preconnect *pc)
{
	struct mmp_engine *all[3] = { &e->first, &e->fallback, &e->takeover };

	memset(pc, 0, sizeof(*pc));
	for (int i = 0; i < 3; i++) {
		int err;

		if (!all[i]->ops || !all[i]->ops->pre_connect)
			continue;
		err = all[i]->ops->pre_connect(all[i], c, pc);
		if (err)
			return err;
	}
	return 0;
}

void mmp_engines_start(struct mmp_engines *e, struct mmp_loop *loop, struct mmp_conn *c)
{
	char name[MMP_ADDRSTRLEN];
	int err;

	c->engine = &e->first;
	err = e->first.ops->start(loop, c);
	if (err && e->fallback.ops) {
		/* Nothing is live in the kernel: the fallback takes the pair, header read off first. */
		pr_debug("%s engine refused client %s (%s): using %s", e->first.ops->name, mmp_conn_client_name(c, name),
			 strerror(-err), e->fallback.ops->name);
		if (mmp_conn_consume_header(c)) {
			c->engine = NULL;
			mmp_conn_close(loop, c, MMP_CLOSE_FIN);
			return;
		}
		c->engine = &e->fallback;
		err = e->fallback.ops->start(loop, c);
	}
	if (err) {
		pr_conn("no engine took client %s: %s", mmp_conn_client_name(c, name), strerror(-err));
		c->engine = NULL;
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
		return;
	}
	if (!e->takeover.ops)
		return;
	if (c->state != CONN_SPLICING) {
		/* It ended in its first step: nothing left to take over. */
		if (e->takeover.ops->ended_first)
			e->takeover.ops->ended_first(loop, c);
		return;
	}
	c->takeover = &e->takeover;
	if (e->takeover.ops->start(loop, c))
		c->takeover = NULL; /* it stays with its engine */
}

void mmp_engines_tick(struct mmp_engines *e)
{
	struct mmp_engine *all[3] = { &e->first, &e->fallback, &e->takeover };

	for (int i = 0; i < 3; i++)
		if (all[i]->ops && all[i]->ops->tick)
			all[i]->ops->tick(all[i]);
}

void mmp_engine_event(struct mmp_loop *loop, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events)
{
	c->engine->ops->event(loop, c, ep, events);
	if (c->takeover && c->state == CONN_SPLICING && c->takeover->ops->event)
		c->takeover->ops->event(loop, c, ep, events);
}

void mmp_engine_poll(struct mmp_loop *loop, struct mmp_conn *c)
{
	if (c->takeover && c->takeover->ops->poll)
		c->takeover->ops->poll(loop, c);
	if (c->state == CONN_SPLICING && c->engine && c->engine->ops->poll)
		c->engine->ops->poll(loop, c);
}

void mmp_engine_release(struct mmp_loop *loop, struct mmp_conn *c)
{
	if (c->takeover)
		c->takeover->ops->release(loop, c);
	if (c->engine)
		c->engine->ops->release(loop, c);
}

void mmp_engine_drain_state(const struct mmp_conn *c, struct mmp_drain *d)
{
	memset(d, 0, sizeof(*d));
	if (c->engine && c->engine->ops->drain_state)
		c->engine->ops->drain_state(c, d);
}

ssize_t mmp_engine_take_buffered(struct mmp_conn *c, int dir, void *buf, size_t len)
{
	if (!c->engine || !c->engine->ops->take_buffered)
		return -EOPNOTSUPP;
	return c->engine->ops->take_buffered(c, dir, buf, len);
}
