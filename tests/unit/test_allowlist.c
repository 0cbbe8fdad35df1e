// SPDX-License-Identifier: GPL-2.0
/* cmocka tests for the allowed-subnets file parser (user/proto/allowlist.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proto/allowlist.h"

struct line_case {
	const char *line;
	int ret; /* 1 CIDR, 0 skip, -EINVAL */
	int family;
	const char *addr; /* expected network address after masking */
	unsigned int prefixlen;
};

static const struct line_case cases[] = {
	{ "192.0.2.0/24", 1, AF_INET, "192.0.2.0", 24 },
	{ "  192.0.2.0/24  \n", 1, AF_INET, "192.0.2.0", 24 },
	{ "\t10.1.2.3/8\t# lb pool", 1, AF_INET, "10.0.0.0", 8 },
	{ "198.51.100.7", 1, AF_INET, "198.51.100.7", 32 },
	{ "0.0.0.0/0", 1, AF_INET, "0.0.0.0", 0 },
	{ "203.0.113.129/25", 1, AF_INET, "203.0.113.128", 25 },
	{ "2001:db8::/32", 1, AF_INET6, "2001:db8::", 32 },
	{ "2001:db8:1:2::5/64 # v6", 1, AF_INET6, "2001:db8:1:2::", 64 },
	{ "::1", 1, AF_INET6, "::1", 128 },
	{ "::/0", 1, AF_INET6, "::", 0 },
	{ "2001:db8::ff/121", 1, AF_INET6, "2001:db8::80", 121 },
	{ "", 0 },
	{ "   \n", 0 },
	{ "# only a comment", 0 },
	{ "   # indented comment", 0 },
	{ "192.0.2.0/33", -EINVAL },
	{ "192.0.2.0/-1", -EINVAL },
	{ "192.0.2.0/", -EINVAL },
	{ "192.0.2.0/8x", -EINVAL },
	{ "2001:db8::/129", -EINVAL },
	{ "192.0.2", -EINVAL },
	{ "300.0.0.0/8", -EINVAL },
	{ "example.com", -EINVAL },
	{ "192.0.2.0 /24", -EINVAL },
	{ "192.0.2.0/24 extra", -EINVAL },
};

static void test_line_table(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct line_case *tc = &cases[i];
		struct mmp_cidr cidr;
		const char *reason = NULL;
		char buf[128], want[16];
		int ret;

		snprintf(buf, sizeof(buf), "%s", tc->line);
		ret = mmp_cidr_parse_line(buf, &cidr, &reason);
		if (ret != tc->ret)
			fail_msg("case %zu '%s': got %d want %d", i, tc->line, ret, tc->ret);
		if (ret < 0)
			assert_non_null(reason);
		if (ret != 1)
			continue;
		assert_int_equal(cidr.family, tc->family);
		assert_int_equal(cidr.prefixlen, tc->prefixlen);
		assert_int_equal(inet_pton(tc->family, tc->addr, want), 1);
		if (memcmp(cidr.addr, want, tc->family == AF_INET ? 4 : 16))
			fail_msg("case %zu '%s': host bits not cleared as expected", i, tc->line);
	}
}

struct collected {
	int n;
	unsigned int lines[8];
};

static int collect(const struct mmp_cidr *cidr, unsigned int lineno, void *ctx)
{
	struct collected *c = ctx;

	if (c->n < 8)
		c->lines[c->n] = lineno;
	c->n++;
	return 0;
}

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/mmp-allow-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_file_ok(void **state)
{
	char *path = write_tmp("# LBs\n192.0.2.0/24\n\n  2001:db8::/32  # v6\n198.51.100.1\n");
	struct collected c = { 0 };

	assert_int_equal(mmp_allowlist_read(path, collect, &c), 3);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.lines[0], 2);
	assert_int_equal(c.lines[1], 4);
	assert_int_equal(c.lines[2], 5);
	unlink(path);
}

/* Any invalid line refuses the whole file (no partial policy). */
static void test_file_bad_line(void **state)
{
	char *path = write_tmp("192.0.2.0/24\nnot-a-subnet\n198.51.100.0/24\n");
	struct collected c = { 0 };

	assert_int_equal(mmp_allowlist_read(path, collect, &c), -EINVAL);
	assert_int_equal(c.n, 1);
	unlink(path);
}

static void test_file_missing(void **state)
{
	struct collected c = { 0 };

	assert_int_equal(mmp_allowlist_read("/nonexistent/allowed.txt", collect, &c), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_table),
		cmocka_unit_test(test_file_ok),
		cmocka_unit_test(test_file_bad_line),
		cmocka_unit_test(test_file_missing),
	};

	return cmocka_run_group_tests_name("allowlist", tests, NULL, NULL);
}
