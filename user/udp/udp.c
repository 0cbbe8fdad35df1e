// SPDX-License-Identifier: GPL-2.0
/*
 * UDP mode (-p udp): set up the shared state and one listener thread per
 * --listeners, write the totals to mmp_udp_cnt once a second until a signal
 * comes, then stop the threads, close every flow and remove the pins.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/resource.h>
#include "lib/log.h"
#include "policy/quota.h"
#include "lib/notify.h"
#include "policy/policy.h"
#include "udp/fast/udp_fast.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"
#include "udp/udp.h"
#include "policy/privileges.h"
#include "udp/fast/udp_maps.h"
#include "udp/udp_registry.h"
#include "udp/udp_worker.h"

/* fds kept for everything but flows: listen sockets, epoll, eventfds, maps, logs. */
#define FD_RESERVE 64
#define FD_RESERVE_PER_LISTENER 4
#define MAX_FLOWS_CAP (1U << 22)

static const char *const cnt_names[MMP_UDP_CNT_MAX] = {
#define X(name, desc) [MMP_UDP_CNT_##name] = #name,
	MMP_UDP_COUNTERS(X)
#undef X
};

static const char *header_mode_name(enum mmp_udp_header h)
{
	switch (h) {
	case MMP_UDP_HDR_AUTO:
		return "auto";
	case MMP_UDP_HDR_EVERY:
		return "every";
	case MMP_UDP_HDR_FIRST:
		return "first";
	case MMP_UDP_HDR_SPP:
		return "spp";
	}
	return "?";
}

/* One upstream socket per flow: the open-files limit bounds the flows. */
static uint32_t flow_limit(int listeners)
{
	uint64_t reserve = FD_RESERVE + (uint64_t)listeners * FD_RESERVE_PER_LISTENER;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > MAX_FLOWS_CAP + reserve)
		return MAX_FLOWS_CAP;
	return rl.rlim_cur > reserve + 16 ? (uint32_t)(rl.rlim_cur - reserve) : 16;
}

static uint64_t random_seed(void)
{
	uint64_t seed;

	/* Hash chains keyed on addresses an LB can choose: keep the seed unpredictable. */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&seed;
	return seed;
}

/* Every thread's counters, and the fast path's (main thread only: it owns the kernel counters' scratch). */
static void sum_counters(struct udp_shared *sh, const struct udp_worker *w, int n, struct mmp_udp_counters *out)
{
	uint64_t *sum = (uint64_t *)out, k[MMP_UDP_KCNT_MAX];

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < n; i++)
		for (int c = 0; c < MMP_UDP_CNT_MAX; c++)
			sum[c] += __atomic_load_n(&w[i].cnt[c], __ATOMIC_RELAXED);
	if (!sh->fast)
		return;
	udp_maps_kcounters(sh->maps, k);
	out->fast_fwd_dgrams = k[MMP_UDP_KCNT_FWD];
	out->fast_reply_dgrams = k[MMP_UDP_KCNT_REV];
	out->fast_passed = k[MMP_UDP_KCNT_PASS_HEADER] + k[MMP_UDP_KCNT_PASS_BIG];
	out->fast_errors = k[MMP_UDP_KCNT_ERRORS];
	out->fast_held = k[MMP_UDP_KCNT_HELD];
	out->fast_wrong_ifindex = k[MMP_UDP_KCNT_WRONG_IFINDEX];
}

/* Two lines at -v 1: the traffic and flows, then the drops (1 KiB per log line). */
static void log_totals(const struct mmp_udp_counters *c)
{
	const uint64_t *v = (const uint64_t *)c;
	char line[2][1024];
	size_t off[2] = { 0, 0 };

	for (int i = 0; i < MMP_UDP_CNT_MAX; i++) {
		int d = !strncmp(cnt_names[i], "drop_", 5);

		if (off[d] < sizeof(line[d]))
			off[d] += snprintf(line[d] + off[d], sizeof(line[d]) - off[d], " %s=%llu", cnt_names[i],
					   (unsigned long long)v[i]);
	}
	pr_info("udp totals:%s", line[0]);
	pr_info("udp drops:%s", line[1]);
}

/* Until SIGINT/SIGTERM: the totals to mmp_udp_cnt once a second; SIGHUP reloads -a. Returns the signal. */
static int wait_for_signal(struct udp_shared *sh, struct mmp_policy *policy, const struct udp_worker *w, int n,
			   const sigset_t *sigs)
{
	const struct timespec second = { .tv_sec = 1 };
	struct mmp_udp_counters c;

	for (;;) {
		int sig = sigtimedwait(sigs, NULL, &second);

		if (sig == SIGHUP) {
			/* Only new flows are checked: an open flow keeps going until it idles out. */
			mmp_policy_reload(policy);
			continue;
		}
		if (sig > 0)
			return sig;
		sum_counters(sh, w, n, &c);
		udp_maps_put_counters(sh->maps, &c);
	}
}

