/* SPDX-License-Identifier: GPL-2.0 */
/* The steering program's tc filter: attach, detach, and find one left by a crash (docs/DESIGN.md §14). */
#ifndef MMP_STEER_ATTACH_H
#define MMP_STEER_ATTACH_H

#include <stdbool.h>
#include <linux/types.h>
#include "lib/instance.h"

/*
 * Attach prog_fd at ifindex's clsact ingress, at id's handle and priority.
 * A filter already there is replaced only when its program is a steering
 * program (a predecessor's, left by a crash); anything else is another
 * tool's or instance's: -EBUSY, logged. Returns 0 or -errno after logging.
 */
int mmp_steer_attach(int ifindex, struct mmp_tc_id id, int prog_fd);
/* Remove our filter (only if it still runs prog_id), and the clsact qdisc if it is left empty. */
void mmp_steer_detach(int ifindex, struct mmp_tc_id id, __u32 prog_id);

#endif
