// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for datagram classification (user/udp/udp_classify.c): every
 * --udp-header mode against every kind of datagram, table-driven. Each bad
 * class must land in its own drop counter.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "proto/proxy_proto.h"
#include "udp/udp_classify.h"
#include "proto/udp_spp.h"

#define AUTO MMP_UDP_HDR_AUTO
#define EVERY MMP_UDP_HDR_EVERY
#define FIRST MMP_UDP_HDR_FIRST
#define SPP MMP_UDP_HDR_SPP
#define NONE MMP_UDP_CNT_MAX /* "not a drop" in the table */

static const uint8_t sig[12] = { 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A };

enum build {
	B_V2_4, /* PROXY DGRAM, 203.0.113.7:4242 -> 198.51.100.1:443, then "data" */
	B_V2_6, /* PROXY DGRAM, [2001:db8::7]:4242 -> [2001:db8:1::1]:443 */
	B_V2_MAPPED, /* INET6 header naming ::ffff:203.0.113.7 */
	B_V2_LOCAL,
	B_V2_VERSION1,
	B_V2_CMD_BAD,
	B_V2_UNIX,
	B_V2_UNSPEC,
	B_V2_STREAM,
	B_V2_LONG, /* length runs past the datagram */
	B_V2_SHORT_BLOCK, /* INET with 8 address bytes */
	B_V2_CRC_BAD,
	B_V2_CRC_GOOD,
	B_V2_PORT0,
	B_V2_ANY, /* client 0.0.0.0 */
	B_V2_MCAST, /* client 224.0.0.1 */
	B_V2_V6_ANY, /* client :: */
	B_SIG_PREFIX, /* 6 bytes of the signature */
	B_V2_FIXED_CUT, /* 14 bytes */
	B_SPP, /* SPP 203.0.113.7:4242, then "data" */
	B_SPP_V6,
	B_SPP_SHORT, /* 20 bytes */
	B_SPP_PORT0,
	B_MAGIC_ONLY, /* 0x56 alone */
	B_PLAIN, /* "hello" */
	B_EMPTY,
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xFF;
}

static size_t v2(uint8_t *out, uint8_t ver_cmd, uint8_t fam, const void *src, const void *dst, size_t alen,
		 uint16_t sport)
{
	size_t n = 16;

	memcpy(out, sig, 12);
	out[12] = ver_cmd;
	out[13] = fam;
	memcpy(out + n, src, alen);
	memcpy(out + n + alen, dst, alen);
	n += 2 * alen;
	put16(out + n, sport);
	put16(out + n + 2, 443);
	n += 4;
	put16(out + 14, (uint16_t)(n - 16));
	return n;
}

static size_t spp(uint8_t *out, const char *client, int family, uint16_t port)
{
	struct sockaddr_storage c = { 0 }, p = { 0 };

	if (family == AF_INET) {
		((struct sockaddr_in *)&c)->sin_family = AF_INET;
		inet_pton(AF_INET, client, &((struct sockaddr_in *)&c)->sin_addr);
		((struct sockaddr_in *)&c)->sin_port = htons(port);
	} else {
		((struct sockaddr_in6 *)&c)->sin6_family = AF_INET6;
		inet_pton(AF_INET6, client, &((struct sockaddr_in6 *)&c)->sin6_addr);
		((struct sockaddr_in6 *)&c)->sin6_port = htons(port);
	}
	((struct sockaddr_in *)&p)->sin_family = AF_INET;
	((struct sockaddr_in *)&p)->sin_port = htons(443);
	assert_int_equal(spp_encode((struct sockaddr *)&c, (struct sockaddr *)&p, out), 0);
	return SPP_HEADER_LEN;
}

