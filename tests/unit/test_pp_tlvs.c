// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the TLVs the PROXY v2 parser surfaces (ALPN, AUTHORITY,
 * UNIQUE_ID, SSL and its CN, NETNS, and the cloud ones: AWS 0xEA/0x01,
 * Azure 0xEE/0x01, GCP 0xE0), and for their log form (pp_tlv_fmt.c).
 * Each header is byte-exact as the provider documents it; every parse reads
 * from a heap copy of exactly the header's size. The same headers are in
 * tests/fuzz/corpus/proxy_proto/tlv-*.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/pp_tlv_fmt.h"
#include "proto/proxy_proto.h"

/* v2 signature, PROXY over TCP4, then the length (big-endian), split for hex escapes. */
#define SIG "\r\n\r\n\0\r\nQUIT\n" "\x21\x11"
#define SIG_LEN 14
/* 127.0.0.1:8080 -> 10.0.0.2:443 */
#define BLK4 "\x7f\x00\x00\x01" "\x0a\x00\x00\x02" "\x1f\x90" "\x01\xbb"
#define BLK4_LEN 12

/* An AWS VPC endpoint TLV: type 0xEA, length 23, subtype 0x01, 22 ASCII bytes. */
#define AWS_VPCE "vpce-0123456789abcdef0"
#define TLV_AWS "\xea\x00\x17\x01" AWS_VPCE
/* An Azure LinkID TLV: type 0xEE, length 5, subtype 0x01, 0x12345678 little-endian. */
#define TLV_AZURE "\xee\x00\x05\x01\x78\x56\x34\x12"
/* A GCP PSC TLV: type 0xE0, length 8, 1234567890123 (0x11F71FB04CB) big-endian. */
#define TLV_GCP "\xe0\x00\x08\x00\x00\x01\x1f\x71\xfb\x04\xcb"

/* Build the header SIG|len|BLK4|tlvs in a heap buffer of exactly its size. */
static uint8_t *build(const void *tlvs, size_t tlvs_len, size_t *n)
{
	size_t body = BLK4_LEN + tlvs_len;
	uint8_t *b;

	*n = SIG_LEN + 2 + body;
	b = malloc(*n);
	assert_non_null(b);
	memcpy(b, SIG, SIG_LEN);
	b[SIG_LEN] = (uint8_t)(body >> 8);
	b[SIG_LEN + 1] = (uint8_t)body;
	memcpy(b + SIG_LEN + 2, BLK4, BLK4_LEN);
	memcpy(b + SIG_LEN + 2 + BLK4_LEN, tlvs, tlvs_len);
	return b;
}

/* Parse a header of tlvs; the caller frees *buf once done with hdr's pointers. */
static enum pp_status parse_tlvs(const void *tlvs, size_t tlvs_len, struct pp_header *hdr, uint8_t **buf,
				 const char **reason)
{
	size_t n;

	*buf = build(tlvs, tlvs_len, &n);
	return pp_parse(*buf, n, hdr, reason);
}

#define PARSE(lit, hdr, buf, reason) parse_tlvs(lit, sizeof(lit) - 1, hdr, buf, reason)

static void assert_bytes(const struct pp_bytes *b, const char *want)
{
	assert_non_null(b->ptr);
	assert_int_equal(b->len, strlen(want));
	assert_memory_equal(b->ptr, want, b->len);
}

static void test_aws_vpce_exact(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE(TLV_AWS, &h, &buf, &reason), PP_OK);
	assert_bytes(&h.tlv.aws_vpce_id, AWS_VPCE);
	assert_false(h.tlv.azure_linkid_present);
	assert_false(h.tlv.gcp_psc_present);
	free(buf);
}

static void test_azure_linkid_exact(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE(TLV_AZURE, &h, &buf, &reason), PP_OK);
	assert_true(h.tlv.azure_linkid_present);
	assert_int_equal(h.tlv.azure_linkid, 305419896u); /* 0x12345678: little-endian on the wire */
	assert_null(h.tlv.aws_vpce_id.ptr);
	free(buf);
}

static void test_gcp_psc_exact(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE(TLV_GCP, &h, &buf, &reason), PP_OK);
	assert_true(h.tlv.gcp_psc_present);
	assert_true(h.tlv.gcp_psc_id == 1234567890123ULL);
	free(buf);
}

