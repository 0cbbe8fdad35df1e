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
#include <time.h>
#include <unistd.h>
#include "cli/check.h"
#include "cli/cleanup.h"
#include "cli/lo_sysctls_startup.h"
#include "cli/options.h"
#include "lib/config.h"
#include "lib/instance_lock.h"
#include "lib/log.h"
#include "lib/notify.h"
#include "policy/privileges.h"
#include "policy/policy.h"
#include "cli/routing.h"
#include "cli/stats.h"
#include "policy/xdp_gate.h"
#include "metrics/http.h"
#include "cli/stats_json.h"
#include "core/counters.h"
#include "engine/engine.h"
#include "udp/udp.h"
#include "lib/sockaddr.h"
#include "listen/port_lock.h"
#include "listen/port_range.h"
#include "listen/port_steer.h"
#include "tcp/pending.h"
#include "tcp/worker.h"

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

/* What finish_setup needs, from run. */
struct setup_state {
	const struct mmp_config *cfg;
	const struct mmp_xdp_gate *gate;
	struct mmp_metrics *metrics;
};

/*
 * Set-up is done and no thread runs yet: drop the capabilities the run no
 * longer needs (docs/DESIGN.md §9), then start the threads that serve, which
 * inherit the smaller set (capabilities are per thread).
 */
static int finish_setup(void *arg, unsigned int engine_features)
{
	const struct setup_state *st = arg;
	unsigned int features = MMP_FEAT_UPSTREAM | engine_features;

	if (st->gate)
		features |= MMP_FEAT_XDP_GATE;
	if (mmp_xdp_gate_shares_dispatcher(st->gate))
		features |= MMP_FEAT_XDP_DISPATCHER;
	if (st->cfg->mark)
		features |= MMP_FEAT_MARK;
	mmp_privileges_drop(features);
	return mmp_metrics_serve(st->metrics);
}

/* The tc and sockmap engines among those opened, as privileges.h features. */
static unsigned int engine_features(const struct mmp_engines *e)
{
	const struct mmp_engine *all[] = { &e->first, &e->fallback, &e->takeover };
	unsigned int f = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!all[i]->ops)
			continue;
		if (!strcmp(all[i]->ops->name, "tc"))
			f |= MMP_FEAT_TC;
		else if (!strcmp(all[i]->ops->name, "sockmap"))
			f |= MMP_FEAT_SOCKMAP;
	}
	return f;
}

