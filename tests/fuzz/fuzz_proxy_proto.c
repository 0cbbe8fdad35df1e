// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the PROXY protocol parser (user/proto/proxy_proto.c).
 *
 * Built straight from the sources with -fsanitize=fuzzer,address,undefined
 * (see tests/unit/unit.mk). Besides memory safety it checks the contract of
 * proxy_proto.h on every input, through pp_parse, pp_parse_v1 and
 * pp_parse_v2:
 *  - the status is one of the three enum values, *reason is non-NULL on
 *    PP_INVALID;
 *  - PP_OK means 0 < header_len <= len (<= 107 for v1), TLV pointers lie in
 *    the header, addresses are AF_UNSPEC unless PROXY over INET/INET6;
 *  - pp_parse agrees with the version-specific parser its first byte picks;
 *  - parsing exactly header_len bytes gives the same header;
 *  - every prefix of an OK header is PP_NEED_MORE;
 *  - every surfaced TLV lies in the header, and its log form
 *    (pp_tlv_format) is printable ASCII without spaces inside a value,
 *    within PP_TLV_FMT_LEN;
 *  - over growing prefixes the status only moves NEED_MORE -> OK or
 *    NEED_MORE -> INVALID, never back (early rejection is final, and a
 *    complete header stays complete whatever follows).
 * Prefixes are parsed from exact-size heap copies, so ASan sees any read past
 * the given length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "proto/pp_tlv_fmt.h"
#include "proto/proxy_proto.h"

/* Prefixes up to this length are all swept, each from its own heap copy. */
#define SWEEP_MAX 512
/* Prefixes this close below header_len are checked for long headers too. */
#define TAIL_CHECK 64

typedef enum pp_status (*parse_fn)(const uint8_t *, size_t, struct pp_header *, const char **);

static const struct {
	const char *name;
	parse_fn fn;
} apis[] = {
	{ "pp_parse", pp_parse },
	{ "pp_parse_v1", pp_parse_v1 },
	{ "pp_parse_v2", pp_parse_v2 },
};

#define N_APIS (sizeof(apis) / sizeof(apis[0]))

static void fail(const char *api, size_t len, const char *what)
{
	fprintf(stderr, "fuzz_proxy_proto: %s, len %zu: %s\n", api, len, what);
	abort();
}

