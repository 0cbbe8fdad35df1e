// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the tc engine's hand-built window updates
 * (user/engine/tc/tc_packet.c): mmp_tc_build_ack for IPv4 and IPv6, with and without
 * timestamps, checked field by field against a packet laid out here, and
 * with both checksums verified by the tests' own RFC 1071 code (tc_fixtures.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tc_fixtures.h"
#include "engine/tc/tc_packet.h"

/* ---------------------------------------------------------------------------
 * Cases
 * ------------------------------------------------------------------------ */

struct ack_case {
	const char *name;
	uint8_t family;
	const char *src, *dst;
	uint16_t sport, dport;
	uint32_t seq, ack, window;
	uint8_t flags; /* 0: pure ACK */
	bool timestamps;
	uint32_t tsval;
	uint16_t want_window; /* after clamping */
	uint8_t want_flags;
};

static const struct ack_case cases[] = {
	{ "IPv4 pure ACK, no timestamps", 4, "192.0.2.7", "10.0.1.9", 51000, 8080, 0x01020304, 0xa0b0c0d0, 4321,
	  0, false, 0, 4321, 0x10 },
	{ "IPv4 pure ACK with timestamps", 4, "10.0.0.2", "10.0.0.1", 8443, 40000, 0xfffffff0, 0x00000010, 65535,
	  0, true, 0xdeadbeef, 65535, 0x10 },
	{ "IPv4 window above 65535 clamped", 4, "127.0.0.1", "127.0.0.2", 1, 65535, 0, 0xffffffff, 70000, 0,
	  true, 1, 65535, 0x10 },
	{ "IPv4 window 0", 4, "203.0.113.1", "198.51.100.2", 443, 1024, 7, 8, 0, 0, false, 0, 0, 0x10 },
	{ "IPv4 RST+ACK flags", 4, "10.0.0.2", "10.0.0.1", 8443, 40000, 0x55555555, 0xaaaaaaaa, 100, 0x14, false,
	  0, 100, 0x14 },
	{ "IPv6 pure ACK, no timestamps", 6, "2001:db8:1::7", "2001:db8:2::9", 51000, 8080, 0x80000000,
	  0x7fffffff, 1, 0, false, 0, 1, 0x10 },
	{ "IPv6 pure ACK with timestamps", 6, "2001:db8::2", "2001:db8::1", 8443, 40000, 0x12345678, 0x9abcdef0,
	  30000, 0, true, 0xffffffff, 30000, 0x10 },
	{ "IPv6 loopback, window clamped, timestamps", 6, "::1", "::1", 80, 50000, 0, 0, 0xffffffff, 0, true, 0,
	  65535, 0x10 },
	{ "IPv6 RST+ACK with timestamps", 6, "fe80::1", "ff02::1:ff00:1", 1234, 4321, 1, 2, 3, 0x14, true, 4, 3,
	  0x14 },
};

static void test_build_ack(void **state)
{
	const struct ack_case *c = *state;
	struct mmp_tc_ack a;
	uint8_t buf[128], want[128];
	size_t ip_hlen = c->family == 4 ? 20 : 40;
	size_t tcp_hlen = c->timestamps ? 32 : 20;
	size_t len;
	uint8_t *ip = want, *t = want + ip_hlen;

	memset(&a, 0, sizeof(a));
	a.tuple.family = c->family;
	assert_int_equal(inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->src, a.tuple.saddr), 1);
	assert_int_equal(inet_pton(c->family == 4 ? AF_INET : AF_INET6, c->dst, a.tuple.daddr), 1);
	a.tuple.sport = htons(c->sport);
	a.tuple.dport = htons(c->dport);
	a.seq = c->seq;
	a.ack = c->ack;
	a.window = c->window;
	a.flags = c->flags;
	a.timestamps = c->timestamps;
	a.tsval = c->tsval;

	memset(buf, 0xa5, sizeof(buf));
	len = mmp_tc_build_ack(&a, buf);
	assert_int_equal(len, ip_hlen + tcp_hlen);
	/* Nothing written past the packet. */
	for (size_t i = len; i < sizeof(buf); i++)
		if (buf[i] != 0xa5)
			fail_msg("%s: byte %zu past the %zu-byte packet was written", c->name, i, len);

	/* The packet as it should be, laid out by hand (checksums left 0). */
	memset(want, 0, sizeof(want));
	if (c->family == 4) {
		ip[0] = 0x45;
		put16(ip + 2, (uint16_t)len);
		put16(ip + 6, 0x4000); /* DF */
		ip[8] = 64;
		ip[9] = 6;
		memcpy(ip + 12, a.tuple.saddr, 4);
		memcpy(ip + 16, a.tuple.daddr, 4);
	} else {
		ip[0] = 0x60;
		put16(ip + 4, (uint16_t)tcp_hlen);
		ip[6] = 6;
		ip[7] = 64;
		memcpy(ip + 8, a.tuple.saddr, 16);
		memcpy(ip + 24, a.tuple.daddr, 16);
	}
	put16(t, c->sport);
	put16(t + 2, c->dport);
	put32(t + 4, c->seq);
	put32(t + 8, c->ack);
	t[12] = (uint8_t)(tcp_hlen / 4 << 4);
	t[13] = c->want_flags;
	put16(t + 14, c->want_window);
	if (c->timestamps) {
		t[20] = 1;
		t[21] = 1;
		t[22] = 8;
		t[23] = 10;
		put32(t + 24, c->tsval);
		put32(t + 28, 0); /* TSecr: no echo to give */
	}
	/* The checksums, by this file's code. */
	if (c->family == 4)
		put16(ip + 10, (uint16_t)~fold(raw_sum(ip, 20)));
	put16(t + 16, (uint16_t)~tcp_residual_at(c->family, want, ip_hlen, tcp_hlen));

	for (size_t i = 0; i < len; i++) {
		if (buf[i] != want[i]) {
			print_error("%s: byte %zu (%s offset %zu) is %#04x, expected %#04x\n", c->name, i,
				    i < ip_hlen ? "IP" : "TCP", i < ip_hlen ? i : i - ip_hlen, buf[i], want[i]);
			for (size_t j = 0; j < len; j++)
				print_error("%s%02x/%02x", j % 8 ? " " : "\n  got/want ", buf[j], want[j]);
			print_error("\n");
			fail();
		}
	}
	/* And the checksums verify on the function's own bytes. */
	if (c->family == 4)
		assert_int_equal(fold(raw_sum(buf, 20)), 0xffff);
	assert_int_equal(tcp_residual_at(c->family, buf, ip_hlen, tcp_hlen), 0xffff);
	assert_int_equal(get16(buf + ip_hlen + 14), c->want_window);
}

