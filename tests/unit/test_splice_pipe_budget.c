// SPDX-License-Identifier: GPL-2.0
/*
 * The splice engine's pipe budget (user/engine/splice/splice_pipe_budget.c):
 * relay pipes grow to 256 KiB (1 MiB where the budget holds 128 of those)
 * while the grown ones hold under half of fs.pipe-user-pages-soft, and keep
 * the kernel's 64 KiB after. Without it, 128 grown pipes (64 flows) reached
 * the soft limit, and every flow after them copied through userspace
 * (docs/DESIGN.md §3d, "Pipe sizes").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <limits.h>
#include <cmocka.h>
#include "engine/splice/splice_pipe_budget.h"

#define PIPE_PAGES (MMP_SPLICE_PIPE_BYTES / mmp_pipe_page_size())
#define LARGE_PAGES (MMP_SPLICE_PIPE_BYTES_LARGE / mmp_pipe_page_size())

/* The default soft limit (16384 pages): 128 pipes grow to 256 KiB (half of it), then none does. */
static void test_half_the_soft_limit(void **state)
{
	struct mmp_pipe_budget b;
	long taken = 0;

	mmp_pipe_budget_init(&b, 16384, 0, LARGE_PAGES);
	assert_int_equal(b.limit, 8192);
	for (int i = 0; i < 8192 / PIPE_PAGES; i++) {
		assert_int_equal(mmp_pipe_budget_take(&b), PIPE_PAGES);
		taken += PIPE_PAGES;
	}
	assert_int_equal(atomic_load(&b.held), taken);
	assert_int_equal(mmp_pipe_budget_take(&b), 0);
	assert_int_equal(atomic_load(&b.held), taken);
}

/* A pipe given back makes room for the next one; one that never grew gives nothing back. */
static void test_give_back(void **state)
{
	struct mmp_pipe_budget b;

	mmp_pipe_budget_init(&b, 2 * (2 * PIPE_PAGES + 1), 0, -1); /* room for two 256 KiB pipes */
	assert_int_equal(mmp_pipe_budget_take(&b), PIPE_PAGES);
	assert_int_equal(mmp_pipe_budget_take(&b), PIPE_PAGES);
	assert_int_equal(mmp_pipe_budget_take(&b), 0);
	mmp_pipe_budget_give(&b, PIPE_PAGES);
	assert_int_equal(mmp_pipe_budget_take(&b), PIPE_PAGES);
	mmp_pipe_budget_give(&b, 0);
	assert_int_equal(atomic_load(&b.held), 2 * PIPE_PAGES);
}

/* fs.pipe-max-size below a size: an unprivileged pipe cannot grow that far, so the next size down, or none. */
static void test_pipe_max_size(void **state)
{
	struct mmp_pipe_budget b;

	mmp_pipe_budget_init(&b, 0, 0, LARGE_PAGES - 1);
	assert_int_equal(mmp_pipe_budget_take(&b), PIPE_PAGES);
	mmp_pipe_budget_init(&b, 16384, 0, PIPE_PAGES);
	assert_int_equal(mmp_pipe_budget_take(&b), PIPE_PAGES);
	mmp_pipe_budget_init(&b, 16384, 0, PIPE_PAGES - 1);
	assert_int_equal(mmp_pipe_budget_take(&b), 0);
	assert_int_equal(atomic_load(&b.held), 0);
}

/*
 * 1 MiB pipes only where the budget holds 128 of them: a soft limit raised
 * fourfold (65536 pages), or none. The default one holds 32, and 68 of 100
 * pipes at 64 KiB cost more than 32 of 1 MiB saved.
 */
static void test_large_pipes_where_they_fit(void **state)
{
	struct mmp_pipe_budget b;

	mmp_pipe_budget_init(&b, 16384, 0, LARGE_PAGES);
	assert_int_equal(b.pipe_pages, PIPE_PAGES);
	mmp_pipe_budget_init(&b, 65536 - 2, 0, LARGE_PAGES);
	assert_int_equal(b.pipe_pages, PIPE_PAGES);
	mmp_pipe_budget_init(&b, 65536, 0, LARGE_PAGES);
	assert_int_equal(b.pipe_pages, LARGE_PAGES);
	for (int i = 0; i < 128; i++)
		assert_int_equal(mmp_pipe_budget_take(&b), LARGE_PAGES);
	assert_int_equal(mmp_pipe_budget_take(&b), 0);
	mmp_pipe_budget_init(&b, 0, 0, LARGE_PAGES);
	assert_int_equal(mmp_pipe_budget_take(&b), LARGE_PAGES);
}

/* No soft limit: half the hard one; neither: no limit; unreadable: the kernel's default soft limit. */
static void test_which_limit(void **state)
{
	struct mmp_pipe_budget b;

	mmp_pipe_budget_init(&b, 0, 4096, -1);
	assert_int_equal(b.limit, 2048);
	assert_int_equal(mmp_pipe_budget_take(&b), PIPE_PAGES);
	mmp_pipe_budget_init(&b, 0, 0, -1);
	assert_int_equal(b.limit, LONG_MAX);
	for (int i = 0; i < 10000; i++)
		assert_int_equal(mmp_pipe_budget_take(&b), LARGE_PAGES);
	mmp_pipe_budget_init(&b, -1, -1, -1);
	assert_int_equal(b.limit, 8192);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_half_the_soft_limit),
		cmocka_unit_test(test_give_back),
		cmocka_unit_test(test_pipe_max_size),
		cmocka_unit_test(test_which_limit),
		cmocka_unit_test(test_large_pipes_where_they_fit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
