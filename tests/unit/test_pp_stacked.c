// SPDX-License-Identifier: GPL-2.0
/* Unit tests for stacked PROXY headers (user/proto/pp_stacked.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "proto/pp_stacked.h"

/* v2 PROXY TCP4 10.9.9.9:1000 -> 10.0.0.2:443: the nearer load balancer's, naming the farther one. */
#define OUTER "\r\n\r\n\0\r\nQUIT\n" "\x21\x11\x00\x0c" "\x0a\x09\x09\x09" "\x0a\x00\x00\x02" "\x03\xe8" "\x01\xbb"
#define OUTER_LEN 28
/* v1, the farther one's: the original client 192.0.2.7:5555. */
#define INNER "PROXY TCP4 192.0.2.7 10.0.0.2 5555 443\r\n"

static enum pp_stack stacked(const char *b, size_t n, bool wait, struct pp_header *inner)
{
	struct pp_header first;
	const char *reason = NULL;

	assert_int_equal(pp_parse((const uint8_t *)b, n, &first, &reason), PP_OK);
	assert_int_equal(first.header_len, OUTER_LEN);
	return pp_stacked((const uint8_t *)b, n, first.header_len, wait, inner, &reason);
}

static void test_found_names_original_client(void **state)
{
	static const char b[] = OUTER INNER "GET /";
	struct pp_header in;
	const struct sockaddr_in *sin = (const void *)&in.src;

	assert_int_equal(stacked(b, sizeof(b) - 1, false, &in), PP_STACK_FOUND);
	assert_int_equal(in.header_len, strlen(INNER));
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xC0000207);
	assert_int_equal(ntohs(sin->sin_port), 5555);
}

static void test_payload_is_none(void **state)
{
	static const char b[] = OUTER "GET / HTTP/1.0\r\n";
	struct pp_header in;

	assert_int_equal(stacked(b, sizeof(b) - 1, true, &in), PP_STACK_NONE);
	assert_int_equal(stacked(OUTER, OUTER_LEN, true, &in), PP_STACK_NONE); /* nothing yet */
}

/* "\r\n" alone: a signature's prefix. --strip-stacked waits; the default does not hold payload back. */
static void test_signature_prefix(void **state)
{
	static const char b[] = OUTER "\r\n";
	static const char v1[] = OUTER "PROX";
	struct pp_header in;

	assert_int_equal(stacked(b, sizeof(b) - 1, true, &in), PP_STACK_MORE);
	assert_int_equal(stacked(b, sizeof(b) - 1, false, &in), PP_STACK_NONE);
	assert_int_equal(stacked(v1, sizeof(v1) - 1, true, &in), PP_STACK_MORE);
}

static void test_incomplete_and_bad_second(void **state)
{
	static const char part[] = OUTER "PROXY TCP4 192.0.2.7 ";
	static const char bad[] = OUTER "PROXY TCP9 x\r\n";
	struct pp_header in;

	assert_int_equal(stacked(part, sizeof(part) - 1, false, &in), PP_STACK_MORE);
	assert_int_equal(stacked(bad, sizeof(bad) - 1, false, &in), PP_STACK_BAD);
}

/* Two v2 headers back to back. */
static void test_v2_on_v2(void **state)
{
	static const char b[] = OUTER OUTER;
	struct pp_header in;

	assert_int_equal(stacked(b, sizeof(b) - 1, false, &in), PP_STACK_FOUND);
	assert_int_equal(in.header_len, OUTER_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found_names_original_client),
		cmocka_unit_test(test_payload_is_none),
		cmocka_unit_test(test_signature_prefix),
		cmocka_unit_test(test_incomplete_and_bad_second),
		cmocka_unit_test(test_v2_on_v2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
