/* SPDX-License-Identifier: GPL-2.0 */
/* `mmproxy-bpf cleanup`: remove every filter and pin a stopped or crashed instance left. */
#ifndef MMP_CLEANUP_H
#define MMP_CLEANUP_H

/* Returns 0, or 1 when an instance still runs on pin_dir (nothing is touched then). */
int mmp_cleanup_command(const char *pin_dir);

#endif
