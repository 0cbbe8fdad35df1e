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
#include "cli/takeover.h"
#include "core/clock.h"
#include "lib/config.h"
#include "lib/handover.h"
#include "lib/instance_lock.h"
#include "lib/log.h"
#include "lib/notify.h"
#include "policy/privileges.h"
#include "steer/reply_steer.h"
#include "policy/policy.h"
#include "cli/routing.h"
#include "cli/stats.h"
#include "policy/xdp_gate.h"
#include "metrics/http.h"
#include "cli/stats_json.h"
#include "udp/udp.h"
#include "lib/protocols.h"
#include "lib/sockaddr.h"
#include "listen/activated.h"
#include "listen/migrate_req.h"
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
	mmp_steer_tick();
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

/*
 * What run() holds besides the runs: --takeover (docs/DESIGN.md §15) takes
 * the locks and the metrics port only once its predecessor has let them go.
 */
struct held {
	const struct mmp_config *cfg;
	struct mmp_policy *policy;
	struct mmp_xdp_gate *gate;
	struct mmp_metrics *metrics;
	struct mmp_instance_lock lock;
	int tcp_port_lock, udp_port_lock;
	int predecessor; /* --takeover: its pid while it still holds what we need; 0 after */
};

/* --takeover: each lock once the predecessor let it go; 0 once everything is ours, else -EADDRINUSE. */
static int takeover_finish(struct held *h)
{
	const struct mmp_config *cfg = h->cfg;
	int err;

	if (mmp_instance_take_serving(cfg->pin_dir, &h->lock))
		return -EADDRINUSE;
	if (h->lock.pin_fd < 0 && mmp_instance_lock_after_takeover(cfg, &h->lock))
		return -EADDRINUSE;
	if (h->tcp_port_lock < 0 && h->udp_port_lock < 0) {
		err = port_locks(cfg, &h->tcp_port_lock, &h->udp_port_lock);
		if (err)
			return err;
	}
	if (mmp_policy_lock_retry(h->policy))
		return -EADDRINUSE;
	/* The predecessor's server held the port until it exited: scrapes had no answer while it drained. */
	if (cfg->metrics && !h->metrics) {
		err = mmp_metrics_start(&cfg->metrics_addr, cfg->pin_dir, h->policy, &h->metrics);
		if (!err)
			err = mmp_metrics_serve(h->metrics);
		if (err)
			pr_err("--takeover: no metrics on this run (%s); the predecessor's port is still taken",
			       strerror(-err));
	}
	mmp_takeover_set(false);
	pr_info("takeover done: pid %d has exited, the instance's locks are ours", h->predecessor);
	h->predecessor = 0;
	return 0;
}

/*
 * Until SIGINT/SIGTERM or SIGUSR2 (taken over), which it returns: the
 * totals once a second, for stats; SIGHUP reloads -a for both protocols.
 * While a takeover waits for its predecessor, its locks are tried every
 * 100 ms.
 */
static int serve_until_signal(struct runs *r, struct held *h, const sigset_t *sigs)
{
	uint64_t next_tick = 0;

	for (;;) {
		struct timespec wait = { .tv_sec = h->predecessor ? 0 : 1, .tv_nsec = h->predecessor ? 100000000 : 0 };
		uint64_t now = mmp_now_ms();
		int sig, err;

		if (now >= next_tick) {
			runs_tick(r);
			next_tick = now + 1000;
		}
		if (h->predecessor) {
			err = takeover_finish(h);
			if (err && err != -EADDRINUSE)
				return -1; /* a port overlap: logged */
		}
		sig = sigtimedwait(sigs, NULL, &wait);
		/* One reload: both protocols read the same allow-list maps. UDP: only new flows are checked. */
		if (sig == SIGHUP)
			mmp_policy_reload(h->policy);
		else if (sig > 0)
			return sig;
	}
}

/*
 * Taken over (SIGUSR2, docs/DESIGN.md §15): the successor listens already.
 * Close our listeners (tcp_migrate_req moves their queues to its ones), let
 * it have "serve:DIR", then serve what we hold until it ends, for at most
 * --drain-timeout, or until SIGINT/SIGTERM. From the first step on nothing
 * the successor uses is removed at exit (lib/handover.h).
 */
/* Close every listener, in its own thread; wait (2 s at most) until they are closed. */
static void close_listeners(struct runs *r)
{
	uint64_t start = mmp_now_ms();

	mmp_tcp_run_drain(r->tcp);
	while (!mmp_tcp_run_listeners_closed(r->tcp) && mmp_now_ms() < start + 2000)
		usleep(1000);
}

/*
 * Serve what is held until it ends, --drain-timeout, or SIGINT/SIGTERM;
 * at least min_ms in any case.
 */
static void drain(struct runs *r, const struct mmp_config *cfg, const sigset_t *sigs, uint64_t min_ms)
{
	uint64_t start = mmp_now_ms(), deadline = start + (uint64_t)cfg->drain_timeout_s * 1000;
	unsigned long left;

	pr_info("draining %lu connections for at most %d s", mmp_tcp_run_active(r->tcp), cfg->drain_timeout_s);
	while ((left = mmp_tcp_run_active(r->tcp)) > 0 || mmp_now_ms() < start + min_ms) {
		struct timespec tenth = { .tv_nsec = 100000000 };
		int sig;

		if (left && mmp_now_ms() >= deadline) {
			pr_info("--drain-timeout reached: closing %lu connections", left);
			break;
		}
		sig = sigtimedwait(sigs, NULL, &tenth);
		if (sig == SIGINT || sig == SIGTERM) {
			pr_info("received %s while draining: closing %lu connections", strsignal(sig), left);
			break;
		}
	}
}

