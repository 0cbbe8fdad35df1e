// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the client address policy (user/policy/client_policy.c, user/policy/local_addrs.c): one
 * table of client, load balancer and upstream, and the rule each breaks,
 * against a fixed set of this host's addresses (HOST_ADDRS below).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <arpa/inet.h>
#include "policy/client_policy.h"
#include "lib/sockaddr.h"

struct policy_case {
	const char *client; /* "ip:port" or "[ip6]:port" */
	const char *lb; /* NULL: none given */
	const char *upstream; /* NULL: none given */
	enum mmp_client_verdict want;
};

#define REMOTE_LB "198.51.100.1:40000"
#define UP4 "127.0.0.1:443"
#define UP6 "[::1]:443"

static const struct policy_case cases[] = {
	/* Real clients, remote load balancer. */
	{ "203.0.113.7:5555", REMOTE_LB, UP4, MMP_CLIENT_OK },
	{ "[2001:db8::7]:5555", REMOTE_LB, UP6, MMP_CLIENT_OK },
	{ "[::ffff:203.0.113.7]:5555", REMOTE_LB, UP4, MMP_CLIENT_OK },
	{ "10.0.0.1:1", "[2001:db8::1]:1", UP4, MMP_CLIENT_OK },
	{ "223.255.255.255:1", REMOTE_LB, UP4, MMP_CLIENT_OK }, /* just below multicast */
	{ "240.0.0.1:1", REMOTE_LB, UP4, MMP_CLIENT_OK }, /* just above multicast (class E) */
	{ "255.255.255.254:1", REMOTE_LB, UP4, MMP_CLIENT_OK },
	{ "[fe80::1]:1", REMOTE_LB, UP6, MMP_CLIENT_OK },
	{ "[::2]:1", REMOTE_LB, UP6, MMP_CLIENT_OK },
	{ "[feff::1]:1", REMOTE_LB, UP6, MMP_CLIENT_OK },
	{ "126.255.255.255:1", REMOTE_LB, UP4, MMP_CLIENT_OK },
	{ "128.0.0.1:1", REMOTE_LB, UP4, MMP_CLIENT_OK },
	/* Loopback: refused from a remote load balancer, whatever the form. */
	{ "127.0.0.1:22", REMOTE_LB, UP4, MMP_CLIENT_LOOPBACK },
	{ "127.255.255.254:80", REMOTE_LB, UP4, MMP_CLIENT_LOOPBACK },
	{ "[::1]:22", REMOTE_LB, UP6, MMP_CLIENT_LOOPBACK },
	{ "[::ffff:127.0.0.1]:22", REMOTE_LB, UP4, MMP_CLIENT_LOOPBACK },
	{ "127.0.0.1:22", "[2001:db8::1]:1", UP4, MMP_CLIENT_LOOPBACK },
	{ "127.0.0.1:22", NULL, UP4, MMP_CLIENT_LOOPBACK },
	/* ... and allowed from a load balancer on loopback, in any of its forms. */
	{ "127.0.0.1:22", "127.0.0.1:40000", UP4, MMP_CLIENT_OK },
	{ "127.0.0.1:22", "127.0.0.53:40000", UP4, MMP_CLIENT_OK },
	{ "[::1]:22", "[::1]:40000", UP6, MMP_CLIENT_OK },
	{ "[::1]:22", "127.0.0.1:40000", UP6, MMP_CLIENT_OK },
	{ "127.0.0.1:22", "[::ffff:127.0.0.1]:40000", UP4, MMP_CLIENT_OK },
	/* Unspecified, broadcast, multicast, IPv4-mapped forms included. */
	{ "0.0.0.0:1234", REMOTE_LB, UP4, MMP_CLIENT_UNSPECIFIED },
	{ "[::]:1234", REMOTE_LB, UP6, MMP_CLIENT_UNSPECIFIED },
	{ "[::ffff:0.0.0.0]:1234", REMOTE_LB, UP4, MMP_CLIENT_UNSPECIFIED },
	{ "0.0.0.0:1234", "127.0.0.1:1", UP4, MMP_CLIENT_UNSPECIFIED }, /* a local LB does not make it usable */
	{ "255.255.255.255:1234", REMOTE_LB, UP4, MMP_CLIENT_BROADCAST },
	{ "[::ffff:255.255.255.255]:1234", REMOTE_LB, UP4, MMP_CLIENT_BROADCAST },
	{ "224.0.0.1:1234", REMOTE_LB, UP4, MMP_CLIENT_MULTICAST },
	{ "239.255.255.255:1234", REMOTE_LB, UP4, MMP_CLIENT_MULTICAST },
	{ "[::ffff:224.0.0.1]:1234", REMOTE_LB, UP4, MMP_CLIENT_MULTICAST },
	{ "[ff02::1]:1234", REMOTE_LB, UP6, MMP_CLIENT_MULTICAST },
	{ "[ff00::]:1234", REMOTE_LB, UP6, MMP_CLIENT_MULTICAST },
	/* Port 0, before any address rule. */
	{ "203.0.113.7:0", REMOTE_LB, UP4, MMP_CLIENT_PORT_ZERO },
	{ "[2001:db8::7]:0", REMOTE_LB, UP6, MMP_CLIENT_PORT_ZERO },
	{ "0.0.0.0:0", REMOTE_LB, UP4, MMP_CLIENT_PORT_ZERO },
	/* The upstream's own ip:port: refused even from a local load balancer. */
	{ "127.0.0.1:443", "127.0.0.1:1", UP4, MMP_CLIENT_UPSTREAM },
	{ "[::ffff:127.0.0.1]:443", "127.0.0.1:1", UP4, MMP_CLIENT_UPSTREAM },
	{ "[::1]:443", "[::1]:1", UP6, MMP_CLIENT_UPSTREAM },
	{ "192.0.2.10:8080", REMOTE_LB, "192.0.2.10:8080", MMP_CLIENT_UPSTREAM },
	{ "192.0.2.10:8080", REMOTE_LB, "[::ffff:192.0.2.10]:8080", MMP_CLIENT_UPSTREAM },
	{ "192.0.2.10:8081", REMOTE_LB, "192.0.2.10:8080", MMP_CLIENT_OK }, /* same ip, another port */
	{ "127.0.0.1:444", "127.0.0.1:1", UP4, MMP_CLIENT_OK },
	{ "127.0.0.1:443", "127.0.0.1:1", NULL, MMP_CLIENT_OK },
	{ "127.0.0.1:443", REMOTE_LB, UP4, MMP_CLIENT_LOOPBACK }, /* loopback is named first */
	/* This host's own addresses (HOST_ADDRS): refused from a load balancer elsewhere... */
	{ "192.0.2.50:5555", REMOTE_LB, UP4, MMP_CLIENT_HOST_ADDRESS },
	{ "[::ffff:192.0.2.50]:5555", REMOTE_LB, UP4, MMP_CLIENT_HOST_ADDRESS },
	{ "[2001:db8::50]:5555", REMOTE_LB, UP6, MMP_CLIENT_HOST_ADDRESS },
	{ "192.0.2.50:5555", NULL, UP4, MMP_CLIENT_HOST_ADDRESS },
	{ "192.0.2.50:5555", "[2001:db8::1]:1", UP4, MMP_CLIENT_HOST_ADDRESS },
	/* ... allowed from one on this host, on loopback or another of its addresses ... */
	{ "192.0.2.50:5555", "127.0.0.1:40000", UP4, MMP_CLIENT_OK },
	{ "192.0.2.50:5555", "10.0.0.9:40000", UP4, MMP_CLIENT_OK },
	{ "192.0.2.50:5555", "[::ffff:10.0.0.9]:40000", UP4, MMP_CLIENT_OK },
	{ "[2001:db8::50]:5555", "[2001:db8::50]:40000", UP6, MMP_CLIENT_OK },
	/* ... and their neighbours are real clients. */
	{ "192.0.2.51:5555", REMOTE_LB, UP4, MMP_CLIENT_OK },
	{ "[2001:db8::51]:5555", REMOTE_LB, UP6, MMP_CLIENT_OK },
};

