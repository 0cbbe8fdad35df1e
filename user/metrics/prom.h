/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Prometheus text exposition (format 0.0.4) of one snapshot: every
 * counter family generated from its X-macro list (mmproxy_<family>_<name>),
 * plus the labelled series docs/METRICS.md lists (connections, refusals by reason,
 * hand-offs by outcome, bytes per engine, UDP datagrams by path, drops by
 * reason, XDP verdicts, reloads, the hand-off latency histogram).
 */
#ifndef MMP_PROM_H
#define MMP_PROM_H

#include <stdio.h>
#include "core/histogram.h"
#include "metrics/snapshot.h"

struct mmp_prom_extra {
	uint64_t reloads_ok, reloads_failed;
	const struct mmp_hist_snapshot *handoff; /* NULL: no histogram */
};

void mmp_prom_write(FILE *out, const struct mmp_snapshot *s, const struct mmp_prom_extra *x);

#endif
