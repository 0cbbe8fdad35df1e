/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TCP mode's run (-p tcp, and the TCP half of -p tcp,udp): the engines, the
 * published counters and one listener thread per --listeners. cli/run.c opens
 * it, drops privileges, starts it, ticks it once a second and closes it; the
 * UDP half (udp/udp.h) has the same five steps, so both run in one process.
 */
#ifndef MMP_TCP_RUN_H
#define MMP_TCP_RUN_H

#include <stdbool.h>
#include "lib/config.h"

struct mmp_policy;
struct mmp_tcp_run;

/* Everything but the threads. Returns 0 or a negative errno after logging (*out is then NULL). */
int mmp_tcp_run_open(const struct mmp_config *cfg, const struct mmp_policy *policy, struct mmp_tcp_run **out);
/* The tc and sockmap engines opened, as lib/privileges.h features. */
unsigned int mmp_tcp_run_features(const struct mmp_tcp_run *r);
/* Start the listener threads and log the start-up line. Returns 0 or a negative errno. */
int mmp_tcp_run_start(struct mmp_tcp_run *r);
/* Once a second: the totals to mmp_tcp_cnt, for stats and --metrics. */
void mmp_tcp_run_tick(struct mmp_tcp_run *r);
/* Taken over (docs/DESIGN.md §15): every thread closes its listeners and goes on serving its connections. */
void mmp_tcp_run_drain(struct mmp_tcp_run *r);
/* Whether every thread has closed its listeners since mmp_tcp_run_drain. */
bool mmp_tcp_run_listeners_closed(struct mmp_tcp_run *r);
/* Connections held in userspace, every state. */
unsigned long mmp_tcp_run_active(const struct mmp_tcp_run *r);
/* Connections accepted since the start. */
unsigned long mmp_tcp_run_accepted(const struct mmp_tcp_run *r);
/*
 * Stop the threads, log the totals and free everything; failed: the run is
 * ending on an error, so the engines keep what the maps hold. NULL is fine.
 */
void mmp_tcp_run_close(struct mmp_tcp_run *r, bool failed);

#endif