static int run(const struct mmp_config *cfg)
{
	static struct mmp_counters counters;
	struct mmp_policy *policy = NULL;
	struct mmp_xdp_gate *gate = NULL;
	struct mmp_metrics *metrics = NULL;
	struct mmp_engines engines = { 0 };
	struct mmp_port_steer steer = { 0 };
	struct mmp_worker *workers = NULL;
	struct mmp_instance_lock lock;
	struct setup_state setup = { .cfg = cfg };
	char addr[MMP_ADDRSTRLEN];
	sigset_t sigs;
	int err, sig, started = 0, port_lock = -1;

	/*
	 * Signals go to this thread only (sigwait below); workers inherit the
	 * mask. Blocked first: a SIGHUP during the start-up checks (which may
	 * take seconds) waits for the loop instead of killing the process.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP); /* reload -a (systemctl reload) */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN); /* EPIPE is handled where it happens */

	raise_nofile();
	err = mmp_check_startup(cfg);
	if (err)
		return err;

	/* Before any pin or filter: nothing of another instance is touched when we are refused. */
	err = mmp_instance_lock(cfg, &lock);
	if (err)
		return err;
	err = mmp_port_lock(cfg, &port_lock); /* overlapping port ranges (docs/DESIGN.md §8) */
	if (err)
		goto out_lock;
	err = mmp_policy_open(cfg->pin_dir, cfg->allowed_path, &policy);
	if (err)
		goto out_lock;
	if (cfg->allowed_endpoints_path) {
		err = mmp_policy_open_endpoints(policy, cfg->allowed_endpoints_path);
		if (err)
			goto out_policy;
	}
	mmp_lo_sysctls_at_start(cfg);
	/* After the tries are filled: attached earlier, the gate would drop every allowed source too. */
	err = mmp_xdp_gate_open(cfg, &gate);
	if (err)
		goto out_policy;
	/* Scrapes read the pins (docs/DESIGN.md §6), so one server serves both modes. */
	if (cfg->metrics) {
		err = mmp_metrics_start(&cfg->metrics_addr, cfg->pin_dir, policy, &metrics);
		if (err)
			goto out_policy;
	}

	setup.gate = gate;
	setup.metrics = metrics;

	/* A port range: sk_lookup, or one socket per port (docs/DESIGN.md §8). */
	err = mmp_port_steer_open(cfg, &steer);
	if (err)
		goto out_policy;
	if (cfg->protocol == IPPROTO_UDP) {
		err = mmp_udp_run(cfg, policy, &steer, &sigs, finish_setup, &setup);
		goto out_policy;
	}

	err = mmp_engines_open(cfg, &engines);
	if (err)
		goto out_policy;
	err = mmp_counters_publish_open(&counters, cfg->pin_dir);
	if (err)
		goto out_engines;
	err = mmp_pending_open(cfg);
	if (err)
		goto out_counters;
	workers = calloc(cfg->listeners, sizeof(*workers));
	if (!workers) {
		err = -ENOMEM;
		goto out_pending;
	}
	for (int i = 0; i < cfg->listeners; i++) {
		err = mmp_worker_init(&workers[i], i, cfg, policy, &steer, &engines, &counters);
		started = i + 1; /* initialised, so mmp_worker_stop can free it */
		if (err)
			goto out_workers;
	}
	err = finish_setup(&setup, engine_features(&engines));
	if (err)
		goto out_workers;
	for (int i = 0; i < cfg->listeners; i++) {
		err = mmp_worker_start(&workers[i]);
		if (err)
			goto out_workers;
	}
	pr_info("listening on %s%s with %d listeners, engine %s; IPv4 upstream %s, IPv6 upstream %s",
		mmp_fmt_addr((const void *)&cfg->listen, addr), mmp_port_steer_describe(cfg, &steer,
		(char[64]){ 0 }, 64), cfg->listeners, mmp_engines_describe(&engines),
		mmp_fmt_port_range(&cfg->target4, cfg->target4_port_hi, (char[MMP_ADDRSTRLEN + 8]){ 0 }),
		mmp_fmt_port_range(&cfg->target6, cfg->target6_port_hi, (char[MMP_ADDRSTRLEN + 8]){ 0 }));

	mmp_notify_ready("listening (tcp)");
	/* Until SIGINT/SIGTERM: the totals to mmp_tcp_cnt once a second, for stats; SIGHUP reloads -a. */
	for (;;) {
		struct timespec second = { .tv_sec = 1 };

		mmp_counters_publish(&counters);
		sig = sigtimedwait(&sigs, NULL, &second);
		if (sig == SIGHUP)
			mmp_policy_reload(policy);
		else if (sig > 0)
			break;
	}
	mmp_notify_stopping();
	pr_info("received %s: closing listeners and connections", strsignal(sig));
	err = 0;
out_workers:
	for (int i = 0; i < started; i++)
		mmp_worker_stop(&workers[i]);
	free(workers);
	mmp_counters_log(&counters);
out_pending:
	mmp_pending_close();
out_counters:
	mmp_counters_publish_close(&counters);
out_engines:
	/* A failed start keeps what the maps hold: a predecessor's flows that it adopted (docs/DESIGN.md §3c). */
	mmp_engines_close(&engines, !cfg->detach || err);
out_policy:
	mmp_port_steer_close(&steer);
	mmp_metrics_stop(metrics);
	mmp_xdp_gate_close(gate);
	mmp_policy_close(policy);
out_lock:
	if (port_lock >= 0)
		close(port_lock);
	mmp_instance_unlock(&lock);
	return err;
}

int main(int argc, char **argv)
{
	struct mmp_config cfg;

	if (mmp_config_parse(argc, argv, &cfg))
		return 2;
	mmp_log_setup_libbpf();
	if (cfg.help) {
		mmp_usage(stdout, cfg.command);
		return 0;
	}

	switch (cfg.command) {
	case MMP_CMD_HELP:
		mmp_usage(stdout, MMP_CMD_HELP);
		return 0;
	case MMP_CMD_VERSION:
		printf("mmproxy-bpf %s\n", MMP_VERSION);
		return 0;
	case MMP_CMD_CHECK:
		return mmp_check_command(&cfg);
	case MMP_CMD_CLEANUP:
		return mmp_cleanup_command(&cfg);
	case MMP_CMD_STATS:
		if (cfg.stats_watch)
			return mmp_stats_watch(cfg.pin_dir);
		if (cfg.stats_json)
			return mmp_stats_json_command(cfg.pin_dir);
		return mmp_stats_cli(&cfg);
	case MMP_CMD_SETUP_ROUTING:
		return mmp_routing_setup(cfg.route_table) ? 1 : 0;
	case MMP_CMD_CLEANUP_ROUTING:
		return mmp_routing_cleanup(cfg.route_table) ? 1 : 0;
	case MMP_CMD_RUN:
		return run(&cfg) ? 1 : 0;
	}
	return 0;
}
