/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one table of counter names (docs/DESIGN.md §6). Every counter family
 * is an X-macro list X(id, name, help) in include/ (mmp_tcp.h, mmp_tc.h,
 * mmp_maps.h, mmp_udp.h, mmp_xdp.h): id makes the enum and, for the struct
 * families, the BTF field; name is what `stats`, `stats --json`, the exit
 * log and the metrics print; help is the description. This table is built
 * from those lists once, and every printer reads it: a counter added to its
 * list shows up everywhere.
 */
#ifndef MMP_COUNTER_TABLE_H
#define MMP_COUNTER_TABLE_H

#include <stdio.h>
#include <stdint.h>
#include <linux/types.h>
#include "mmp_maps.h"
#include "mmp_tc.h"
#include "mmp_tcp.h"
#include "mmp_udp.h"
#include "mmp_xdp.h"

enum mmp_family {
	MMP_FAM_TCP, /* mmp_tcp_cnt, TCP mode's totals */
	MMP_FAM_TC, /* mmp_tc_counters */
	MMP_FAM_SOCKMAP, /* mmp_cnt */
	MMP_FAM_UDP, /* mmp_udp_cnt, UDP mode's totals */
	MMP_FAM_XDP, /* mmp_xdp_cnt, the XDP gate's verdicts */
	MMP_FAM_MAX,
};

struct mmp_counter_name {
	const char *name;
	const char *help;
};

struct mmp_family_desc {
	const char *key; /* "tcp", "tc", ...: JSON object and metric name prefix */
	unsigned int n;
	const struct mmp_counter_name *c; /* n entries, in the list's (and the enum's) order */
};

extern const struct mmp_family_desc mmp_families[MMP_FAM_MAX];

static inline const char *mmp_counter_name(enum mmp_family f, unsigned int i)
{
	return mmp_families[f].c[i].name;
}

static inline const char *mmp_counter_help(enum mmp_family f, unsigned int i)
{
	return mmp_families[f].c[i].help;
}

/*
 * One line per counter of family f with its name and meaning (values in the
 * list's order); drop_* counters still at 0 are left out.
 */
void mmp_counters_print(FILE *out, const char *title, enum mmp_family f, const uint64_t *values);

#endif
