/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The clsact qdisc our TC filters hang on. libbpf creates it on attach but
 * only removes it whole (with every other tool's filters), so on detach we
 * remove it ourselves, and only once no filter at all is left on it.
 */
#ifndef MMP_CLSACT_H
#define MMP_CLSACT_H

#include <stdbool.h>
#include <linux/types.h>

/*
 * After our filters were detached: remove ifindex's clsact qdisc if nothing
 * else is attached to it. Returns 1 when removed, 0 when it stays (other
 * filters, or no qdisc), or -errno.
 */
int mmp_clsact_remove_if_empty(int ifindex);

/*
 * Is the filter at handle/prio on ifindex's hook someone else's? Ours are
 * told apart by a map their program uses (map_fd). Returns 1 when a filter
 * is there and its program does not use that map, 0 when there is none or
 * it does, or -errno.
 */
int mmp_clsact_filter_foreign(int ifindex, bool egress, __u32 handle, __u32 prio, int map_fd);

#endif
