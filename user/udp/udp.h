/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UDP mode's run (-p udp, and the UDP half of -p tcp,udp): the same five
 * steps as TCP's (tcp/tcp_run.h), so that cli/run.c runs either or both.
 */
#ifndef MMP_UDP_H
#define MMP_UDP_H

#include "lib/config.h"

struct mmp_policy;
struct mmp_udp_run;

/*
 * Everything but the threads: the flow tables, the port steering, the fast
 * path (--engine auto and tc) and the listeners' sockets. Returns 0 or a
 * negative errno after logging (*out is then NULL).
 */
int mmp_udp_run_open(const struct mmp_config *cfg, const struct mmp_policy *policy, struct mmp_udp_run **out);
/* MMP_FEAT_UDP_FAST (lib/privileges.h) when the kernel fast path is on. */
unsigned int mmp_udp_run_features(const struct mmp_udp_run *r);
/* Start the listener threads and log the start-up line. Returns 0 or a negative errno. */
int mmp_udp_run_start(struct mmp_udp_run *r);
/* Once a second: the totals to mmp_udp_cnt (as mmp_udp_run_publish), then the fast path's routes followed. */
void mmp_udp_run_tick(struct mmp_udp_run *r);
/* The totals into mmp_udp_cnt, for stats: between ticks, every 100 ms. */
void mmp_udp_run_publish(struct mmp_udp_run *r);
/* Stop the threads, close every flow, log the totals, remove the pins. NULL is fine. */
void mmp_udp_run_close(struct mmp_udp_run *r);

#endif