/* Every standard TLV at once, and every cloud one: all surfaced. */
static void test_standard_and_cloud_together(void **state)
{
	static const char tlvs[] = "\x01\x00\x02h2"
				   "\x02\x00\x0b" "example.com"
				   "\x05\x00\x03id1"
				   /* SSL: client 0x07, verify 0, sub-TLVs VERSION "TLSv1.3" and CN "client.example" */
				   "\x20\x00\x20\x07\x00\x00\x00\x00"
				   "\x21\x00\x07TLSv1.3"
				   "\x22\x00\x0e" "client.example"
				   "\x30\x00\x04" "blue" TLV_AWS TLV_AZURE TLV_GCP;
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE(tlvs, &h, &buf, &reason), PP_OK);
	assert_bytes(&h.tlv.alpn, "h2");
	assert_int_equal(h.authority_len, 11);
	assert_memory_equal(h.authority, "example.com", 11);
	assert_int_equal(h.unique_id_len, 3);
	assert_true(h.tlv.ssl);
	assert_int_equal(h.tlv.ssl_client, 7);
	assert_int_equal(h.tlv.ssl_verify, 0);
	assert_bytes(&h.tlv.ssl_cn, "client.example");
	assert_bytes(&h.tlv.netns, "blue");
	assert_bytes(&h.tlv.aws_vpce_id, AWS_VPCE);
	assert_int_equal(h.tlv.azure_linkid, 305419896u);
	assert_true(h.tlv.gcp_psc_id == 1234567890123ULL);
	free(buf);
}

/* A TLV whose length runs past the header's end: invalid, nothing read past it. */
static void test_tlv_runs_past_header(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE("\xea\x00\x40\x01vpce-0123", &h, &buf, &reason), PP_INVALID);
	assert_string_equal(reason, "v2: truncated TLV");
	free(buf);
}

/* Only the type and half the length fit in the header. */
static void test_tlv_truncated_header(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE(TLV_AZURE "\xee\x00", &h, &buf, &reason), PP_INVALID);
	assert_string_equal(reason, "v2: truncated TLV");
	free(buf);
}

/* A header whose bytes stop inside a cloud TLV is incomplete, at every cut. */
static void test_cloud_tlvs_need_more_at_every_cut(void **state)
{
	static const char tlvs[] = TLV_AWS TLV_AZURE TLV_GCP;
	struct pp_header h;
	const char *reason;
	size_t n;
	uint8_t *full = build(tlvs, sizeof(tlvs) - 1, &n);

	for (size_t k = 0; k < n; k++) {
		uint8_t *cut = malloc(k ? k : 1);

		memcpy(cut, full, k);
		assert_int_equal(pp_parse(cut, k, &h, &reason), PP_NEED_MORE);
		free(cut);
	}
	free(full);
}

/* Zero-length values: standard ones are present and empty; cloud ones without a subtype are skipped. */
static void test_zero_length_values(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE("\x01\x00\x00" "\x02\x00\x00" "\xea\x00\x00" "\xee\x00\x00" "\xe0\x00\x00", &h, &buf,
			       &reason),
			 PP_OK);
	assert_non_null(h.tlv.alpn.ptr);
	assert_int_equal(h.tlv.alpn.len, 0);
	assert_non_null(h.authority);
	assert_int_equal(h.authority_len, 0);
	assert_null(h.tlv.aws_vpce_id.ptr);
	assert_false(h.tlv.azure_linkid_present);
	assert_false(h.tlv.gcp_psc_present);
	free(buf);
	/* An AWS TLV with its subtype only: an empty endpoint ID, which no policy line matches. */
	assert_int_equal(PARSE("\xea\x00\x01\x01", &h, &buf, &reason), PP_OK);
	assert_non_null(h.tlv.aws_vpce_id.ptr);
	assert_int_equal(h.tlv.aws_vpce_id.len, 0);
	free(buf);
}

/* The custom range is anyone's: another subtype or length is someone else's TLV, skipped. */
static void test_cloud_other_shapes_skipped(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE("\xea\x00\x03\x02xy" "\xee\x00\x04\x01\x01\x02\x03" "\xe0\x00\x04" "abcd", &h, &buf,
			       &reason),
			 PP_OK);
	assert_null(h.tlv.aws_vpce_id.ptr);
	assert_false(h.tlv.azure_linkid_present);
	assert_false(h.tlv.gcp_psc_present);
	free(buf);
}

