/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TCP mode's totals (the list is in include/mmp_tcp.h): atomics that every
 * loop adds to, published once a second to the pinned map mmp_tcp_cnt for
 * `stats`, and logged at exit.
 */
#ifndef MMP_COUNTERS_H
#define MMP_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>
#include <linux/types.h>
#include "mmp_tcp.h"

struct counters_bpf;

struct mmp_counters {
	atomic_ulong v[MMP_TCP_CNT_MAX];
	struct counters_bpf *skel; /* NULL: not published */
	char pin_dir[256];
};

static inline void mmp_count(struct mmp_counters *c, enum mmp_tcp_counter id, long n)
{
	atomic_fetch_add_explicit(&c->v[id], (unsigned long)n, memory_order_relaxed);
}

static inline unsigned long mmp_counter(const struct mmp_counters *c, enum mmp_tcp_counter id)
{
	return atomic_load_explicit(&c->v[id], memory_order_relaxed);
}

/* Create and pin mmp_tcp_cnt under pin_dir. Returns 0 or a negative errno after logging. */
int mmp_counters_publish_open(struct mmp_counters *c, const char *pin_dir);
/* Write the current totals to the pinned map (no-op when not published). */
void mmp_counters_publish(struct mmp_counters *c);
/* Unpin and free the map. */
void mmp_counters_publish_close(struct mmp_counters *c);
/* One "totals: accepted N, ..." line at -v 1. */
void mmp_counters_log(const struct mmp_counters *c);

#endif