#define CHECK(cond, api, len)                                   \
	do {                                                    \
		if (!(cond))                                    \
			fail((api), (len), #cond);              \
	} while (0)

static bool in_header(const uint8_t *buf, const struct pp_header *h, const uint8_t *p, size_t n)
{
	return p >= buf && p <= buf + h->header_len && n <= (size_t)(buf + h->header_len - p);
}

static bool bytes_ok(const uint8_t *buf, const struct pp_header *h, const struct pp_bytes *b)
{
	return b->ptr ? in_header(buf, h, b->ptr, b->len) : b->len == 0;
}

/* The surfaced TLVs lie in the header; their log form is bounded and printable. */
static void check_tlvs(const char *api, const uint8_t *buf, size_t len, const struct pp_header *h)
{
	char out[PP_TLV_FMT_LEN];
	size_t n;

	CHECK(bytes_ok(buf, h, &h->tlv.alpn), api, len);
	CHECK(bytes_ok(buf, h, &h->tlv.netns), api, len);
	CHECK(bytes_ok(buf, h, &h->tlv.ssl_cn), api, len);
	CHECK(bytes_ok(buf, h, &h->tlv.aws_vpce_id), api, len);
	CHECK(!h->tlv.ssl_cn.ptr || h->tlv.ssl, api, len);
	memset(out, 0x5A, sizeof(out));
	pp_tlv_format(h, out, sizeof(out));
	n = strnlen(out, sizeof(out));
	CHECK(n < sizeof(out), api, len);
	for (size_t i = 0; i < n; i++)
		CHECK(out[i] >= ' ' && out[i] < 0x7f, api, len);
}

/* Check one result against the contract. */
static void check_result(const char *api, const uint8_t *buf, size_t len, enum pp_status st,
			 const struct pp_header *h, const char *reason)
{
	bool addrs;

	CHECK(st == PP_INVALID || st == PP_NEED_MORE || st == PP_OK, api, len);
	if (st == PP_INVALID)
		CHECK(reason != NULL, api, len);
	if (st != PP_OK)
		return;
	CHECK(h->header_len > 0 && h->header_len <= len, api, len);
	CHECK(h->version == 1 || h->version == 2, api, len);
	if (h->version == 1)
		CHECK(h->header_len <= PP_V1_MAX_LEN, api, len);
	else
		CHECK(h->header_len >= 16, api, len);
	CHECK(h->command == PP_CMD_LOCAL || h->command == PP_CMD_PROXY, api, len);
	CHECK(h->family <= PP_FAM_UNIX && h->transport <= PP_TRANSPORT_DGRAM, api, len);
	if (h->authority)
		CHECK(in_header(buf, h, h->authority, h->authority_len), api, len);
	else
		CHECK(h->authority_len == 0, api, len);
	if (h->unique_id) {
		CHECK(in_header(buf, h, h->unique_id, h->unique_id_len), api, len);
		CHECK(h->unique_id_len <= 128, api, len);
	} else {
		CHECK(h->unique_id_len == 0, api, len);
	}
	check_tlvs(api, buf, len, h);
	addrs = h->command == PP_CMD_PROXY &&
		(h->family == PP_FAM_INET || h->family == PP_FAM_INET6);
	if (!addrs) {
		CHECK(h->src.ss_family == AF_UNSPEC && h->dst.ss_family == AF_UNSPEC, api, len);
	} else if (h->src.ss_family != AF_UNSPEC) {
		int want = h->family == PP_FAM_INET ? AF_INET : AF_INET6;

		CHECK(h->src.ss_family == want, api, len);
		CHECK(h->dst.ss_family == h->src.ss_family, api, len);
	} else {
		CHECK(h->dst.ss_family == AF_UNSPEC && h->version == 2 &&
			      h->transport == PP_TRANSPORT_UNSPEC, api, len);
	}
}

/* Parse len bytes of data from an exact-size heap copy, and check. */
static enum pp_status parse_exact(size_t api, const uint8_t *data, size_t len, struct pp_header *h)
{
	uint8_t *buf = malloc(len ? len : 1);
	const char *reason = NULL;
	enum pp_status st;

	if (!buf)
		abort();
	if (len)
		memcpy(buf, data, len);
	memset(h, 0x5A, sizeof(*h));
	st = apis[api].fn(buf, len, h, &reason);
	check_result(apis[api].name, buf, len, st, h, reason);
	/* Rebase TLV pointers onto data before the copy goes away. */
	if (st == PP_OK && h->authority)
		h->authority = data + (h->authority - buf);
	if (st == PP_OK && h->unique_id)
		h->unique_id = data + (h->unique_id - buf);
	if (st == PP_OK) {
		struct pp_bytes *tlvs[] = { &h->tlv.alpn, &h->tlv.netns, &h->tlv.ssl_cn, &h->tlv.aws_vpce_id };

		for (size_t i = 0; i < sizeof(tlvs) / sizeof(tlvs[0]); i++)
			if (tlvs[i]->ptr)
				tlvs[i]->ptr = data + (tlvs[i]->ptr - buf);
	}
	free(buf);
	return st;
}

/* Parse in place (no copy): for prefixes of long inputs. */
static enum pp_status parse_inplace(size_t api, const uint8_t *data, size_t len,
				    struct pp_header *h)
{
	const char *reason = NULL;
	enum pp_status st;

	memset(h, 0x5A, sizeof(*h));
	st = apis[api].fn(data, len, h, &reason);
	check_result(apis[api].name, data, len, st, h, reason);
	return st;
}

static bool same_header(const struct pp_header *a, const struct pp_header *b)
{
	return a->version == b->version && a->command == b->command && a->family == b->family &&
	       a->transport == b->transport && a->header_len == b->header_len &&
	       memcmp(&a->src, &b->src, sizeof(a->src)) == 0 &&
	       memcmp(&a->dst, &b->dst, sizeof(a->dst)) == 0 && a->authority == b->authority &&
	       a->authority_len == b->authority_len && a->unique_id == b->unique_id &&
	       a->unique_id_len == b->unique_id_len && a->crc32c_present == b->crc32c_present &&
	       memcmp(&a->tlv, &b->tlv, sizeof(a->tlv)) == 0;
}

/*
 * Statuses over growing prefixes must read NEED_MORE*, then OK or INVALID
 * for good. Sweeps the first SWEEP_MAX + 1 prefixes.
 */
static void check_monotonic(size_t api, const uint8_t *data, size_t len)
{
	enum pp_status prev = PP_NEED_MORE, st;
	struct pp_header h, first_ok;
	size_t k, end = len < SWEEP_MAX ? len : SWEEP_MAX;

	for (k = 0; k <= end; k++) {
		st = parse_exact(api, data, k, &h);
		if (prev == PP_INVALID)
			CHECK(st == PP_INVALID, apis[api].name, k);
		if (prev == PP_OK) {
			CHECK(st == PP_OK, apis[api].name, k);
			CHECK(same_header(&h, &first_ok), apis[api].name, k);
		}
		if (prev == PP_NEED_MORE && st == PP_OK) {
			CHECK(h.header_len == k, apis[api].name, k);
			first_ok = h;
		}
		prev = st;
	}
}

/* An OK header: exactly header_len bytes parse the same; shorter NEED_MORE. */
static void check_ok_header(size_t api, const uint8_t *data, const struct pp_header *full)
{
	size_t hlen = full->header_len, k;
	struct pp_header h;

	CHECK(parse_exact(api, data, hlen, &h) == PP_OK, apis[api].name, hlen);
	CHECK(same_header(&h, full), apis[api].name, hlen);
	for (k = 0; k < hlen; k++) {
		enum pp_status st;

		if (k <= SWEEP_MAX || k + TAIL_CHECK >= hlen)
			st = parse_exact(api, data, k, &h);
		else
			st = parse_inplace(api, data, k, &h);
		CHECK(st == PP_NEED_MORE, apis[api].name, k);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum pp_status st[N_APIS];
	struct pp_header h[N_APIS];
	size_t i;

	for (i = 0; i < N_APIS; i++) {
		st[i] = parse_exact(i, data, size, &h[i]);
		if (st[i] == PP_OK)
			check_ok_header(i, data, &h[i]);
		check_monotonic(i, data, size);
	}

	/* pp_parse must be the parser its first byte selects. */
	if (size == 0) {
		CHECK(st[0] == PP_NEED_MORE, "pp_parse", size);
	} else if (data[0] == 'P') {
		CHECK(st[0] == st[1], "pp_parse", size);
		if (st[0] == PP_OK)
			CHECK(same_header(&h[0], &h[1]), "pp_parse", size);
		CHECK(st[2] == PP_INVALID, "pp_parse_v2", size);
	} else if (data[0] == '\r') {
		CHECK(st[0] == st[2], "pp_parse", size);
		if (st[0] == PP_OK)
			CHECK(same_header(&h[0], &h[2]), "pp_parse", size);
		CHECK(st[1] == PP_INVALID, "pp_parse_v1", size);
	} else {
		CHECK(st[0] == PP_INVALID && st[1] == PP_INVALID && st[2] == PP_INVALID,
		      "pp_parse", size);
	}
	return 0;
}
