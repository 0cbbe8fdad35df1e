/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The protocols' runs of one instance (tcp/tcp_run.h, udp/udp.h): one of
 * them, or both for -p tcp,udp (docs/DESIGN.md §13), each with its own view
 * of the configuration (lib/protocols.h); the policy, the XDP gate, the
 * metrics server and the pin directory are shared (cli/run.c holds those).
 */
#ifndef MMP_RUN_PROTOCOLS_H
#define MMP_RUN_PROTOCOLS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "lib/config.h"

struct mmp_policy;

struct mmp_runs {
	struct mmp_config tcp_cfg, udp_cfg;
	struct mmp_tcp_run *tcp;
	struct mmp_udp_run *udp;
};

/* The run of each protocol cfg serves. Returns 0 or a negative errno after logging. */
int mmp_runs_open(const struct mmp_config *cfg, const struct mmp_policy *policy, struct mmp_runs *r);
/* The engines opened, as lib/privileges.h features. */
unsigned int mmp_runs_features(const struct mmp_runs *r);
/* Start the threads. Returns 0 or a negative errno. */
int mmp_runs_start(struct mmp_runs *r);
/* Once a second: the totals, for stats and --metrics, and the protocols' periodic work (steering, UDP routes). */
void mmp_runs_tick(struct mmp_runs *r);
/* Between ticks: the TCP and UDP totals published for stats (10 times a second). */
void mmp_runs_publish(struct mmp_runs *r);
/*
 * Close every TCP listener, in its own thread, after settle_ms in which they
 * still accept; wait (2 s at most) until they are closed. Returns how many
 * connections they accepted meanwhile.
 */
unsigned long mmp_runs_close_listeners(struct mmp_runs *r, unsigned int settle_ms);
/*
 * Serve what is held until it ends, --drain-timeout, or SIGINT/SIGTERM;
 * at least min_ms in any case.
 */
void mmp_runs_drain(struct mmp_runs *r, const struct mmp_config *cfg, const sigset_t *sigs, uint64_t min_ms);
/* Stop both; failed: the engines keep what the maps hold. */
void mmp_runs_close(struct mmp_runs *r, bool failed);

#endif