/* This host's addresses, as the cases above see them. */
static const char *const HOST_ADDRS[] = { "192.0.2.50", "10.0.0.9", "2001:db8::50", "127.0.0.1", "::1" };

static struct sockaddr_storage addr(const char *s)
{
	struct sockaddr_storage ss;
	const char *reason = NULL;

	memset(&ss, 0, sizeof(ss));
	if (mmp_parse_hostport(s, &ss, &reason))
		fail_msg("bad test address %s: %s", s, reason);
	return ss;
}

static void host_addrs(struct mmp_local_addrs *local)
{
	struct in6_addr v[sizeof(HOST_ADDRS) / sizeof(HOST_ADDRS[0])];

	memset(local, 0, sizeof(*local));
	for (size_t i = 0; i < sizeof(HOST_ADDRS) / sizeof(HOST_ADDRS[0]); i++) {
		memset(&v[i], 0, sizeof(v[i]));
		if (strchr(HOST_ADDRS[i], ':')) {
			assert_int_equal(inet_pton(AF_INET6, HOST_ADDRS[i], &v[i]), 1);
		} else {
			v[i].s6_addr[10] = v[i].s6_addr[11] = 0xff;
			assert_int_equal(inet_pton(AF_INET, HOST_ADDRS[i], &v[i].s6_addr[12]), 1);
		}
	}
	assert_int_equal(mmp_local_addrs_set(local, v, sizeof(v) / sizeof(v[0])), 0);
}