/* Build datagram b into out; returns its length. Payload "data" follows any header. */
static size_t build(enum build b, uint8_t *out)
{
	uint8_t c4[4] = { 203, 0, 113, 7 }, d4[4] = { 198, 51, 100, 1 }, any4[4] = { 0 };
	uint8_t mc4[4] = { 224, 0, 0, 1 };
	uint8_t c6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 7 }, d6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 1 };
	uint8_t m6[16] = { [10] = 0xFF, [11] = 0xFF, 203, 0, 113, 7 }, any6[16] = { 0 };
	size_t n = 0;

	switch (b) {
	case B_V2_4:
		n = v2(out, 0x21, 0x12, c4, d4, 4, 4242);
		break;
	case B_V2_6:
		n = v2(out, 0x21, 0x22, c6, d6, 16, 4242);
		break;
	case B_V2_MAPPED:
		n = v2(out, 0x21, 0x22, m6, d6, 16, 4242);
		break;
	case B_V2_LOCAL:
		memcpy(out, sig, 12);
		out[12] = 0x20;
		out[13] = 0x00;
		put16(out + 14, 0);
		n = 16;
		break;
	case B_V2_VERSION1:
		n = v2(out, 0x11, 0x12, c4, d4, 4, 4242);
		break;
	case B_V2_CMD_BAD:
		n = v2(out, 0x2F, 0x12, c4, d4, 4, 4242);
		break;
	case B_V2_UNIX:
		memcpy(out, sig, 12);
		out[12] = 0x21;
		out[13] = 0x32;
		put16(out + 14, 216);
		memset(out + 16, 0, 216);
		n = 16 + 216;
		break;
	case B_V2_UNSPEC:
		memcpy(out, sig, 12);
		out[12] = 0x21;
		out[13] = 0x02;
		put16(out + 14, 0);
		n = 16;
		break;
	case B_V2_STREAM:
		n = v2(out, 0x21, 0x11, c4, d4, 4, 4242);
		break;
	case B_V2_LONG:
		n = v2(out, 0x21, 0x12, c4, d4, 4, 4242);
		put16(out + 14, 300);
		break;
	case B_V2_SHORT_BLOCK:
		n = v2(out, 0x21, 0x12, c4, d4, 4, 4242);
		put16(out + 14, 8);
		n = 24;
		break;
	case B_V2_CRC_BAD:
	case B_V2_CRC_GOOD: {
		uint32_t crc;

		n = v2(out, 0x21, 0x12, c4, d4, 4, 4242);
		out[n] = 0x03; /* CRC32C TLV */
		put16(out + n + 1, 4);
		memset(out + n + 3, 0, 4);
		n += 7;
		put16(out + 14, (uint16_t)(n - 16));
		crc = b == B_V2_CRC_GOOD ? pp_crc32c(0, out, n) : 0xdeadbeefU;
		out[n - 4] = crc >> 24;
		out[n - 3] = crc >> 16;
		out[n - 2] = crc >> 8;
		out[n - 1] = crc;
		break;
	}
	case B_V2_PORT0:
		n = v2(out, 0x21, 0x12, c4, d4, 4, 0);
		break;
	case B_V2_ANY:
		n = v2(out, 0x21, 0x12, any4, d4, 4, 4242);
		break;
	case B_V2_MCAST:
		n = v2(out, 0x21, 0x12, mc4, d4, 4, 4242);
		break;
	case B_V2_V6_ANY:
		n = v2(out, 0x21, 0x22, any6, d6, 16, 4242);
		break;
	case B_SIG_PREFIX:
		memcpy(out, sig, 6);
		return 6;
	case B_V2_FIXED_CUT:
		v2(out, 0x21, 0x12, c4, d4, 4, 4242);
		return 14;
	case B_SPP:
		n = spp(out, "203.0.113.7", AF_INET, 4242);
		break;
	case B_SPP_V6:
		n = spp(out, "2001:db8::7", AF_INET6, 4242);
		break;
	case B_SPP_SHORT:
		spp(out, "203.0.113.7", AF_INET, 4242);
		return 20;
	case B_SPP_PORT0:
		n = spp(out, "203.0.113.7", AF_INET, 0);
		break;
	case B_MAGIC_ONLY:
		out[0] = 0x56;
		return 1;
	case B_PLAIN:
		memcpy(out, "hello", 5);
		return 5;
	case B_EMPTY:
		return 0;
	}
	memcpy(out + n, "data", 4);
	return n + 4;
}

struct row {
	const char *name;
	enum mmp_udp_header mode;
	enum build b;
	bool lb_has_v2_flow;
	enum udp_kind kind;
	enum mmp_udp_counter drop; /* NONE unless kind is UDP_K_DROP */
	int client_family; /* for V2/SPP: AF_INET or AF_INET6 */
};

