/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `run --takeover` (docs/DESIGN.md §15): find the process that serves this
 * instance now, check that it runs with the same flags, and tell it, once
 * our listeners are live, to close its own and drain (SIGUSR2).
 */
#ifndef MMP_TAKEOVER_H
#define MMP_TAKEOVER_H

#include "lib/config.h"

/* The predecessor's pid, or -errno after one line naming the cause and the fix. */
int mmp_takeover_find(const struct mmp_config *cfg, int argc, char **argv);

/* Tell pid to hand over. Returns 0 or -errno after one log line. */
int mmp_takeover_signal(int pid);

#endif