int mmp_udp_run(const struct mmp_config *cfg, struct mmp_policy *policy, const struct mmp_port_steer *steer,
		const sigset_t *sigs, int (*setup_done)(void *arg, unsigned int features), void *arg)
{
	struct udp_shared sh = { .cfg = cfg, .policy = policy, .steer = steer };
	char l[MMP_ADDRSTRLEN + 8], t4[MMP_ADDRSTRLEN + 8], t6[MMP_ADDRSTRLEN + 8];
	struct mmp_udp_counters totals;
	struct udp_worker *w;
	bool want_fast;
	int err, sig, inited = 0;

	sh.max_flows = flow_limit(cfg->listeners);
	sh.seed = random_seed();
	/* One load balancer address cannot take every flow (docs/DESIGN.md §7a). */
	err = mmp_quota_open(cfg->udp_max_flows_per_lb < sh.max_flows ? cfg->udp_max_flows_per_lb : sh.max_flows,
			     sh.seed ^ 0x5eedULL, &sh.per_lb);
	if (err) {
		pr_err("UDP mode: out of memory for the per-load-balancer flow table");
		return err;
	}
	sh.idle_ns = (uint64_t)cfg->close_after_s * 1000000000ULL;
	/*
	 * --engine auto (the default) and tc: the kernel moves established IPv4
	 * flows. Measured with bench/run.sh (50 flows, 1200 B): request/response
	 * at 0.99 of no proxy against 0.61 for the userspace relay, with half
	 * the CPU per datagram; tc insists on it, auto falls back to the relay.
	 * splice and sockmap, TCP's engines, mean the userspace relay alone.
	 */
	want_fast = cfg->engine == MMP_ENGINE_AUTO || cfg->engine == MMP_ENGINE_TC;
	err = udp_maps_open(cfg->pin_dir, sh.max_flows, want_fast, &sh.maps);
	if (err)
		goto out_quota;
	if (want_fast) {
		err = udp_fast_open(cfg, sh.maps, &sh.fast);
		if (err && cfg->engine == MMP_ENGINE_TC) {
			pr_err("UDP mode: --engine tc needs the in-kernel fast path, which is not available here: %s (use --engine auto to relay in userspace)",
			       strerror(-err));
			goto out_maps;
		}
		if (err)
			pr_info("UDP fast path not available (%s): relaying every datagram in userspace", strerror(-err));
		err = 0;
	}
	if (cfg->listeners > 1) {
		err = udp_registry_open(cfg->listeners, sh.seed, &sh.reg);
		if (err) {
			pr_err("UDP mode: failed to set up the listener threads' registry: %s", strerror(-err));
			goto out_maps;
		}
	}
	w = calloc(cfg->listeners, sizeof(*w));
	if (!w) {
		err = -ENOMEM;
		goto out_registry;
	}
	for (int i = 0; i < cfg->listeners; i++) {
		err = udp_worker_init(&w[i], i, &sh);
		inited = i + 1; /* initialised, so udp_worker_stop can free it */
		if (err)
			goto out_workers;
	}
	err = setup_done(arg, sh.fast ? MMP_FEAT_UDP_FAST : 0);
	if (err)
		goto out_workers;
	for (int i = 0; i < cfg->listeners; i++) {
		err = udp_worker_start(&w[i]);
		if (err)
			goto out_workers;
	}
	pr_info("listening on udp %s with %d listeners, --udp-header %s, idle flows close after %d s, up to %u flows, %s; IPv4 upstream %s, IPv6 upstream %s",
		mmp_fmt_port_range(&cfg->listen, cfg->listen_port_hi, l), cfg->listeners, header_mode_name(cfg->udp_header),
		cfg->close_after_s, sh.max_flows,
		sh.fast ? "flows moved in the kernel (fast path)" : "every datagram relayed in userspace",
		mmp_fmt_port_range(&cfg->target4, cfg->target4_port_hi, t4),
		mmp_fmt_port_range(&cfg->target6, cfg->target6_port_hi, t6));

	mmp_notify_ready("listening (udp)");
	sig = wait_for_signal(&sh, policy, w, cfg->listeners, sigs);
	mmp_notify_stopping();
	pr_info("received %s: closing the udp listeners and flows", strsignal(sig));
	err = 0;
out_workers:
	for (int i = 0; i < inited; i++)
		udp_worker_stop(&w[i]);
	sum_counters(&sh, w, inited, &totals);
	log_totals(&totals);
	free(w);
out_registry:
	udp_registry_close(sh.reg);
out_maps:
	udp_fast_close(sh.fast);
	udp_maps_close(sh.maps);
out_quota:
	mmp_quota_close(sh.per_lb);
	return err;
}
