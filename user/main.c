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
#include "udp/udp.h"
#include "lib/protocols.h"
#include "lib/sockaddr.h"
#include "listen/port_lock.h"
#include "tcp/tcp_run.h"

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

/* The port-range lock of each protocol served (listen/port_lock.h): -p tcp,udp holds two. */
static int port_locks(const struct mmp_config *cfg, int *tcp_fd, int *udp_fd)
{
	struct mmp_config one;
	int err = 0;

	if (mmp_config_serves(cfg, IPPROTO_TCP)) {
		mmp_config_for_protocol(cfg, IPPROTO_TCP, &one);
		err = mmp_port_lock(&one, tcp_fd);
	}
	if (!err && mmp_config_serves(cfg, IPPROTO_UDP)) {
		mmp_config_for_protocol(cfg, IPPROTO_UDP, &one);
		err = mmp_port_lock(&one, udp_fd);
	}
	return err;
}

/*
 * The protocols' runs (tcp/tcp_run.h, udp/udp.h): one of them, or both for
 * -p tcp,udp (docs/DESIGN.md §13), each with its own view of the
 * configuration (lib/protocols.h); the policy, the XDP gate, the metrics
 * server and the pin directory are shared.
 */
struct runs {
	struct mmp_config tcp_cfg, udp_cfg;
	struct mmp_tcp_run *tcp;
	struct mmp_udp_run *udp;
};

static int runs_open(const struct mmp_config *cfg, const struct mmp_policy *policy, struct runs *r)
{
	int err = 0;

	if (mmp_config_serves(cfg, IPPROTO_TCP)) {
		mmp_config_for_protocol(cfg, IPPROTO_TCP, &r->tcp_cfg);
		err = mmp_tcp_run_open(&r->tcp_cfg, policy, &r->tcp);
	}
	if (!err && mmp_config_serves(cfg, IPPROTO_UDP)) {
		mmp_config_for_protocol(cfg, IPPROTO_UDP, &r->udp_cfg);
		err = mmp_udp_run_open(&r->udp_cfg, policy, &r->udp);
	}
	return err;
}

static unsigned int runs_features(const struct runs *r)
{
	return (r->tcp ? mmp_tcp_run_features(r->tcp) : 0) | (r->udp ? mmp_udp_run_features(r->udp) : 0);
}

static int runs_start(struct runs *r)
{
	int err = r->tcp ? mmp_tcp_run_start(r->tcp) : 0;

	return err ? err : r->udp ? mmp_udp_run_start(r->udp) : 0;
}

static void runs_tick(struct runs *r)
{
	if (r->tcp)
		mmp_tcp_run_tick(r->tcp);
	if (r->udp)
		mmp_udp_run_tick(r->udp);
}

/* Both stop together: UDP first, whose flows hold no pins TCP's need; each logs its totals. */
static void runs_close(struct runs *r, bool failed)
{
	mmp_udp_run_close(r->udp);
	mmp_tcp_run_close(r->tcp, failed);
	r->udp = NULL;
	r->tcp = NULL;
}

/*
 * Set-up is done and no thread runs yet: drop the capabilities the run no
 * longer needs (docs/DESIGN.md §9), then start the threads that serve, which
 * inherit the smaller set (capabilities are per thread).
 */
static int finish_setup(const struct mmp_config *cfg, const struct mmp_xdp_gate *gate, struct mmp_metrics *metrics,
			unsigned int run_features)
{
	unsigned int features = MMP_FEAT_UPSTREAM | run_features;

	if (gate)
		features |= MMP_FEAT_XDP_GATE;
	if (mmp_xdp_gate_shares_dispatcher(gate))
		features |= MMP_FEAT_XDP_DISPATCHER;
	if (cfg->mark)
		features |= MMP_FEAT_MARK;
	mmp_privileges_drop(features);
	return mmp_metrics_serve(metrics);
}

/* Until SIGINT/SIGTERM, which it returns: the totals once a second, for stats; SIGHUP reloads -a for both protocols. */
static int serve_until_signal(struct runs *r, struct mmp_policy *policy, const sigset_t *sigs)
{
	for (;;) {
		struct timespec second = { .tv_sec = 1 };
		int sig;

		runs_tick(r);
		sig = sigtimedwait(sigs, NULL, &second);
		/* One reload: both protocols read the same allow-list maps. UDP: only new flows are checked. */
		if (sig == SIGHUP)
			mmp_policy_reload(policy);
		else if (sig > 0)
			return sig;
	}
}

static int run(const struct mmp_config *cfg)
{
	static struct runs runs; /* two configurations: kept off the stack */
	struct mmp_policy *policy = NULL;
	struct mmp_xdp_gate *gate = NULL;
	struct mmp_metrics *metrics = NULL;
	struct mmp_instance_lock lock;
	char status[32];
	sigset_t sigs;
	int err, sig, tcp_port_lock = -1, udp_port_lock = -1;

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
	/* Overlapping port ranges (docs/DESIGN.md §8), one lock per protocol served. */
	err = port_locks(cfg, &tcp_port_lock, &udp_port_lock);
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
	/* Scrapes read the pins (docs/DESIGN.md §6), so one server serves both protocols. */
	if (cfg->metrics) {
		err = mmp_metrics_start(&cfg->metrics_addr, cfg->pin_dir, policy, &metrics);
		if (err)
			goto out_policy;
	}

	err = runs_open(cfg, policy, &runs);
	if (err)
		goto out_runs;
	err = finish_setup(cfg, gate, metrics, runs_features(&runs));
	if (err)
		goto out_runs;
	err = runs_start(&runs);
	if (err)
		goto out_runs;

	snprintf(status, sizeof(status), "listening (%s)", cfg->tcp_and_udp ? "tcp,udp" : mmp_config_protocol_name(cfg));
	mmp_notify_ready(status);
	sig = serve_until_signal(&runs, policy, &sigs);
	mmp_notify_stopping();
	pr_info("received %s: closing listeners, connections and flows", strsignal(sig));
	err = 0;
out_runs:
	runs_close(&runs, err);
out_policy:
	mmp_metrics_stop(metrics);
	mmp_xdp_gate_close(gate);
	mmp_policy_close(policy);
out_lock:
	if (tcp_port_lock >= 0)
		close(tcp_port_lock);
	if (udp_port_lock >= 0)
		close(udp_port_lock);
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
