/* SPDX-License-Identifier: GPL-2.0 */
/* UDP mode (-p udp). */
#ifndef MMP_UDP_H
#define MMP_UDP_H

#include <signal.h>
#include "lib/config.h"

struct mmp_policy;
struct mmp_port_steer;

/*
 * Run the UDP proxy until one of the signals in *sigs arrives (they are
 * blocked in every thread; wait for them with sigwait or a signalfd).
 * Returns 0 on a clean stop, or a negative errno after logging.
 */
/*
 * setup_done(arg, features) is called once set-up is done, before any
 * listener thread starts, with MMP_FEAT_UDP_FAST (policy/privileges.h) when the
 * kernel fast path is on; nonzero stops the run.
 */
int mmp_udp_run(const struct mmp_config *cfg, struct mmp_policy *policy, const struct mmp_port_steer *steer,
		const sigset_t *sigs, int (*setup_done)(void *arg, unsigned int features), void *arg);

#endif
