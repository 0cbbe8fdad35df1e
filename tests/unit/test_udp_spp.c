// SPDX-License-Identifier: GPL-2.0
/* cmocka tests for the Cloudflare SPP codec (user/proto/udp_spp.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "proto/udp_spp.h"

static struct sockaddr_storage v4(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &sin->sin_addr), 1);
	return ss;
}

static struct sockaddr_storage v6(const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	assert_int_equal(inet_pton(AF_INET6, ip, &sin6->sin6_addr), 1);
	return ss;
}

/* The layout from Cloudflare's documentation, byte by byte, for an IPv4 client. */
static void test_encode_v4_layout(void **state)
{
	struct sockaddr_storage c = v4("203.0.113.7", 0x1234), p = v4("198.51.100.1", 443);
	static const uint8_t want[SPP_HEADER_LEN] = {
		0x56, 0xEC, /* magic */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 203, 0, 113, 7, /* client, IPv4-mapped */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 198, 51, 100, 1, /* proxy */
		0x12, 0x34, /* client port */
		0x01, 0xBB, /* proxy port 443 */
	};
	uint8_t out[SPP_HEADER_LEN];

	assert_int_equal(spp_encode((struct sockaddr *)&c, (struct sockaddr *)&p, out), 0);
	assert_memory_equal(out, want, SPP_HEADER_LEN);
}

static void test_roundtrip_v6(void **state)
{
	struct sockaddr_storage c = v6("2001:db8::42", 65535), p = v6("2001:db8:1::1", 1);
	struct spp_header h;
	uint8_t buf[SPP_HEADER_LEN + 3];

	assert_int_equal(spp_encode((struct sockaddr *)&c, (struct sockaddr *)&p, buf), 0);
	memcpy(buf + SPP_HEADER_LEN, "abc", 3);
	assert_int_equal(spp_decode(buf, sizeof(buf), &h), 0);
	assert_int_equal(h.client.ss_family, AF_INET6);
	assert_memory_equal(&h.client, &c, sizeof(struct sockaddr_in6));
	assert_memory_equal(&h.proxy, &p, sizeof(struct sockaddr_in6));
}

/* IPv4-mapped addresses decode as plain IPv4 (they go to the -4 upstream). */
static void test_decode_mapped_is_v4(void **state)
{
	struct sockaddr_storage c = v4("192.0.2.1", 5000), p = v6("2001:db8::1", 443);
	struct sockaddr_in *sin;
	struct spp_header h;
	uint8_t buf[SPP_HEADER_LEN];

	assert_int_equal(spp_encode((struct sockaddr *)&c, (struct sockaddr *)&p, buf), 0);
	assert_int_equal(spp_decode(buf, sizeof(buf), &h), 0);
	assert_int_equal(h.client.ss_family, AF_INET);
	sin = (struct sockaddr_in *)&h.client;
	assert_int_equal(ntohs(sin->sin_port), 5000);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xC0000201);
	assert_int_equal(h.proxy.ss_family, AF_INET6);
}

/* Every length short of 38 is truncated; a wrong magic is not SPP at all. */
static void test_truncated_and_magic(void **state)
{
	struct sockaddr_storage c = v4("203.0.113.1", 1), p = v4("198.51.100.1", 2);
	struct spp_header h;
	uint8_t buf[SPP_HEADER_LEN];

	assert_int_equal(spp_encode((struct sockaddr *)&c, (struct sockaddr *)&p, buf), 0);
	for (size_t len = 2; len < SPP_HEADER_LEN; len++)
		assert_int_equal(spp_decode(buf, len, &h), -EMSGSIZE);
	assert_int_equal(spp_decode(buf, 1, &h), -EBADMSG);
	assert_int_equal(spp_decode(buf, 0, &h), -EBADMSG);
	buf[1] = 0xED;
	assert_int_equal(spp_decode(buf, sizeof(buf), &h), -EBADMSG);
	assert_false(spp_has_magic(buf, sizeof(buf)));
	buf[1] = 0xEC;
	assert_true(spp_has_magic(buf, 2));
	assert_false(spp_has_magic(buf, 1));
}

static void test_encode_bad_family(void **state)
{
	struct sockaddr_storage c = { .ss_family = AF_UNIX }, p = v4("198.51.100.1", 2);
	uint8_t buf[SPP_HEADER_LEN];

	assert_int_equal(spp_encode((struct sockaddr *)&c, (struct sockaddr *)&p, buf), -EAFNOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_v4_layout),
		cmocka_unit_test(test_roundtrip_v6),
		cmocka_unit_test(test_decode_mapped_is_v4),
		cmocka_unit_test(test_truncated_and_magic),
		cmocka_unit_test(test_encode_bad_family),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
