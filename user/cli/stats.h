/* SPDX-License-Identifier: GPL-2.0 */
/* `mmproxy-bpf stats`: counters and flows, read from the pinned maps. */
#ifndef MMP_STATS_H
#define MMP_STATS_H

/* Print what is pinned under pin_dir. Returns 0, or 1 when nothing is pinned there. */
int mmp_stats_command(const char *pin_dir);

#endif
