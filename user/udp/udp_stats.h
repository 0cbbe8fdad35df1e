/* SPDX-License-Identifier: GPL-2.0 */
/* `mmproxy-bpf stats` for UDP mode. */
#ifndef MMP_UDP_STATS_H
#define MMP_UDP_STATS_H

/*
 * Print UDP mode's totals and flows from the maps pinned under pin_dir
 * (mmp_udp_cnt, mmp_udp_flows). Prints nothing when they are not there
 * (not a UDP instance).
 */
void mmp_udp_stats_print(const char *pin_dir);

#endif
