// SPDX-License-Identifier: GPL-2.0
#include "core/histogram.h"

const uint64_t mmp_hist_bounds_us[MMP_HIST_NBOUNDS] = MMP_HIST_BOUNDS_US;
struct mmp_histogram mmp_handoff_latency;

void mmp_hist_record(struct mmp_histogram *h, uint64_t us)
{
	int i = 0;

	while (i < MMP_HIST_NBOUNDS && us > mmp_hist_bounds_us[i])
		i++;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

void mmp_hist_read(struct mmp_histogram *h, struct mmp_hist_snapshot *out)
{
	uint64_t run = 0;

	for (int i = 0; i <= MMP_HIST_NBOUNDS; i++) {
		run += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
		out->cumulative[i] = run;
	}
	/* +Inf must equal _count: take the count from the buckets, not the racing counter. */
	out->count = run;
	out->sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
}
