// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include "lib/counter_table.h"

void mmp_counters_print(FILE *out, const char *title, const struct mmp_counter_name *names, const uint64_t *values,
			int n)
{
	fprintf(out, "%s\n", title);
	for (int i = 0; i < n; i++) {
		/* Drops that never happened are noise. */
		if (!values[i] && !strncmp(names[i].name, "drop_", 5))
			continue;
		fprintf(out, "  %-22s %14llu  %s\n", names[i].name, (unsigned long long)values[i], names[i].desc);
	}
}