static const struct row rows[] = {
	/* every: a header on every datagram */
	{ "every v4", EVERY, B_V2_4, false, UDP_K_V2, NONE, AF_INET },
	{ "every v6", EVERY, B_V2_6, false, UDP_K_V2, NONE, AF_INET6 },
	{ "every v4-mapped client is v4", EVERY, B_V2_MAPPED, false, UDP_K_V2, NONE, AF_INET },
	{ "every known flow still needs one", EVERY, B_PLAIN, true, UDP_K_DROP, MMP_UDP_CNT_drop_no_header },
	{ "every LOCAL", EVERY, B_V2_LOCAL, false, UDP_K_LOCAL, NONE },
	{ "every CRC32C right", EVERY, B_V2_CRC_GOOD, false, UDP_K_V2, NONE, AF_INET },
	{ "every no header", EVERY, B_PLAIN, false, UDP_K_DROP, MMP_UDP_CNT_drop_no_header },
	{ "every empty", EVERY, B_EMPTY, false, UDP_K_DROP, MMP_UDP_CNT_drop_no_header },
	{ "every SPP is no header", EVERY, B_SPP, false, UDP_K_DROP, MMP_UDP_CNT_drop_no_header },
	{ "every signature prefix", EVERY, B_SIG_PREFIX, false, UDP_K_DROP, MMP_UDP_CNT_drop_truncated },
	{ "every fixed part cut", EVERY, B_V2_FIXED_CUT, false, UDP_K_DROP, MMP_UDP_CNT_drop_truncated },
	{ "every version 1", EVERY, B_V2_VERSION1, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_header },
	{ "every bad command", EVERY, B_V2_CMD_BAD, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_header },
	{ "every UNIX", EVERY, B_V2_UNIX, false, UDP_K_DROP, MMP_UDP_CNT_drop_wrong_family },
	{ "every UNSPEC", EVERY, B_V2_UNSPEC, false, UDP_K_DROP, MMP_UDP_CNT_drop_wrong_family },
	{ "every STREAM", EVERY, B_V2_STREAM, false, UDP_K_DROP, MMP_UDP_CNT_drop_wrong_transport },
	{ "every length past the end", EVERY, B_V2_LONG, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_length },
	{ "every short address block", EVERY, B_V2_SHORT_BLOCK, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_length },
	{ "every CRC32C wrong", EVERY, B_V2_CRC_BAD, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_header },
	{ "every client port 0", EVERY, B_V2_PORT0, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_client },
	{ "every client 0.0.0.0", EVERY, B_V2_ANY, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_client },
	{ "every client multicast", EVERY, B_V2_MCAST, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_client },
	{ "every client ::", EVERY, B_V2_V6_ANY, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_client },
	/* first: the header on the first datagram; the rest is the LB ip:port's flow */
	{ "first header", FIRST, B_V2_4, false, UDP_K_V2, NONE, AF_INET },
	{ "first header again", FIRST, B_V2_6, true, UDP_K_V2, NONE, AF_INET6 },
	{ "first plain", FIRST, B_PLAIN, true, UDP_K_PAYLOAD, NONE },
	{ "first plain, no flow yet", FIRST, B_PLAIN, false, UDP_K_PAYLOAD, NONE },
	{ "first empty", FIRST, B_EMPTY, true, UDP_K_PAYLOAD, NONE },
	{ "first SPP is payload", FIRST, B_SPP, false, UDP_K_PAYLOAD, NONE },
	{ "first signature prefix", FIRST, B_SIG_PREFIX, false, UDP_K_PAYLOAD, NONE },
	{ "first STREAM", FIRST, B_V2_STREAM, true, UDP_K_DROP, MMP_UDP_CNT_drop_wrong_transport },
	{ "first fixed part cut", FIRST, B_V2_FIXED_CUT, true, UDP_K_DROP, MMP_UDP_CNT_drop_truncated },
	/* auto: v2 or SPP; SPP's magic only where no v2 flow owns the LB ip:port */
	{ "auto v2", AUTO, B_V2_4, false, UDP_K_V2, NONE, AF_INET },
	{ "auto SPP", AUTO, B_SPP, false, UDP_K_SPP, NONE, AF_INET },
	{ "auto SPP v6", AUTO, B_SPP_V6, false, UDP_K_SPP, NONE, AF_INET6 },
	{ "auto SPP magic on a v2 flow is payload", AUTO, B_SPP, true, UDP_K_PAYLOAD, NONE },
	{ "auto SPP cut short", AUTO, B_SPP_SHORT, false, UDP_K_DROP, MMP_UDP_CNT_drop_truncated },
	{ "auto plain", AUTO, B_PLAIN, true, UDP_K_PAYLOAD, NONE },
	{ "auto v2 UNIX", AUTO, B_V2_UNIX, false, UDP_K_DROP, MMP_UDP_CNT_drop_wrong_family },
	/* spp: 38 bytes on every datagram */
	{ "spp v4", SPP, B_SPP, false, UDP_K_SPP, NONE, AF_INET },
	{ "spp v6", SPP, B_SPP_V6, false, UDP_K_SPP, NONE, AF_INET6 },
	{ "spp cut short", SPP, B_SPP_SHORT, false, UDP_K_DROP, MMP_UDP_CNT_drop_truncated },
	{ "spp magic byte alone", SPP, B_MAGIC_ONLY, false, UDP_K_DROP, MMP_UDP_CNT_drop_no_header },
	{ "spp v2 is no header", SPP, B_V2_4, false, UDP_K_DROP, MMP_UDP_CNT_drop_no_header },
	{ "spp plain", SPP, B_PLAIN, false, UDP_K_DROP, MMP_UDP_CNT_drop_no_header },
	{ "spp client port 0", SPP, B_SPP_PORT0, false, UDP_K_DROP, MMP_UDP_CNT_drop_bad_client },
};

