/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sk_lookup program of a port range (bpf/sk_lookup.bpf.c, docs/DESIGN.md
 * §8): loaded with the listen address and ports, its SOCKMAP mmp_sk_listeners
 * and its link pinned in the instance's pin directory, attached to this
 * network namespace. Each listener thread's socket goes into the map.
 */
#ifndef MMP_SK_LOOKUP_H
#define MMP_SK_LOOKUP_H

#include "lib/config.h"

struct mmp_sk_lookup;

/* Returns 0, or a negative errno after a debug line (the caller falls back and says so). */
int mmp_sk_lookup_open(const struct mmp_config *cfg, struct mmp_sk_lookup **out);
/* Listener thread id's socket: steered to from now on. Returns 0 or a negative errno after logging. */
int mmp_sk_lookup_add(struct mmp_sk_lookup *s, int id, int fd);
/* Detach, unpin and free; NULL is fine. */
void mmp_sk_lookup_close(struct mmp_sk_lookup *s);

#endif
