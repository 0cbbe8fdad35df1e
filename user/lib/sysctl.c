// SPDX-License-Identifier: GPL-2.0
/* Reading a sysctl from /proc/sys (lib/sysctl.h). */
#include <stdio.h>
#include "lib/sysctl.h"

long mmp_sysctl_read(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}