static void test_table(void **state)
{
	uint8_t buf[512];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct udp_dgram_info info;
		size_t len = build(r->b, buf);

		print_message("  %s\n", r->name);
		udp_classify(r->mode, buf, len, r->lb_has_v2_flow, &info);
		assert_int_equal(info.kind, r->kind);
		if (r->kind == UDP_K_DROP) {
			assert_int_equal(info.drop, r->drop);
			assert_non_null(info.why);
		}
		if (r->kind == UDP_K_V2 || r->kind == UDP_K_SPP) {
			assert_int_equal(info.client.ss_family, r->client_family);
			/* The payload follows the header exactly. */
			assert_int_equal(len - info.hdr_len, 4);
			assert_memory_equal(buf + info.hdr_len, "data", 4);
		}
		if (r->kind == UDP_K_LOCAL)
			assert_int_equal(info.hdr_len, 16);
		if (r->kind == UDP_K_PAYLOAD)
			assert_int_equal(info.hdr_len, 0);
	}
}

/* The client address and port come through exactly, in network order. */
static void test_client_values(void **state)
{
	struct udp_dgram_info info;
	struct sockaddr_in *sin = (struct sockaddr_in *)&info.client;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&info.client;
	uint8_t buf[128];
	size_t len;

	len = build(B_V2_MAPPED, buf);
	udp_classify(EVERY, buf, len, false, &info);
	assert_int_equal(ntohs(sin->sin_port), 4242);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xCB007107);
	len = build(B_SPP_V6, buf);
	udp_classify(SPP, buf, len, false, &info);
	assert_int_equal(ntohs(sin6->sin6_port), 4242);
	assert_int_equal(sin6->sin6_addr.s6_addr[15], 7);
	assert_int_equal(info.proxy.ss_family, AF_INET);
}

/* A signature prefix is flagged, so a flow-less one can be counted as truncated. */
static void test_sig_prefix_flag(void **state)
{
	struct udp_dgram_info info;
	uint8_t buf[16];

	for (size_t n = 1; n < 12; n++) {
		memcpy(buf, sig, n);
		udp_classify(FIRST, buf, n, false, &info);
		assert_int_equal(info.kind, UDP_K_PAYLOAD);
		assert_true(info.sig_prefix);
	}
	udp_classify(FIRST, (const uint8_t *)"\r\nX", 3, false, &info);
	assert_false(info.sig_prefix);
}

/* Every truncation of a valid header is dropped, never taken as a header or payload. */
static void test_every_truncation(void **state)
{
	uint8_t buf[128];
	size_t full = build(B_V2_6, buf) - 4;

	for (size_t n = 1; n < full; n++) {
		struct udp_dgram_info info;

		udp_classify(EVERY, buf, n, false, &info);
		assert_int_equal(info.kind, UDP_K_DROP);
		assert_true(info.drop == MMP_UDP_CNT_drop_truncated || info.drop == MMP_UDP_CNT_drop_bad_length);
	}
}

static void test_unusable_clients(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(1) };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(1) };
	const char *why;

	sin.sin_addr.s_addr = htonl(0xFFFFFFFF);
	assert_int_equal(udp_client_check((struct sockaddr *)&sin, &why), -EINVAL);
	sin.sin_addr.s_addr = htonl(0xCB007101);
	assert_int_equal(udp_client_check((struct sockaddr *)&sin, &why), 0);
	sin6.sin6_addr.s6_addr[0] = 0xFF; /* ff00::/8 multicast */
	assert_int_equal(udp_client_check((struct sockaddr *)&sin6, &why), -EINVAL);
	sin6.sin6_addr.s6_addr[0] = 0x20;
	assert_int_equal(udp_client_check((struct sockaddr *)&sin6, &why), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_client_values),
		cmocka_unit_test(test_sig_prefix_flag),
		cmocka_unit_test(test_every_truncation),
		cmocka_unit_test(test_unusable_clients),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
