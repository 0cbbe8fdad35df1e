/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tc engine: after the hand-off, the proxy's two sockets are frozen with
 * TCP_REPAIR and closed silently; bpf/tc.bpf.c rewrites every packet of one
 * connection into the other. It takes flows over from the splice engine
 * (MMP_ENGINE_F_TAKES_OVER); docs/DESIGN.md §3b has the
 * sequence. What the rest of the program may call besides its operations:
 */
#ifndef MMP_TC_ENGINE_H
#define MMP_TC_ENGINE_H

#include <stdint.h>
#include "engine/engine.h"
#include "lib/instance.h"
#include "mmp_tc.h"

extern const struct mmp_engine_ops mmp_tc_ops;

/* `cleanup`: remove the TC filters with identity id (lib/instance.h) from every interface of this netns. Returns how many. */
int mmp_tc_detach_everywhere(struct mmp_tc_id id);
/* r = t with source and destination swapped. */
void mmp_tc_reverse_tuple(struct mmp_tc_tuple *r, const struct mmp_tc_tuple *t);

#endif
