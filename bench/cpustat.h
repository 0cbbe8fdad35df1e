/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU time from /proc: one process (utime + stime of all its threads, from
 * /proc/PID/stat) and the whole system (/proc/stat, softirq included), and
 * the samples loadgen and udpgen take of both around their measurement.
 */
#ifndef MMPB_CPUSTAT_H
#define MMPB_CPUSTAT_H

#include <sys/types.h>

struct sys_cpu {
	double busy; /* user+nice+system+irq+softirq+steal, seconds */
	double softirq;
	double total; /* busy + idle + iowait */
};

/* Seconds of CPU used so far by process pid; negative when unreadable. */
double cpustat_proc(pid_t pid);
/* Seconds of CPU used by ourselves (all threads). */
double cpustat_self(void);
/* Returns 0, or -errno when /proc/stat is unreadable. */
int cpustat_system(struct sys_cpu *out);

/* Everything a load generator reports, read at one instant (start or end). */
struct cpu_sample {
	double watched; /* seconds, all watched processes together */
	struct sys_cpu sys;
	double self;
};

/* CPU seconds used between two samples, as the reports print them. */
struct cpu_used {
	double watched; /* -1 when no process is watched */
	double sys_busy;
	double sys_softirq;
	double sys_total;
	double self;
};

/* Reads the watched processes (unreadable ones count 0), the system and us. */
void cpustat_sample(const pid_t *watch, unsigned int nwatch, struct cpu_sample *s);
void cpustat_used(const struct cpu_sample *before, const struct cpu_sample *after,
		  unsigned int nwatch, struct cpu_used *used);

#endif
