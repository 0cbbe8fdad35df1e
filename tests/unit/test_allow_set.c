// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the allowed-subnets swap (user/policy/allow_set.c) on real
 * LPM tries (needs CAP_BPF; skipped without it): a reload leaves exactly the
 * new list, counts what changed, and a bad file is refused before any map
 * is touched. t38-reload checks under load that no allowed source is ever
 * refused during the swap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "mmp_maps.h"
#include "policy/allow_set.h"

static int fd4 = -1, fd6 = -1;
static char path[] = "/tmp/mmp-allow-set-XXXXXX";

static int setup(void **state)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	int fd = mkstemp(path);

	if (fd >= 0)
		close(fd);
	fd4 = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "t4", sizeof(struct mmp_allow4_key), sizeof(struct mmp_allow_value),
			     1024, &o);
	fd6 = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "t6", sizeof(struct mmp_allow6_key), sizeof(struct mmp_allow_value),
			     1024, &o);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	if (fd4 >= 0)
		close(fd4);
	if (fd6 >= 0)
		close(fd6);
	return 0;
}

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static bool allowed4(const char *addr)
{
	struct mmp_allow4_key k = { .prefixlen = 32 };
	struct mmp_allow_value v;

	inet_pton(AF_INET, addr, k.addr);
	return bpf_map_lookup_elem(fd4, &k, &v) == 0;
}

static int entries(int fd, size_t key_size)
{
	uint8_t key[32], next[32];
	void *prev = NULL;
	int n = 0;

	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}

static int apply(const char *text, struct mmp_allow_change *chg)
{
	struct mmp_allow_set set;
	char why[256];
	int err;

	write_file(text);
	err = mmp_allow_set_read(path, &set, why, sizeof(why));
	if (err)
		return err;
	err = mmp_allow_set_apply(&set, fd4, fd6, chg, why, sizeof(why));
	mmp_allow_set_free(&set);
	return err;
}

static void test_swap(void **state)
{
	struct mmp_allow_change chg;

	if (fd4 < 0 || fd6 < 0)
		skip(); /* no CAP_BPF */
	assert_int_equal(apply("192.0.2.0/24\n198.51.100.7\n2001:db8::/32\n192.0.2.0/24\n", &chg), 0);
	assert_int_equal(chg.added, 3); /* the duplicate is one key */
	assert_int_equal(chg.removed, 0);
	assert_true(allowed4("192.0.2.9"));
	assert_true(allowed4("198.51.100.7"));
	assert_false(allowed4("203.0.113.1"));

	/* Narrower key for 192.0.2.9, 198.51.100.7 gone, IPv6 unchanged. */
	assert_int_equal(apply("192.0.2.9/32\n2001:db8::/32\n203.0.113.0/24\n", &chg), 0);
	assert_int_equal(chg.added, 2);
	assert_int_equal(chg.removed, 2);
	assert_int_equal(entries(fd4, sizeof(struct mmp_allow4_key)), 2);
	assert_int_equal(entries(fd6, sizeof(struct mmp_allow6_key)), 1);
	assert_true(allowed4("192.0.2.9"));
	assert_false(allowed4("192.0.2.10"));
	assert_false(allowed4("198.51.100.7"));
	assert_true(allowed4("203.0.113.1"));
}

static void test_bad_file_touches_nothing(void **state)
{
	struct mmp_allow_set set;
	char why[256];

	if (fd4 < 0 || fd6 < 0)
		skip();
	write_file("10.0.0.0/8\n# fine\nnot-an-address\n");
	assert_int_equal(mmp_allow_set_read(path, &set, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, ":3: not an IPv4 or IPv6 address"));
	/* The maps still hold test_swap's list. */
	assert_true(allowed4("203.0.113.1"));
	assert_false(allowed4("10.1.1.1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swap),
		cmocka_unit_test(test_bad_file_touches_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
