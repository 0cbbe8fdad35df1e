/* SPDX-License-Identifier: GPL-2.0 */
/* `stats --json` and `stats --watch`, both from one struct mmp_snapshot (metrics/snapshot.h). */
#ifndef MMP_STATS_JSON_H
#define MMP_STATS_JSON_H

#include <stdio.h>
#include "metrics/snapshot.h"

/*
 * One JSON object, keys documented in docs/METRICS.md; a family
 * the instance does not have (UDP totals in TCP mode, tc without the tc
 * engine) is null, so every key is always present.
 */
void mmp_stats_json_write(FILE *out, const char *pin_dir, const struct mmp_snapshot *s);

/* stats --json: read the pins, write the object to stdout. Returns an exit status. */
int mmp_stats_json_command(const char *pin_dir);

/* Until SIGINT: every second, each counter with its per-second rate. Returns an exit status. */
int mmp_stats_watch(const char *pin_dir);

#endif
