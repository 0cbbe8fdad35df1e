/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One reading of every counter an instance keeps in its pinned maps
 * (docs/DESIGN.md §6), for `stats --json`, `stats --watch` and the metrics
 * endpoint: the maps are the only books, nothing is counted twice. Each
 * family's names and descriptions come from its X-macro list
 * (include/mmp_tcp.h, mmp_tc.h, mmp_maps.h, mmp_udp.h).
 */
#ifndef MMP_SNAPSHOT_H
#define MMP_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "mmp_maps.h"
#include "mmp_tc.h"
#include "mmp_tcp.h"
#include "mmp_udp.h"

/* Read by name if another part of the project pins it: per-CPU array of __u64, one per verdict. */
#define MMP_XDP_COUNTERS_MAP "mmp_xdp_cnt"
#define MMP_SNAP_XDP_MAX 16

enum mmp_family {
	MMP_FAM_TCP, /* mmp_tcp_cnt, TCP mode's totals */
	MMP_FAM_TC, /* mmp_tc_counters */
	MMP_FAM_SOCKMAP, /* mmp_cnt */
	MMP_FAM_UDP, /* mmp_udp_cnt, UDP mode's totals */
	MMP_FAM_MAX,
};

struct mmp_family_desc {
	const char *key; /* "tcp", "tc", ...: JSON object and metric name prefix */
	unsigned int n;
	const char *const *names;
	const char *const *descs;
};

extern const struct mmp_family_desc mmp_families[MMP_FAM_MAX];

struct mmp_snapshot {
	bool has[MMP_FAM_MAX];
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
