// SPDX-License-Identifier: GPL-2.0
/* TCP mode's run: see tcp/tcp_run.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/counters.h"
#include "engine/engine.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"
#include "listen/port_steer.h"
#include "lib/privileges.h"
#include "tcp/pending.h"
#include "tcp/tcp_run.h"
#include "tcp/worker.h"

struct mmp_tcp_run {
	const struct mmp_config *cfg;
	struct mmp_port_steer steer;
	struct mmp_engines engines;
	struct mmp_counters counters;
	struct mmp_worker *workers;
	int inited; /* workers initialised, so mmp_worker_stop can free them */
	bool pending_open;
};

static int init_workers(struct mmp_tcp_run *r, const struct mmp_policy *policy)
{
	const struct mmp_config *cfg = r->cfg;

	r->workers = calloc(cfg->listeners, sizeof(*r->workers));
	if (!r->workers)
		return -ENOMEM;
	for (int i = 0; i < cfg->listeners; i++) {
		int err = mmp_worker_init(&r->workers[i], i, cfg, policy, &r->steer, &r->engines, &r->counters);

		r->inited = i + 1;
		if (err)
			return err;
	}
	return 0;
}

int mmp_tcp_run_open(const struct mmp_config *cfg, const struct mmp_policy *policy, struct mmp_tcp_run **out)
{
	struct mmp_tcp_run *r = calloc(1, sizeof(*r));
	int err;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->cfg = cfg;
	/* A port range: sk_lookup, or one socket per port (docs/DESIGN.md §8). */
	err = mmp_port_steer_open(cfg, &r->steer);
	if (err)
		goto fail;
	err = mmp_engines_open(cfg, &r->engines);
	if (err)
		goto fail;
	err = mmp_counters_publish_open(&r->counters, cfg->pin_dir);
	if (err)
		goto fail;
	err = mmp_pending_open(cfg);
	if (err)
		goto fail;
	r->pending_open = true;
	err = init_workers(r, policy);
	if (err)
		goto fail;
	*out = r;
	return 0;
fail:
	mmp_tcp_run_close(r, true);
	return err;
}

unsigned int mmp_tcp_run_features(const struct mmp_tcp_run *r)
{
	const struct mmp_engine *all[] = { &r->engines.first, &r->engines.fallback, &r->engines.takeover };
	unsigned int f = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!all[i]->ops)
			continue;
		if (all[i]->ops->flags & MMP_ENGINE_F_TC_PROGRAMS)
			f |= MMP_FEAT_TC;
		if (all[i]->ops->flags & MMP_ENGINE_F_SOCKET_PROGRAMS)
			f |= MMP_FEAT_SOCKMAP;
	}
	return f;
}

int mmp_tcp_run_start(struct mmp_tcp_run *r)
{
	const struct mmp_config *cfg = r->cfg;
	char addr[MMP_ADDRSTRLEN], ports[64], t4[MMP_ADDRSTRLEN + 8], t6[MMP_ADDRSTRLEN + 8];

	for (int i = 0; i < cfg->listeners; i++) {
		int err = mmp_worker_start(&r->workers[i]);

		if (err)
			return err;
	}
	/* --takeover: our threads accept, so new connections may reach ours only (docs/DESIGN.md §15). */
	mmp_port_steer_claim(&r->steer);
	pr_info("listening on %s%s with %d listeners, engine %s; IPv4 upstream %s, IPv6 upstream %s",
		mmp_fmt_addr((const void *)&cfg->listen, addr),
		mmp_port_steer_describe(cfg, &r->steer, ports, sizeof(ports)), cfg->listeners,
		mmp_engines_describe(&r->engines), mmp_fmt_port_range(&cfg->target4, cfg->target4_port_hi, t4),
		mmp_fmt_port_range(&cfg->target6, cfg->target6_port_hi, t6));
	return 0;
}

void mmp_tcp_run_tick(struct mmp_tcp_run *r)
{
	mmp_counters_publish(&r->counters);
}

void mmp_tcp_run_drain(struct mmp_tcp_run *r)
{
	for (int i = 0; i < r->inited; i++)
		mmp_worker_drain(&r->workers[i]);
}

bool mmp_tcp_run_listeners_closed(struct mmp_tcp_run *r)
{
	for (int i = 0; i < r->inited; i++)
		if (!atomic_load(&r->workers[i].listeners_closed))
			return false;
	return true;
}

unsigned long mmp_tcp_run_active(const struct mmp_tcp_run *r)
{
	return mmp_counter(&r->counters, MMP_TCP_CNT_active);
}

unsigned long mmp_tcp_run_accepted(const struct mmp_tcp_run *r)
{
	return mmp_counter(&r->counters, MMP_TCP_CNT_accepted);
}

void mmp_tcp_run_close(struct mmp_tcp_run *r, bool failed)
{
	if (!r)
		return;
	for (int i = 0; i < r->inited; i++)
		mmp_worker_stop(&r->workers[i]);
	free(r->workers);
	if (r->inited)
		mmp_counters_log(&r->counters);
	if (r->pending_open)
		mmp_pending_close();
	mmp_counters_publish_close(&r->counters);
	/* A failed start keeps what the maps hold: a predecessor's flows that it adopted (docs/DESIGN.md §3c). */
	mmp_engines_close(&r->engines, !r->cfg->detach || failed);
	mmp_port_steer_close(&r->steer);
	free(r);
}
