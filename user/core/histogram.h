/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small latency histogram with fixed buckets and atomic counts, cheap to
 * record from any thread and read by the metrics endpoint (Prometheus
 * cumulative buckets are computed on read). Durations are in microseconds.
 */
#ifndef MMP_HISTOGRAM_H
#define MMP_HISTOGRAM_H

#include <stdatomic.h>
#include <stdint.h>

/* Upper bounds in microseconds; one more bucket (+Inf) after the last. */
#define MMP_HIST_BOUNDS_US { 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000 }
#define MMP_HIST_NBOUNDS 12

struct mmp_histogram {
	atomic_ulong bucket[MMP_HIST_NBOUNDS + 1]; /* not cumulative: each duration counts once */
	atomic_ulong count;
	atomic_ulong sum_us;
};

extern const uint64_t mmp_hist_bounds_us[MMP_HIST_NBOUNDS];

/* The tc engine's hand-off durations (HOLD to SPLICE), recorded where the switch completes. */
extern struct mmp_histogram mmp_handoff_latency;

void mmp_hist_record(struct mmp_histogram *h, uint64_t us);

/* A consistent-enough copy: cumulative[i] counts durations <= bound i, cumulative[NBOUNDS] all. */
struct mmp_hist_snapshot {
	uint64_t cumulative[MMP_HIST_NBOUNDS + 1];
	uint64_t count, sum_us;
};
void mmp_hist_read(struct mmp_histogram *h, struct mmp_hist_snapshot *out);

#endif
