/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log-linear histogram of unsigned 64-bit values (latencies in ns).
 *
 * Values below 2^HIST_SUB_BITS are counted exactly. Above that, every
 * power-of-two range [2^k, 2^(k+1)) is split into 2^HIST_SUB_BITS equal
 * buckets, so a reported value is within 1/2^HIST_SUB_BITS (0.8%) of the
 * recorded one. No per-sample storage: recording is one increment.
 */
#ifndef MMPB_HISTOGRAM_H
#define MMPB_HISTOGRAM_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB_COUNT (1u << HIST_SUB_BITS)
/* Groups 0 (exact) .. 64 - HIST_SUB_BITS: covers every uint64_t. */
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) * HIST_SUB_COUNT)

struct hist {
	uint64_t count;
	uint64_t sum; /* saturates instead of wrapping */
	uint64_t min;
	uint64_t max;
	uint64_t buckets[HIST_BUCKETS];
};

void hist_init(struct hist *h);
void hist_record(struct hist *h, uint64_t v);
/* Adds every sample of src to dst. */
void hist_merge(struct hist *dst, const struct hist *src);

/*
 * The value below which p percent of the samples lie (p in [0, 100]):
 * the midpoint of the bucket holding the sample of rank ceil(p/100 * count),
 * clamped to [min, max]. p <= 0 gives min, p >= 100 gives max.
 * Returns 0 for an empty histogram.
 */
uint64_t hist_percentile(const struct hist *h, double p);
double hist_mean(const struct hist *h);

/* Bucket arithmetic, exposed for the unit test. */
unsigned int hist_index(uint64_t v);
uint64_t hist_bucket_low(unsigned int idx);
uint64_t hist_bucket_high(unsigned int idx);

#endif
