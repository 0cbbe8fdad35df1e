/* SPDX-License-Identifier: GPL-2.0 */
/* `mmproxy-bpf stats`: counters and flows, read from the pinned maps. */
#ifndef MMP_STATS_H
#define MMP_STATS_H

#include "lib/config.h"

/* `stats`: of --pin-dir (or -p/-l), of the only instance found, or with --all of each. Returns 0 or 1. */
int mmp_stats_cli(const struct mmp_config *cfg);

#endif
