// SPDX-License-Identifier: GPL-2.0
/*
 * UDP mode (-p udp, and the UDP half of -p tcp,udp): set up the shared state
 * and one listener thread per --listeners; cli/run.c writes the totals to
 * mmp_udp_cnt every 100 ms (mmp_udp_run_publish) until a signal comes, then
 * the close stops the threads, closes every flow and removes the pins.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>
#include "lib/counter_table.h"
#include "lib/log.h"
#include "lib/quota.h"
#include "lib/notify.h"
#include "policy/policy.h"
#include "udp/fast/udp_fast.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"
#include "listen/port_steer.h"
#include "udp/udp.h"
#include "lib/privileges.h"
#include "udp/fast/udp_maps.h"
#include "udp/udp_registry.h"
#include "udp/udp_worker.h"

/* fds kept for everything but flows: listen sockets, epoll, eventfds, maps, logs. */
#define FD_RESERVE 64
#define FD_RESERVE_PER_LISTENER 4
#define MAX_FLOWS_CAP (1U << 22)

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
	out->fast_passed = k[MMP_UDP_KCNT_PASS_HEADER] + k[MMP_UDP_KCNT_PASS_BIG] + k[MMP_UDP_KCNT_PASS_PARTIAL];
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
		const char *name = mmp_counter_name(MMP_FAM_UDP, i);
		int d = !strncmp(name, "drop_", 5);

		if (off[d] < sizeof(line[d]))
			off[d] += snprintf(line[d] + off[d], sizeof(line[d]) - off[d], " %s=%llu", name,
					   (unsigned long long)v[i]);
	}
	pr_info("udp totals:%s", line[0]);
	pr_info("udp drops:%s", line[1]);
}

struct mmp_udp_run {
	struct udp_shared sh;
	struct mmp_port_steer steer;
	struct udp_worker *w;
	int inited; /* workers initialised, so udp_worker_stop can free them */
};

/*
 * --engine auto (the default) and tc: the kernel moves established IPv4
 * flows. Measured with bench/run.sh (50 flows, 1200 B): request/response
 * at 0.99 of no proxy against 0.61 for the userspace relay, with half
 * the CPU per datagram; tc insists on it, auto falls back to the relay.
 * splice and sockmap, TCP's engines, mean the userspace relay alone.
 */
static int open_fast_path(struct mmp_udp_run *r)
{
	const struct mmp_config *cfg = r->sh.cfg;
	bool want_fast = cfg->engine == MMP_ENGINE_AUTO || cfg->engine == MMP_ENGINE_TC;
	int err;

	err = udp_maps_open(cfg->pin_dir, r->sh.max_flows, want_fast, &r->sh.maps);
	if (err || !want_fast)
		return err;
	err = udp_fast_open(cfg, r->sh.maps, &r->sh.fast);
	if (err && cfg->engine == MMP_ENGINE_TC) {
		pr_err("UDP mode: --engine tc needs the in-kernel fast path, which is not available here: %s (use --engine auto to relay in userspace)",
		       strerror(-err));
		return err;
	}
	if (err)
		pr_info("UDP fast path not available (%s): relaying every datagram in userspace", strerror(-err));
	return 0;
}

static int init_workers(struct mmp_udp_run *r)
{
	int n = r->sh.cfg->listeners;

	if (n > 1) {
		int err = udp_registry_open(n, r->sh.seed, &r->sh.reg);

		if (err) {
			pr_err("UDP mode: failed to set up the listener threads' registry: %s", strerror(-err));
			return err;
		}
	}
	r->w = calloc(n, sizeof(*r->w));
	if (!r->w)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		int err = udp_worker_init(&r->w[i], i, &r->sh);

		r->inited = i + 1;
		if (err)
			return err;
	}
	return 0;
}

int mmp_udp_run_open(const struct mmp_config *cfg, const struct mmp_policy *policy, struct mmp_udp_run **out)
{
	struct mmp_udp_run *r = calloc(1, sizeof(*r));
	int err;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->sh.cfg = cfg;
	r->sh.policy = policy;
	r->sh.steer = &r->steer;
	r->sh.max_flows = flow_limit(cfg->listeners);
	r->sh.seed = random_seed();
	r->sh.idle_ns = (uint64_t)cfg->close_after_s * 1000000000ULL;
	/* One load balancer address cannot take every flow (docs/DESIGN.md §7a). */
	err = mmp_quota_open(cfg->udp_max_flows_per_lb < r->sh.max_flows ? cfg->udp_max_flows_per_lb : r->sh.max_flows,
			     r->sh.seed ^ 0x5eedULL, &r->sh.per_lb);
	if (err) {
		pr_err("UDP mode: out of memory for the per-load-balancer flow table");
		goto fail;
	}
	/* A port range: sk_lookup, or one socket per port (docs/DESIGN.md §8). */
	err = mmp_port_steer_open(cfg, &r->steer);
	if (err)
		goto fail;
	err = open_fast_path(r);
	if (err)
		goto fail;
	err = init_workers(r);
	if (err)
		goto fail;
	*out = r;
	return 0;
fail:
	mmp_udp_run_close(r);
	return err;
}

unsigned int mmp_udp_run_features(const struct mmp_udp_run *r)
{
	return r->sh.fast ? MMP_FEAT_UDP_FAST : 0;
}

int mmp_udp_run_start(struct mmp_udp_run *r)
{
	const struct mmp_config *cfg = r->sh.cfg;
	char l[MMP_ADDRSTRLEN + 8], t4[MMP_ADDRSTRLEN + 8], t6[MMP_ADDRSTRLEN + 8];

	for (int i = 0; i < cfg->listeners; i++) {
		int err = udp_worker_start(&r->w[i]);

		if (err)
			return err;
	}
	pr_info("listening on udp %s with %d listeners, --udp-header %s, idle flows close after %d s, up to %u flows, %s; IPv4 upstream %s, IPv6 upstream %s",
		mmp_fmt_port_range(&cfg->listen, cfg->listen_port_hi, l), cfg->listeners, header_mode_name(cfg->udp_header),
		cfg->close_after_s, r->sh.max_flows,
		r->sh.fast ? "flows moved in the kernel (fast path)" : "every datagram relayed in userspace",
		mmp_fmt_port_range(&cfg->target4, cfg->target4_port_hi, t4),
		mmp_fmt_port_range(&cfg->target6, cfg->target6_port_hi, t6));
	return 0;
}

void mmp_udp_run_publish(struct mmp_udp_run *r)
{
	struct mmp_udp_counters c;

	sum_counters(&r->sh, r->w, r->inited, &c);
	udp_maps_put_counters(r->sh.maps, &c);
}

void mmp_udp_run_tick(struct mmp_udp_run *r)
{
	mmp_udp_run_publish(r);
	udp_fast_follow(r->sh.fast); /* after mmp_steer_tick, which moves the steering first */
}

void mmp_udp_run_close(struct mmp_udp_run *r)
{
	struct mmp_udp_counters totals;

	if (!r)
		return;
	for (int i = 0; i < r->inited; i++)
		udp_worker_stop(&r->w[i]);
	if (r->inited) {
		sum_counters(&r->sh, r->w, r->inited, &totals);
		log_totals(&totals);
	}
	free(r->w);
	udp_registry_close(r->sh.reg);
	udp_fast_close(r->sh.fast);
	udp_maps_close(r->sh.maps);
	mmp_port_steer_close(&r->steer);
	mmp_quota_close(r->sh.per_lb);
	free(r);
}
