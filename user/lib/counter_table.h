/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Printing a totals struct made from an X-macro list (include/mmp_tcp.h,
 * include/mmp_udp.h): one line per counter with its name and meaning, the
 * same layout for TCP and UDP. MMP_COUNTER_TABLE(LIST, name) defines
 * `name[]`, the names and descriptions in the struct's field order.
 */
#ifndef MMP_COUNTER_TABLE_H
#define MMP_COUNTER_TABLE_H

#include <stdio.h>
#include <stdint.h>

struct mmp_counter_name {
	const char *name;
	const char *desc;
};

/* Field order = list order: a __u64 per entry. */
void mmp_counters_print(FILE *out, const char *title, const struct mmp_counter_name *names, const uint64_t *values,
			int n);

#endif