static void test_table(void **state)
{
	struct mmp_local_addrs local;

	host_addrs(&local);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct policy_case *t = &cases[i];
		struct sockaddr_storage c = addr(t->client), l, u;
		enum mmp_client_verdict got;

		if (t->lb)
			l = addr(t->lb);
		if (t->upstream)
			u = addr(t->upstream);
		got = mmp_client_check((struct sockaddr *)&c, t->lb ? (struct sockaddr *)&l : NULL,
				       t->upstream ? (struct sockaddr *)&u : NULL, &local);
		if (got != t->want)
			fail_msg("case %zu: client %s via %s to %s: got %s, want %s", i, t->client,
				 t->lb ? t->lb : "-", t->upstream ? t->upstream : "-", mmp_client_rule(got),
				 mmp_client_rule(t->want));
	}
	mmp_local_addrs_free(&local);
}

/* The real snapshot holds loopback's address (every namespace has lo) and not a documentation address. */
static void test_snapshot(void **state)
{
	const struct mmp_local_addrs *s = mmp_local_addrs_current();
	struct in6_addr lo4 = { .s6_addr = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 } };
	struct in6_addr doc = { .s6_addr = { [10] = 0xff, [11] = 0xff, [12] = 203, [14] = 113, [15] = 7 } };

	assert_true(mmp_local_addrs_has(s, &lo4));
	assert_false(mmp_local_addrs_has(s, &doc));
	assert_ptr_equal(mmp_local_addrs_current(), s); /* the same thread's snapshot, not taken again */
}

static void test_family(void **state)
{
	struct sockaddr_storage c = { .ss_family = AF_UNIX };

	assert_int_equal(mmp_client_check((struct sockaddr *)&c, NULL, NULL, NULL), MMP_CLIENT_FAMILY);
	c.ss_family = AF_UNSPEC;
	assert_int_equal(mmp_client_check((struct sockaddr *)&c, NULL, NULL, NULL), MMP_CLIENT_FAMILY);
}

/* Every verdict has a rule name and a reason; out-of-range values do not crash. */
static void test_names(void **state)
{
	for (int v = 0; v < MMP_CLIENT_VERDICT_MAX; v++) {
		assert_non_null(mmp_client_rule(v));
		assert_non_null(mmp_client_why(v));
		assert_true(strlen(mmp_client_why(v)) > 10);
	}
	assert_string_equal(mmp_client_rule(MMP_CLIENT_LOOPBACK), "loopback");
	assert_string_equal(mmp_client_rule(MMP_CLIENT_VERDICT_MAX), "unknown");
	assert_string_equal(mmp_client_rule((enum mmp_client_verdict)-1), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_family),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