static void hand_over(struct runs *r, struct held *h, const sigset_t *sigs)
{
	int migrate = mmp_migrate_req_on();

	mmp_handover_begin();
	mmp_takeover_set(false);
	close_listeners(r);
	mmp_instance_stop_serving(&h->lock);
	pr_info("taken over: listeners closed");
	/*
	 * A half-open request whose ACK is still on its way migrates when it
	 * lands, only while the sysctl is on: keep it on a moment, whatever is left.
	 */
	drain(r, h->cfg, sigs, 1000);
	mmp_migrate_req_put_back(migrate);
}

static int run(const struct mmp_config *cfg, int argc, char **argv)
{
	static struct runs runs; /* two configurations: kept off the stack */
	struct held h = { .cfg = cfg, .tcp_port_lock = -1, .udp_port_lock = -1,
			  .lock = { .pin_fd = -1, .filter_fd = -1, .udp_filter_fd = -1, .serve_fd = -1 } };
	char status[32];
	sigset_t sigs;
	int err, sig;

	/*
	 * Signals go to this thread only (sigwait below); workers inherit the
	 * mask. Blocked first: a SIGHUP during the start-up checks (which may
	 * take seconds) waits for the loop instead of killing the process.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP); /* reload -a (systemctl reload) */
	sigaddset(&sigs, SIGUSR2); /* taken over: run --takeover (docs/DESIGN.md §15) */
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN); /* EPIPE is handled where it happens */

	raise_nofile();
	mmp_activated(); /* takes LISTEN_FDS before any thread runs (it edits the environment) */
	err = mmp_check_startup(cfg);
	if (err)
		return err;

	if (cfg->takeover) {
		/* Its locks stay the predecessor's until it exits: takeover_finish takes them then. */
		h.predecessor = mmp_takeover_find(cfg, argc, argv);
		if (h.predecessor < 0)
			return h.predecessor;
		mmp_takeover_set(true);
	} else {
		/* Before any pin or filter: nothing of another instance is touched when we are refused. */
		err = mmp_instance_lock(cfg, &h.lock);
		if (err)
			return err;
		/* Overlapping port ranges (docs/DESIGN.md §8), one lock per protocol served. */
		err = port_locks(cfg, &h.tcp_port_lock, &h.udp_port_lock);
		if (err)
			goto out_lock;
	}
	err = mmp_policy_open(cfg->pin_dir, cfg->allowed_path, &h.policy);
	if (err)
		goto out_lock;
	if (cfg->allowed_endpoints_path) {
		err = mmp_policy_open_endpoints(h.policy, cfg->allowed_endpoints_path);
		if (err)
			goto out_policy;
	}
	mmp_lo_sysctls_at_start(cfg);
	/* After the tries are filled: attached earlier, the gate would drop every allowed source too. */
	err = mmp_xdp_gate_open(cfg, &h.gate);
	if (err)
		goto out_policy;
	/* Scrapes read the pins (docs/DESIGN.md §6), so one server serves both protocols. A takeover's waits. */
	if (cfg->metrics && !cfg->takeover) {
		err = mmp_metrics_start(&cfg->metrics_addr, cfg->pin_dir, h.policy, &h.metrics);
		if (err)
			goto out_policy;
	}

	/* Before any connection: replies from an upstream beyond loopback (docs/DESIGN.md §14). */
	err = mmp_steer_open(cfg);
	if (err)
		goto out_policy;
	err = runs_open(cfg, h.policy, &runs);
	if (err)
		goto out_runs;
	err = finish_setup(cfg, h.gate, h.metrics, runs_features(&runs));
	if (err)
		goto out_runs;
	err = runs_start(&runs);
	if (err)
		goto out_runs;

	snprintf(status, sizeof(status), "listening (%s)", cfg->tcp_and_udp ? "tcp,udp" : mmp_config_protocol_name(cfg));
	mmp_notify_ready(status);
	/* Our listeners are live and in its SO_REUSEPORT group: the predecessor may close its own. */
	if (cfg->takeover)
		mmp_takeover_signal(h.predecessor);
	sig = serve_until_signal(&runs, &h, &sigs);
	mmp_notify_stopping();
	err = 0;
	if (sig == SIGUSR2) {
		hand_over(&runs, &h, &sigs);
	} else if (sig > 0 && mmp_activated() && runs.tcp) {
		/* The socket is the manager's: what arrives now waits in its queue for our successor (§15). */
		pr_info("received %s: socket-activated, the listening socket stays queued in the service manager",
			strsignal(sig));
		close_listeners(&runs);
		drain(&runs, cfg, &sigs, 0);
	} else if (sig > 0) {
		pr_info("received %s: closing listeners, connections and flows", strsignal(sig));
	} else {
		err = -EADDRINUSE;
	}
out_runs:
	/* Taken over, the engines keep every map entry and filter: the successor's now. */
	runs_close(&runs, err || mmp_handing_over());
	mmp_steer_close();
out_policy:
	mmp_metrics_stop(h.metrics);
	mmp_xdp_gate_close(h.gate);
	mmp_policy_close(h.policy);
out_lock:
	if (h.tcp_port_lock >= 0)
		close(h.tcp_port_lock);
	if (h.udp_port_lock >= 0)
		close(h.udp_port_lock);
	mmp_instance_unlock(&h.lock);
	return err;
}

int main(int argc, char **argv)
{
	struct mmp_config cfg;
	/* As given: getopt may reorder argv, and --takeover compares them with its predecessor's. */
	char **given = calloc((size_t)argc + 1, sizeof(*given));

	if (!given)
		return 1;
	memcpy(given, argv, (size_t)argc * sizeof(*argv));
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
		return run(&cfg, argc, given) ? 1 : 0;
	}
	return 0;
}
