// SPDX-License-Identifier: GPL-2.0
/* CPU accounting from /proc: see cpustat.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cpustat.h"

static double ticks_per_s(void)
{
	static long hz;

	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	return hz > 0 ? (double)hz : 100.0;
}

double cpustat_proc(pid_t pid)
{
	char path[64], line[1024], *p;
	unsigned long long utime, stime;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	if (!p)
		return -1;
	/* The command name may hold spaces and parentheses: skip to the last ')'. */
	p = strrchr(line, ')');
	if (!p)
		return -1;
	/* Fields after ')' start at 3 (state); utime is 14, stime 15. */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		   &utime, &stime) != 2)
		return -1;
	return (double)(utime + stime) / ticks_per_s();
}

double cpustat_self(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int cpustat_system(struct sys_cpu *out)
{
	unsigned long long v[8] = { 0 };
	char line[512];
	FILE *f;
	int n;

	f = fopen("/proc/stat", "r");
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	/* cpu user nice system idle iowait irq softirq steal */
	n = sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]);
	if (n < 7)
		return -EIO;
	out->busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / ticks_per_s();
	out->softirq = (double)v[6] / ticks_per_s();
	out->total = out->busy + (double)(v[3] + v[4]) / ticks_per_s();
	return 0;
}

void cpustat_sample(const pid_t *watch, unsigned int nwatch, struct cpu_sample *s)
{
	unsigned int i;
	double v;

	s->watched = 0;
	for (i = 0; i < nwatch; i++) {
		v = cpustat_proc(watch[i]);
		if (v >= 0)
			s->watched += v;
	}
	if (cpustat_system(&s->sys))
		memset(&s->sys, 0, sizeof(s->sys));
	s->self = cpustat_self();
}

void cpustat_used(const struct cpu_sample *before, const struct cpu_sample *after,
		  unsigned int nwatch, struct cpu_used *used)
{
	used->watched = nwatch ? after->watched - before->watched : -1;
	used->sys_busy = after->sys.busy - before->sys.busy;
	used->sys_softirq = after->sys.softirq - before->sys.softirq;
	used->sys_total = after->sys.total - before->sys.total;
	used->self = after->self - before->self;
}