/* A fixed, hand-checked packet: the whole IPv4 + TS segment as literal bytes. */
static void test_build_ack_literal(void **state)
{
	struct mmp_tc_ack a = {
		.tuple = { .family = 4, .sport = htons(8443), .dport = htons(40000),
			   .saddr = { 10, 0, 0, 2 }, .daddr = { 10, 0, 0, 1 } },
		.seq = 0x01020304,
		.ack = 0x05060708,
		.window = 0x1000,
		.timestamps = true,
		.tsval = 0x11223344,
	};
	/*
	 * IP checksum: 4500+0034+0000+4000+4006+0a00+0002+0a00+0001 = 0xd93d -> ~ = 0x26c2.
	 * TCP: pseudo 0a00+0002+0a00+0001+0006+0020 = 0x1429; header 20fb+9c40+0102+0304+0506
	 * +0708+8010+1000+0101+080a+1122+3344 = 0x1aad0; total 0x1bef9 -> 0xbefa -> ~ = 0x4105.
	 */
	static const uint8_t want[] = {
		0x45, 0x00, 0x00, 0x34, 0x00, 0x00, 0x40, 0x00, 0x40, 0x06, 0x26, 0xc2,
		0x0a, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x01,
		0x20, 0xfb, 0x9c, 0x40, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x80, 0x10, 0x10, 0x00, 0x41, 0x05, 0x00, 0x00,
		0x01, 0x01, 0x08, 0x0a, 0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x00,
	};
	uint8_t buf[80];

	(void)state;
	assert_int_equal(mmp_tc_build_ack(&a, buf), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

/* The project's checksum helpers against the independent code and RFC 1071's example. */
static void test_csum_helpers(void **state)
{
	static const uint8_t rfc1071[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t buf[1501];
	uint32_t seed = 12345;

	(void)state;
	/* RFC 1071 section 3: the sum is 0xddf2, so the checksum is 0x220d. */
	assert_int_equal(mmp_csum_fold(mmp_csum_partial(rfc1071, sizeof(rfc1071), 0)), 0x220d);
	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = (uint8_t)(seed >> 16);
	}
	for (size_t n = 0; n <= sizeof(buf); n += (n < 64 ? 1 : 97)) {
		uint16_t want = (uint16_t)~fold(raw_sum(buf, n));

		if (mmp_csum_fold(mmp_csum_partial(buf, n, 0)) != want)
			fail_msg("length %zu: %#06x, expected %#06x", n, mmp_csum_fold(mmp_csum_partial(buf, n, 0)),
				 want);
	}
	/* Chaining: a sum carried over an even split equals the whole. */
	assert_int_equal(mmp_csum_fold(mmp_csum_partial(buf + 600, 901, mmp_csum_partial(buf, 600, 0))),
			 (uint16_t)~fold(raw_sum(buf, 1501)));
	/* All ones folds to 0 (the ones' complement of -0). */
	memset(buf, 0xff, 64);
	assert_int_equal(mmp_csum_fold(mmp_csum_partial(buf, 64, 0)), 0);
}

static void test_send_ack_no_socket(void **state)
{
	struct mmp_tc_ack a = { .tuple = { .family = 4 } };

	(void)state;
	assert_int_equal(mmp_tc_send_ack(-1, &a), -EAFNOSUPPORT);
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct CMUnitTest *tests = calloc(n + 3, sizeof(*tests));
	int rc;

	if (!tests)
		return 1;
	for (size_t i = 0; i < n; i++) {
		tests[i].name = cases[i].name;
		tests[i].test_func = test_build_ack;
		tests[i].initial_state = (void *)&cases[i];
	}
	tests[n] = (struct CMUnitTest)cmocka_unit_test(test_build_ack_literal);
	tests[n + 1] = (struct CMUnitTest)cmocka_unit_test(test_csum_helpers);
	tests[n + 2] = (struct CMUnitTest)cmocka_unit_test(test_send_ack_no_socket);
	rc = _cmocka_run_group_tests("tc_packet", tests, n + 3, NULL, NULL);
	free(tests);
	return rc;
}
