// SPDX-License-Identifier: GPL-2.0
/* cmocka tests for the splice engine's spare pipes (user/engine/splice/pipe_pool.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>
#include "engine/splice/pipe_pool.h"

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_empty_pipe_is_reused(void **state)
{
	static struct mmp_pipe_pool pool;
	struct mmp_pipe a, b;

	assert_int_equal(mmp_pipe_get(&pool, &a), 0);
	assert_true(a.cap >= 4096);
	int rd = a.rd, wr = a.wr;

	mmp_pipe_put(&pool, &a, true);
	assert_int_equal(a.rd, -1);
	assert_int_equal(pool.n, 1);
	assert_int_equal(mmp_pipe_get(&pool, &b), 0);
	assert_int_equal(b.rd, rd); /* the same pipe, no pipe2 */
	assert_int_equal(b.wr, wr);
	mmp_pipe_put(NULL, &b, true); /* no pool: closed */
	assert_false(is_open(rd));
	assert_false(is_open(wr));
}

/* Regression guard: bytes left in a pipe must never reach the next connection. */
static void test_pipe_with_bytes_is_closed(void **state)
{
	static struct mmp_pipe_pool pool;
	struct mmp_pipe a;

	assert_int_equal(mmp_pipe_get(&pool, &a), 0);
	int rd = a.rd;

	assert_int_equal(write(a.wr, "x", 1), 1);
	mmp_pipe_put(&pool, &a, false);
	assert_int_equal(pool.n, 0);
	assert_false(is_open(rd));
}

static void test_full_pool_closes_and_drain_closes_all(void **state)
{
	static struct mmp_pipe_pool pool;
	struct mmp_pipe p[MMP_PIPE_POOL_MAX + 1];

	for (int i = 0; i <= MMP_PIPE_POOL_MAX; i++)
		assert_int_equal(mmp_pipe_get(NULL, &p[i]), 0);
	int last_rd = p[MMP_PIPE_POOL_MAX].rd, first_rd = p[0].rd;

	for (int i = 0; i <= MMP_PIPE_POOL_MAX; i++)
		mmp_pipe_put(&pool, &p[i], true);
	assert_int_equal(pool.n, MMP_PIPE_POOL_MAX);
	assert_false(is_open(last_rd)); /* no room: closed */
	assert_true(is_open(first_rd));
	mmp_pipe_pool_drain(&pool);
	assert_int_equal(pool.n, 0);
	assert_false(is_open(first_rd));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_pipe_is_reused),
		cmocka_unit_test(test_pipe_with_bytes_is_closed),
		cmocka_unit_test(test_full_pool_closes_and_drain_closes_all),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
