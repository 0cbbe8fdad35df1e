// SPDX-License-Identifier: GPL-2.0
/* The protocols' runs of one instance: cli/run_protocols.h. */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/run_protocols.h"
#include "core/clock.h"
#include "lib/log.h"
#include "lib/protocols.h"
#include "steer/reply_steer.h"
#include "tcp/tcp_run.h"
#include "udp/udp.h"

int mmp_runs_open(const struct mmp_config *cfg, const struct mmp_policy *policy, struct mmp_runs *r)
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

unsigned int mmp_runs_features(const struct mmp_runs *r)
{
	return (r->tcp ? mmp_tcp_run_features(r->tcp) : 0) | (r->udp ? mmp_udp_run_features(r->udp) : 0);
}

int mmp_runs_start(struct mmp_runs *r)
{
	int err = r->tcp ? mmp_tcp_run_start(r->tcp) : 0;

	return err ? err : r->udp ? mmp_udp_run_start(r->udp) : 0;
}

void mmp_runs_tick(struct mmp_runs *r)
{
	mmp_steer_tick();
	if (r->tcp)
		mmp_tcp_run_tick(r->tcp);
	if (r->udp)
		mmp_udp_run_tick(r->udp);
}

void mmp_runs_publish(struct mmp_runs *r)
{
	if (r->tcp)
		mmp_tcp_run_tick(r->tcp); /* it publishes the TCP totals, nothing else */
	if (r->udp)
		mmp_udp_run_publish(r->udp);
}

/* Both stop together: UDP first, whose flows hold no pins TCP's need; each logs its totals. */
void mmp_runs_close(struct mmp_runs *r, bool failed)
{
	mmp_udp_run_close(r->udp);
	mmp_tcp_run_close(r->tcp, failed);
	r->udp = NULL;
	r->tcp = NULL;
}

unsigned long mmp_runs_close_listeners(struct mmp_runs *r, unsigned int settle_ms)
{
	unsigned long accepted = mmp_tcp_run_accepted(r->tcp);
	uint64_t start;

	usleep(settle_ms * 1000);
	start = mmp_now_ms();
	mmp_tcp_run_drain(r->tcp);
	while (!mmp_tcp_run_listeners_closed(r->tcp) && mmp_now_ms() < start + 2000)
		usleep(1000);
	return mmp_tcp_run_accepted(r->tcp) - accepted;
}

void mmp_runs_drain(struct mmp_runs *r, const struct mmp_config *cfg, const sigset_t *sigs, uint64_t min_ms)
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
