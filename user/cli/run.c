// SPDX-License-Identifier: GPL-2.0
/* The `run` command: cli/run.h. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "cli/check.h"
#include "cli/lo_sysctls_startup.h"
#include "cli/run.h"
#include "cli/run_protocols.h"
#include "cli/takeover.h"
#include "core/clock.h"
#include "lib/handover.h"
#include "lib/instance_lock.h"
#include "lib/log.h"
#include "lib/notify.h"
#include "lib/protocols.h"
#include "listen/activated.h"
#include "listen/migrate_req.h"
#include "listen/port_lock.h"
#include "metrics/http.h"
#include "policy/policy.h"
#include "lib/privileges.h"
#include "policy/xdp_gate.h"
#include "steer/reply_steer.h"

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
	if (cfg->lift_pipe_limits)
		features |= mmp_pipe_cap_feature(); /* chosen by mmp_check_startup */
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
 * protocols' tick once a second; SIGHUP reloads -a for both protocols.
 * The TCP and UDP totals are published for stats every 100 ms: "how many flows
 * reached the kernel 1 s after they started" is read from stats --json
 * (bench/field.sh), and a second's lag hid up to a third of them. While a
 * takeover waits for its predecessor, its locks are tried every 100 ms too.
 */
static int serve_until_signal(struct mmp_runs *r, struct held *h, const sigset_t *sigs)
{
	uint64_t next_tick = 0;

	for (;;) {
		struct timespec wait = { .tv_sec = 0, .tv_nsec = 100000000 };
		uint64_t now = mmp_now_ms();
		int sig, err;

		if (now >= next_tick) {
			mmp_runs_tick(r);
			next_tick = now + 1000;
		} else {
			mmp_runs_publish(r);
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
 * A moment for the handshakes our listeners started to complete before they
 * close: the successor's SO_REUSEPORT program sends it every new SYN already,
 * and the kernel resets a child whose handshake completes as its listener
 * closes (docs/DESIGN.md §15). One that takes longer migrates when it lands.
 */
#define HANDOVER_SETTLE_MS 100

/*
 * Taken over (SIGUSR2, docs/DESIGN.md §15): the successor listens already,
 * and takes every new connection. Let the handshakes under way complete
 * (our threads still accept), close our listeners (tcp_migrate_req, and the
 * successor's program, move what their queues hold to its ones), let
 * it have "serve:DIR", then serve what we hold until it ends, for at most
 * --drain-timeout, or until SIGINT/SIGTERM. From the first step on nothing
 * the successor uses is removed at exit (lib/handover.h).
 */
static void hand_over(struct mmp_runs *r, struct held *h, const sigset_t *sigs)
{
	int migrate = mmp_migrate_req_on();
	unsigned long late;

	mmp_handover_begin();
	mmp_takeover_set(false);
	late = mmp_runs_close_listeners(r, HANDOVER_SETTLE_MS);
	mmp_instance_stop_serving(&h->lock);
	/* Handshakes under way, or a successor without the program (an older build): t62 counts these. */
	pr_info("taken over: listeners closed (%lu connections accepted after the successor took the port)", late);
	/*
	 * A half-open request whose ACK is still on its way migrates when it
	 * lands, only while the sysctl is on: keep it on a moment, whatever is left.
	 */
	mmp_runs_drain(r, h->cfg, sigs, 1000);
	mmp_migrate_req_put_back(migrate);
}

int mmp_run_command(const struct mmp_config *cfg, int argc, char **argv)
{
	static struct mmp_runs runs; /* two configurations: kept off the stack */
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
	err = mmp_runs_open(cfg, h.policy, &runs);
	if (err)
		goto out_runs;
	err = finish_setup(cfg, h.gate, h.metrics, mmp_runs_features(&runs));
	if (err)
		goto out_runs;
	err = mmp_runs_start(&runs);
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
		mmp_runs_close_listeners(&runs, 0);
		mmp_runs_drain(&runs, cfg, &sigs, 0);
	} else if (sig > 0) {
		pr_info("received %s: closing listeners, connections and flows", strsignal(sig));
	} else {
		err = -EADDRINUSE;
	}
out_runs:
	/* Taken over, the engines keep every map entry and filter: the successor's now. */
	mmp_runs_close(&runs, err || mmp_handing_over());
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
