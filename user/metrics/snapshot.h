/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One reading of every counter an instance keeps in its pinned maps
 * (docs/DESIGN.md §6), for `stats --json`, `stats --watch` and the metrics
 * endpoint: the maps are the only books, nothing is counted twice. Each
 * family's names and descriptions come from lib/counter_table.h.
 */
#ifndef MMP_SNAPSHOT_H
#define MMP_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "lib/counter_table.h"

/* Read as per-CPU __u64s by index whatever its layout: at most this many. */
#define MMP_SNAP_XDP_MAX 16

struct mmp_snapshot {
	bool has[MMP_FAM_MAX]; /* never set for MMP_FAM_XDP: xdp[] below */
	uint64_t v[MMP_FAM_MAX][64]; /* v[family][counter], in the X-macro's order */
	bool has_allow;
	uint64_t allow4, allow6; /* prefixes in mmp_allow4/6 */
	bool has_tc_flows;
	uint64_t tc_flows, tc_bytes[2], tc_packets[2]; /* flows in mmp_tc_flows; their traffic [0] up [1] down */
	bool has_sockmap_flows;
	uint64_t sockmap_flows, sockmap_bytes[2];
	bool has_udp_flows;
	uint64_t udp_flows; /* entries in mmp_udp_flows */
	unsigned int n_xdp; /* 0: no mmp_xdp_cnt pinned */
	uint64_t xdp[MMP_SNAP_XDP_MAX];
};

/* Fill s from the maps pinned under pin_dir. Returns 0, or -ENOENT when nothing is pinned there. */
int mmp_snapshot_read(const char *pin_dir, struct mmp_snapshot *s);
/* Only the counters (a lookup per map, no walk of the flow maps); the flow fields stay zero. Same returns. */
int mmp_snapshot_read_counters(const char *pin_dir, struct mmp_snapshot *s);
/* The flow maps' fields of src (flows, their bytes and packets) into dst. */
void mmp_snapshot_copy_flows(struct mmp_snapshot *dst, const struct mmp_snapshot *src);

#endif
