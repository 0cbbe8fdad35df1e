// SPDX-License-Identifier: GPL-2.0
/* Option values shared by loadgen and udpgen: see cli.h. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

int cli_num(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_watch_pid(const char *s, pid_t *watch, unsigned int *nwatch, unsigned int max)
{
	double v;

	if (*nwatch == max || cli_num(s, 1, 1 << 30, &v))
		return -EINVAL;
	watch[(*nwatch)++] = (pid_t)v;
	return 0;
}

unsigned int cli_default_threads(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus > 0 ? (unsigned int)cpus : 1;
}