/* Two endpoint IDs in one header: which one is it? Refused, for each provider and standard TLV. */
static void test_duplicates_invalid(void **state)
{
	static const struct {
		const char *tlvs;
		size_t len;
	} dups[] = {
#define DUP(x) { x x, sizeof(x x) - 1 }
		DUP(TLV_AWS), DUP(TLV_AZURE), DUP(TLV_GCP), DUP("\x01\x00\x02h2"), DUP("\x30\x00\x01n"),
		DUP("\x20\x00\x05\x01\x00\x00\x00\x00"), DUP("\x02\x00\x01x"),
		{ "\x20\x00\x0b\x01\x00\x00\x00\x00" "\x22\x00\x00" "\x22\x00\x00", 14 },
#undef DUP
	};
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	for (size_t i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
		assert_int_equal(parse_tlvs(dups[i].tlvs, dups[i].len, &h, &buf, &reason), PP_INVALID);
		assert_string_equal(reason, "v2: duplicate TLV");
		free(buf);
	}
}

/* SSL TLVs too short for their fixed fields, or whose sub-TLV overruns them. */
static void test_ssl_malformed(void **state)
{
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE("\x20\x00\x04\x01\x00\x00\x00", &h, &buf, &reason), PP_INVALID);
	assert_string_equal(reason, "v2: SSL TLV shorter than its 5-byte client and verify fields");
	free(buf);
	assert_int_equal(PARSE("\x20\x00\x09\x01\x00\x00\x00\x00" "\x22\x00\x05x", &h, &buf, &reason), PP_INVALID);
	assert_string_equal(reason, "v2: truncated sub-TLV in the SSL TLV");
	free(buf);
}

/* A 60000-byte AUTHORITY parses; its log form is cut at PP_TLV_FMT_VALUE_MAX bytes. */
static void test_huge_authority(void **state)
{
	size_t vlen = 60000, n;
	uint8_t *tlv = malloc(3 + vlen), *buf;
	char out[PP_TLV_FMT_LEN], want[128];
	struct pp_header h;
	const char *reason;

	tlv[0] = 0x02;
	tlv[1] = (uint8_t)(vlen >> 8);
	tlv[2] = (uint8_t)vlen;
	memset(tlv + 3, 'a', vlen);
	buf = build(tlv, 3 + vlen, &n);
	assert_int_equal(pp_parse(buf, n, &h, &reason), PP_OK);
	assert_int_equal(h.authority_len, vlen);
	pp_tlv_format(&h, out, sizeof(out));
	memset(want, 0, sizeof(want));
	strcpy(want, " authority=");
	memset(want + strlen(want), 'a', PP_TLV_FMT_VALUE_MAX);
	strcat(want, "...");
	assert_string_equal(out, want);
	free(buf);
	free(tlv);
}

/* Non-printable bytes, spaces, quotes and '=' are escaped: the line stays one parsable line. */
static void test_non_printable_escaped(void **state)
{
	static const char tlvs[] = "\x02\x00\x08" "a b\n\x1b\"=\\" "\xea\x00\x05\x01" "v\xffp\x00";
	char out[PP_TLV_FMT_LEN];
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE(tlvs, &h, &buf, &reason), PP_OK);
	pp_tlv_format(&h, out, sizeof(out));
	assert_string_equal(out, " authority=a\\x20b\\x0a\\x1b\\x22\\x3d\\x5c aws_vpce=v\\xffp\\x00");
	free(buf);
}

/* The log form of every cloud TLV, and a buffer too small is cut, never overrun. */
static void test_format_cloud_and_small_buffer(void **state)
{
	static const char tlvs[] = "\x01\x00\x02h2" TLV_AWS TLV_AZURE TLV_GCP;
	char out[PP_TLV_FMT_LEN], small[16];
	struct pp_header h;
	const char *reason;
	uint8_t *buf;

	assert_int_equal(PARSE(tlvs, &h, &buf, &reason), PP_OK);
	pp_tlv_format(&h, out, sizeof(out));
	assert_string_equal(out, " alpn=h2 aws_vpce=" AWS_VPCE " azure_linkid=305419896 gcp_psc=1234567890123");
	memset(small, 'X', sizeof(small));
	pp_tlv_format(&h, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, " alpn=h2 aws_vp", sizeof(small) - 1);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aws_vpce_exact),
		cmocka_unit_test(test_azure_linkid_exact),
		cmocka_unit_test(test_gcp_psc_exact),
		cmocka_unit_test(test_standard_and_cloud_together),
		cmocka_unit_test(test_tlv_runs_past_header),
		cmocka_unit_test(test_tlv_truncated_header),
		cmocka_unit_test(test_cloud_tlvs_need_more_at_every_cut),
		cmocka_unit_test(test_zero_length_values),
		cmocka_unit_test(test_cloud_other_shapes_skipped),
		cmocka_unit_test(test_duplicates_invalid),
		cmocka_unit_test(test_ssl_malformed),
		cmocka_unit_test(test_huge_authority),
		cmocka_unit_test(test_non_printable_escaped),
		cmocka_unit_test(test_format_cloud_and_small_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
