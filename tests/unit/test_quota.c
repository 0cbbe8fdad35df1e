// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the per-address quota table (user/lib/quota.c): the limit
 * per address, IPv4-mapped IPv6 counted as IPv4, growth past the first table,
 * and removal that keeps every other address findable (backward shift), checked
 * against a plain array model with thousands of random operations.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "lib/quota.h"

static struct sockaddr_storage v4(uint32_t host_order)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(host_order);
	return ss;
}

static struct sockaddr_storage v6(const char *ip)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	sin6->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
	return ss;
}

#define SA(x) ((const struct sockaddr *)&(x))

static void test_limit_per_address(void **state)
{
	struct mmp_quota *q;
	struct sockaddr_storage a = v4(0xc6336402), b = v4(0xc6336403);

	(void)state;
	assert_int_equal(mmp_quota_open(3, 1, &q), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mmp_quota_take(q, SA(a)), 0);
	assert_int_equal(mmp_quota_take(q, SA(a)), -EDQUOT);
	/* Another address is not affected. */
	assert_int_equal(mmp_quota_take(q, SA(b)), 0);
	assert_int_equal(mmp_quota_held(q, SA(a)), 3);
	mmp_quota_give(q, SA(a));
	assert_int_equal(mmp_quota_take(q, SA(a)), 0);
	assert_int_equal(mmp_quota_addresses(q), 2);
	for (int i = 0; i < 3; i++)
		mmp_quota_give(q, SA(a));
	mmp_quota_give(q, SA(b));
	assert_int_equal(mmp_quota_addresses(q), 0);
	mmp_quota_close(q);
}

static void test_mapped_is_ipv4(void **state)
{
	struct mmp_quota *q;
	struct sockaddr_storage a = v4(0xc0000201), m = v6("::ffff:192.0.2.1"), six = v6("2001:db8::1");

	(void)state;
	assert_int_equal(mmp_quota_open(2, 7, &q), 0);
	assert_int_equal(mmp_quota_take(q, SA(a)), 0);
	assert_int_equal(mmp_quota_take(q, SA(m)), 0);
	assert_int_equal(mmp_quota_take(q, SA(a)), -EDQUOT);
	assert_int_equal(mmp_quota_take(q, SA(six)), 0);
	assert_int_equal(mmp_quota_held(q, SA(m)), 2);
	assert_int_equal(mmp_quota_addresses(q), 2);
	mmp_quota_close(q);
}

static void test_other_family_refused(void **state)
{
	struct mmp_quota *q;
	struct sockaddr_storage un = { .ss_family = AF_UNIX };

	(void)state;
	assert_int_equal(mmp_quota_open(2, 7, &q), 0);
	assert_int_equal(mmp_quota_take(q, SA(un)), -EAFNOSUPPORT);
	mmp_quota_close(q);
}

/* Random takes and gives over 3000 addresses against a plain array: counts always agree. */
static void test_against_model(void **state)
{
	enum { N = 3000, OPS = 200000, LIMIT = 4 };
	static uint32_t model[N];
	struct mmp_quota *q;
	uint32_t live = 0;

	(void)state;
	srand(12345);
	memset(model, 0, sizeof(model));
	assert_int_equal(mmp_quota_open(LIMIT, 99, &q), 0);
	for (int op = 0; op < OPS; op++) {
		int i = rand() % N;
		struct sockaddr_storage a = v4(0x0a000000u + (uint32_t)i * 7919u);

		if (rand() % 2) {
			int want = model[i] < LIMIT ? 0 : -EDQUOT;

			assert_int_equal(mmp_quota_take(q, SA(a)), want);
			if (!want && model[i]++ == 0)
				live++;
		} else if (model[i]) {
			mmp_quota_give(q, SA(a));
			if (--model[i] == 0)
				live--;
		}
		if (op % 997 == 0) {
			for (int j = 0; j < N; j++) {
				struct sockaddr_storage b = v4(0x0a000000u + (uint32_t)j * 7919u);

				assert_int_equal(mmp_quota_held(q, SA(b)), model[j]);
			}
			assert_int_equal(mmp_quota_addresses(q), live);
		}
	}
	mmp_quota_close(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit_per_address),
		cmocka_unit_test(test_mapped_is_ipv4),
		cmocka_unit_test(test_other_family_refused),
		cmocka_unit_test(test_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
