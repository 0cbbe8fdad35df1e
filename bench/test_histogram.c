// SPDX-License-Identifier: GPL-2.0
/* Unit test: the histogram's buckets and percentiles against known data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "histogram.h"

#define __maybe_unused __attribute__((unused))

/* |got - want| <= want / 2^HIST_SUB_BITS, the documented precision. */
static void assert_close(uint64_t got, uint64_t want)
{
	uint64_t tol = want >> HIST_SUB_BITS;
	uint64_t diff = got > want ? got - want : want - got;

	if (diff > tol)
		fail_msg("got %llu, want %llu +- %llu", (unsigned long long)got,
			 (unsigned long long)want, (unsigned long long)tol);
}

static struct hist *new_hist(void)
{
	struct hist *h = malloc(sizeof(*h));

	assert_non_null(h);
	hist_init(h);
	return h;
}

static void test_empty(void **state __maybe_unused)
{
	struct hist *h = new_hist();

	assert_int_equal(hist_percentile(h, 50), 0);
	assert_int_equal(hist_percentile(h, 99.9), 0);
	assert_true(hist_mean(h) == 0.0);
	free(h);
}

/* Every value maps to a bucket whose bounds contain it, in order. */
static void test_bucket_bounds(void **state __maybe_unused)
{
	uint64_t probes[] = { 0, 1, 127, 128, 129, 255, 256, 1000, 65535, 65536,
			      1000000007ull, 1ull << 40, (1ull << 63) - 1, 1ull << 63,
			      UINT64_MAX };
	unsigned int i, idx, prev = 0;

	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		idx = hist_index(probes[i]);
		assert_true(idx < HIST_BUCKETS);
		assert_true(hist_bucket_low(idx) <= probes[i]);
		assert_true(hist_bucket_high(idx) >= probes[i]);
		assert_true(idx >= prev);
		prev = idx;
	}
	assert_int_equal(hist_index(UINT64_MAX), HIST_BUCKETS - 1);
	/* Adjacent buckets tile the number line without gaps. */
	for (idx = 1; idx < HIST_BUCKETS; idx++)
		assert_true(hist_bucket_low(idx) == hist_bucket_high(idx - 1) + 1);
}

/* Values below 2^HIST_SUB_BITS are exact. */
static void test_small_values_exact(void **state __maybe_unused)
{
	struct hist *h = new_hist();
	uint64_t v;

	for (v = 1; v <= 100; v++)
		hist_record(h, v);
	assert_int_equal(hist_percentile(h, 50), 50);
	assert_int_equal(hist_percentile(h, 99), 99);
	assert_int_equal(hist_percentile(h, 99.9), 100);
	assert_int_equal(hist_percentile(h, 1), 1);
	assert_int_equal(hist_percentile(h, 0), 1);
	assert_int_equal(hist_percentile(h, 100), 100);
	assert_true(hist_mean(h) == 50.5);
	free(h);
}

/* 1..1,000,000 uniformly: percentile p is p% of a million, within 0.8%. */
static void test_uniform_million(void **state __maybe_unused)
{
	struct hist *h = new_hist();
	uint64_t v;

	for (v = 1; v <= 1000000; v++)
		hist_record(h, v);
	assert_int_equal(h->count, 1000000);
	assert_close(hist_percentile(h, 50), 500000);
	assert_close(hist_percentile(h, 90), 900000);
	assert_close(hist_percentile(h, 99), 990000);
	assert_close(hist_percentile(h, 99.9), 999000);
	assert_int_equal(hist_percentile(h, 100), 1000000);
	assert_true(hist_mean(h) == 500000.5);
	free(h);
}

/* A constant is reported exactly, thanks to the clamp to [min, max]. */
static void test_constant(void **state __maybe_unused)
{
	struct hist *h = new_hist();
	int i;

	for (i = 0; i < 1000; i++)
		hist_record(h, 123456789);
	assert_int_equal(hist_percentile(h, 50), 123456789);
	assert_int_equal(hist_percentile(h, 99.9), 123456789);
	free(h);
}

/* A tail: 990 fast samples and 10 slow ones. p99 is fast, p99.9 slow. */
static void test_tail(void **state __maybe_unused)
{
	struct hist *h = new_hist();
	int i;

	for (i = 0; i < 990; i++)
		hist_record(h, 50000);
	for (i = 0; i < 10; i++)
		hist_record(h, 20000000);
	assert_close(hist_percentile(h, 50), 50000);
	assert_close(hist_percentile(h, 99), 50000);
	assert_close(hist_percentile(h, 99.1), 20000000);
	assert_close(hist_percentile(h, 99.9), 20000000);
	assert_int_equal(h->max, 20000000);
	assert_int_equal(h->min, 50000);
	free(h);
}

/* Merging two halves equals recording everything in one. */
static void test_merge(void **state __maybe_unused)
{
	struct hist *a = new_hist(), *b = new_hist(), *all = new_hist();
	uint64_t v;

	for (v = 1; v <= 200000; v++) {
		hist_record(v % 2 ? a : b, v * 37);
		hist_record(all, v * 37);
	}
	hist_merge(a, b);
	assert_int_equal(a->count, all->count);
	assert_int_equal(a->sum, all->sum);
	assert_int_equal(a->min, all->min);
	assert_int_equal(a->max, all->max);
	assert_int_equal(hist_percentile(a, 50), hist_percentile(all, 50));
	assert_int_equal(hist_percentile(a, 99.9), hist_percentile(all, 99.9));
	assert_close(hist_percentile(a, 50), 100000 * 37);
	free(a);
	free(b);
	free(all);
}

/* Huge values neither crash nor wrap the sum. */
static void test_saturation(void **state __maybe_unused)
{
	struct hist *h = new_hist();

	hist_record(h, UINT64_MAX);
	hist_record(h, UINT64_MAX);
	assert_int_equal(h->sum, UINT64_MAX);
	assert_int_equal(hist_percentile(h, 50), UINT64_MAX);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bucket_bounds),
		cmocka_unit_test(test_small_values_exact),
		cmocka_unit_test(test_uniform_million),
		cmocka_unit_test(test_constant),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_saturation),
	};

	return cmocka_run_group_tests_name("histogram", tests, NULL, NULL);
}
