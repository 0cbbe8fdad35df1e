// SPDX-License-Identifier: GPL-2.0
/*
 * mmproxy-bpf: a transparent PROXY-protocol proxy. The control plane reads the
 * PROXY header, opens the upstream connection from the client's own ip:port,
 * and hands the pair to a data-path engine.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include "check.h"
#include "cleanup.h"
#include "config.h"
#include "log.h"
#include "policy.h"
#include "routing.h"
#include "sockmap.h"
#include "stats.h"
#include "tc_engine.h"
#include "udp.h"
#include "sockaddr.h"
#include "worker.h"

#ifndef MMP_VERSION
#define MMP_VERSION "unknown"
#endif

/* Proxies hold two sockets and two pipes per connection: take every fd we may. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			pr_err("warning: failed to raise the open-files limit to %llu: %s",
			       (unsigned long long)rl.rlim_max, strerror(errno));
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096)
		pr_err("warning: the open-files limit is %llu, about %llu connections (raise LimitNOFILE= or ulimit -Hn)",
		       (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_cur / 6);
}

static void log_counters(const struct mmp_counters *c)
{
	pr_info("totals: accepted %lu, spliced %lu (tc %lu, tc ineligible %lu, tc aborted %lu, tc short %lu, sockmap %lu, fallbacks %lu), refused source %lu, refused client %lu, bad header %lu, header timeout %lu, upstream failed %lu, resets forwarded %lu",
		atomic_load(&c->accepted), atomic_load(&c->spliced), atomic_load(&c->tc_flows),
		atomic_load(&c->tc_ineligible), atomic_load(&c->tc_aborted), atomic_load(&c->tc_short), atomic_load(&c->sockmap_flows),
		atomic_load(&c->sockmap_fallbacks), atomic_load(&c->refused_source), atomic_load(&c->refused_client),
		atomic_load(&c->bad_header), atomic_load(&c->header_timeout), atomic_load(&c->upstream_failed),
		atomic_load(&c->resets_forwarded));
}

static int run(const struct mmp_config *cfg)
{
	static struct mmp_counters counters;
	struct mmp_policy *policy = NULL;
	struct mmp_sockmap *sockmap = NULL;
	struct mmp_tc *tc = NULL;
	struct mmp_worker *workers;
	char addr[MMP_ADDRSTRLEN];
	sigset_t sigs;
	int err, sig, started = 0;

	raise_nofile();
	err = mmp_check_startup(cfg);
	if (err)
		return err;

	/* Signals go to this thread only (sigwait below); workers inherit the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN); /* EPIPE is handled where it happens */

	err = mmp_policy_open(cfg->pin_dir, cfg->allowed_path, &policy);
	if (err)
		return err;

	if (cfg->protocol == IPPROTO_UDP) {
		err = mmp_udp_run(cfg, policy, &sigs);
		goto out_policy;
	}

	/*
	 * auto = tc for every eligible flow, splice for the others: measured
	 * fastest here (README, Performance); sockmap is slower than splice on
	 * this kernel, so it runs only when asked for. An engine asked for by
	 * name that the kernel refuses is a start-up error, not a downgrade.
	 */
	if (cfg->engine == MMP_ENGINE_SOCKMAP) {
		err = mmp_sockmap_open(cfg->pin_dir, cfg->max_queued, &sockmap);
		if (err)
			goto out_policy;
	}
	if (cfg->engine == MMP_ENGINE_TC || cfg->engine == MMP_ENGINE_AUTO) {
		err = mmp_tc_open(cfg, &tc);
		if (err && cfg->engine == MMP_ENGINE_TC)
			goto out_policy;
		if (err)
			pr_err("warning: the tc engine is unavailable (see above); engine auto uses splice for every flow");
	}

	workers = calloc(cfg->listeners, sizeof(*workers));
	if (!workers) {
		err = -ENOMEM;
		goto out_policy;
	}
	for (int i = 0; i < cfg->listeners; i++) {
		err = mmp_worker_init(&workers[i], i, cfg, policy, sockmap, tc, &counters);
		started = i + 1; /* initialised, so mmp_worker_stop can free it */
		if (err)
			goto out_workers;
	}
	for (int i = 0; i < cfg->listeners; i++) {
		err = mmp_worker_start(&workers[i]);
		if (err)
			goto out_workers;
	}
	pr_info("listening on %s with %d listeners, engine %s; IPv4 upstream %s, IPv6 upstream %s",
		mmp_fmt_addr((const void *)&cfg->listen, addr), cfg->listeners,
		sockmap ? "sockmap" : tc ? "tc (splice for ineligible flows)" : "splice",
		mmp_fmt_addr((const void *)&cfg->target4, (char[MMP_ADDRSTRLEN]){ 0 }),
		mmp_fmt_addr((const void *)&cfg->target6, (char[MMP_ADDRSTRLEN]){ 0 }));

	do {
		err = sigwait(&sigs, &sig);
	} while (err == EINTR);
	pr_info("received %s: closing listeners and connections", strsignal(sig));
	err = 0;
out_workers:
	for (int i = 0; i < started; i++)
		mmp_worker_stop(&workers[i]);
	free(workers);
	log_counters(&counters);
out_policy:
	mmp_tc_close(tc, !cfg->detach);
	mmp_sockmap_close(sockmap);
	mmp_policy_close(policy);
	return err;
}

int main(int argc, char **argv)
{
	struct mmp_config cfg;

	if (mmp_config_parse(argc, argv, &cfg))
		return 2;
	mmp_log_setup_libbpf();

	switch (cfg.command) {
	case MMP_CMD_HELP:
		mmp_usage(stdout);
		return 0;
	case MMP_CMD_VERSION:
		printf("mmproxy-bpf %s\n", MMP_VERSION);
		return 0;
	case MMP_CMD_CHECK:
		return mmp_check_command(&cfg);
	case MMP_CMD_CLEANUP:
		return mmp_cleanup_command(cfg.pin_dir);
	case MMP_CMD_STATS:
		return mmp_stats_command(cfg.pin_dir);
	case MMP_CMD_SETUP_ROUTING:
		return mmp_routing_setup(cfg.route_table) ? 1 : 0;
	case MMP_CMD_CLEANUP_ROUTING:
		return mmp_routing_cleanup(cfg.route_table) ? 1 : 0;
	case MMP_CMD_RUN:
		return run(&cfg) ? 1 : 0;
	}
	return 0;
}
