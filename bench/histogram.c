// SPDX-License-Identifier: GPL-2.0
/* Log-linear histogram: see histogram.h for the bucket layout. */
#include <math.h>
#include <string.h>

#include "histogram.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/*
 * Bucket of v. Below HIST_SUB_COUNT the index is v itself. Above it, with
 * k = floor(log2(v)) and the top HIST_SUB_BITS + 1 bits of v as mantissa m
 * (HIST_SUB_COUNT <= m < 2 * HIST_SUB_COUNT), the index is
 * (k - HIST_SUB_BITS + 1) * HIST_SUB_COUNT + (m - HIST_SUB_COUNT).
 * Both formulas agree at v = HIST_SUB_COUNT, so the layout is continuous.
 */
unsigned int hist_index(uint64_t v)
{
	unsigned int k, shift;

	if (v < HIST_SUB_COUNT)
		return (unsigned int)v;
	k = 63 - (unsigned int)__builtin_clzll(v);
	shift = k - HIST_SUB_BITS;
	return (shift + 1) * HIST_SUB_COUNT + (unsigned int)((v >> shift) - HIST_SUB_COUNT);
}

uint64_t hist_bucket_low(unsigned int idx)
{
	unsigned int group = idx / HIST_SUB_COUNT;
	uint64_t m = idx % HIST_SUB_COUNT;

	if (group == 0)
		return m;
	return (m + HIST_SUB_COUNT) << (group - 1);
}

uint64_t hist_bucket_high(unsigned int idx)
{
	unsigned int group = idx / HIST_SUB_COUNT;

	if (group == 0)
		return idx;
	return hist_bucket_low(idx) + ((1ull << (group - 1)) - 1);
}

void hist_record(struct hist *h, uint64_t v)
{
	h->buckets[hist_index(v)]++;
	h->count++;
	h->sum = (h->sum + v < h->sum) ? UINT64_MAX : h->sum + v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	if (!src->count)
		return;
	for (i = 0; i < HIST_BUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum = (dst->sum + src->sum < dst->sum) ? UINT64_MAX : dst->sum + src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0, low, high, v;
	unsigned int i;
	double x;

	if (!h->count)
		return 0;
	if (p <= 0)
		return h->min;
	if (p >= 100)
		return h->max;
	/* The epsilon keeps 99% of 1000 at rank 990 despite binary rounding. */
	x = p * (double)h->count / 100.0;
	rank = (uint64_t)ceil(x - x * 1e-12);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_BUCKETS)
		return h->max;
	low = hist_bucket_low(i);
	high = hist_bucket_high(i);
	v = low + (high - low) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
