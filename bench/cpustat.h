/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU time from /proc: one process (utime + stime of all its threads, from
 * /proc/PID/stat) and the whole system (/proc/stat, softirq included).
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

#endif
