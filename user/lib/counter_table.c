// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include "lib/counter_table.h"

#define MMP_COUNTER_ENTRY(id, name, help) { name, help },

static const struct mmp_counter_name tcp[] = { MMP_TCP_COUNTERS(MMP_COUNTER_ENTRY) };
static const struct mmp_counter_name tc[] = { MMP_TC_COUNTERS(MMP_COUNTER_ENTRY) };
static const struct mmp_counter_name sockmap[] = { MMP_SOCKMAP_COUNTERS(MMP_COUNTER_ENTRY) };
static const struct mmp_counter_name udp[] = { MMP_UDP_COUNTERS(MMP_COUNTER_ENTRY) };
static const struct mmp_counter_name xdp[] = { MMP_XDP_COUNTERS(MMP_COUNTER_ENTRY) };

const struct mmp_family_desc mmp_families[MMP_FAM_MAX] = {
	[MMP_FAM_TCP] = { "tcp", MMP_TCP_CNT_MAX, tcp },
	[MMP_FAM_TC] = { "tc", MMP_TC_CNT_MAX, tc },
	[MMP_FAM_SOCKMAP] = { "sockmap", MMP_CNT_MAX, sockmap },
	[MMP_FAM_UDP] = { "udp", MMP_UDP_CNT_MAX, udp },
	[MMP_FAM_XDP] = { "xdp", MMP_XDP_CNT_MAX, xdp },
};

void mmp_counters_print(FILE *out, const char *title, enum mmp_family f, const uint64_t *values)
{
	const struct mmp_family_desc *d = &mmp_families[f];

	fprintf(out, "%s\n", title);
	for (unsigned int i = 0; i < d->n; i++) {
		/* Drops that never happened are noise. */
		if (!values[i] && !strncmp(d->c[i].name, "drop_", 5))
			continue;
		fprintf(out, "  %-22s %14llu  %s\n", d->c[i].name, (unsigned long long)values[i], d->c[i].help);
	}
}
