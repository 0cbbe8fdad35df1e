/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tc engine: after the hand-off, the proxy's two sockets are frozen with
 * TCP_REPAIR and closed silently; bpf/tc.bpf.c rewrites every packet of one
 * connection into the other. It takes flows over from the splice engine
 * (MMP_ENGINE_F_TAKES_OVER); docs/DESIGN.md, "The tc hand-off", has the
 * sequence. What the rest of the program may call besides its operations:
 */
#ifndef MMP_TC_ENGINE_H
#define MMP_TC_ENGINE_H

#include <stdint.h>
#include "engine/engine.h"
#include "mmp_tc.h"

extern const struct mmp_engine_ops mmp_tc_ops;

/* Our TC filters' priority for a pin directory (0x4d4d for the default one). */
uint32_t mmp_tc_priority(const char *pin_dir);
/* `cleanup`: remove our TC filters of priority prio from every interface of this netns. Returns how many. */
int mmp_tc_detach_everywhere(uint32_t prio);
/* r = t with source and destination swapped. */
void mmp_tc_reverse_tuple(struct mmp_tc_tuple *r, const struct mmp_tc_tuple *t);

#endif
