// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for --allowed-endpoints: the file's lines
 * (user/proto/endpoint_list.c), matching a header's cloud TLVs, and the
 * live policy's reload (user/policy/endpoint_policy.c): a bad file keeps the
 * old list, a good one replaces it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy/endpoint_policy.h"
#include "proto/endpoint_list.h"

static int parse(const char *text, struct mmp_endpoint *ep, const char **reason)
{
	char line[256];

	snprintf(line, sizeof(line), "%s", text);
	*reason = NULL;
	return mmp_endpoint_parse_line(line, ep, reason);
}

static void test_good_lines(void **state)
{
	struct mmp_endpoint ep;
	const char *reason;

	assert_int_equal(parse("aws:vpce-0123456789abcdef0\n", &ep, &reason), 1);
	assert_int_equal(ep.kind, MMP_EP_AWS);
	assert_string_equal(ep.vpce, "vpce-0123456789abcdef0");
	assert_int_equal(parse("  aws:vpce-0a1b2c3d  # short form\r\n", &ep, &reason), 1);
	assert_string_equal(ep.vpce, "vpce-0a1b2c3d");
	assert_int_equal(parse("azure:305419896", &ep, &reason), 1);
	assert_int_equal(ep.kind, MMP_EP_AZURE);
	assert_true(ep.id == 305419896u);
	assert_int_equal(parse("azure:4294967295", &ep, &reason), 1);
	assert_int_equal(parse("azure:0", &ep, &reason), 1);
	assert_int_equal(parse("gcp:18446744073709551615", &ep, &reason), 1);
	assert_true(ep.id == UINT64_MAX);
	assert_int_equal(parse("# a comment", &ep, &reason), 0);
	assert_int_equal(parse("   \t\n", &ep, &reason), 0);
}

static void test_bad_lines(void **state)
{
	static const char *const bad[] = {
		"vpce-0123456789abcdef0", /* no kind */
		"aws:vpce-0123456789ABCDEF0", /* AWS prints lowercase */
		"aws:vpce-0123456789abcdef01", /* 18 digits */
		"aws:vpce-0123", /* too short */
		"aws:0123456789abcdef0", /* no vpce- */
		"aws:vpce-0123456789abcdefg",
		"aws:",
		"azure:4294967296", /* over 32 bits */
		"azure:-1",
		"azure:0x12345678",
		"azure:012",
		"azure:",
		"azure:1 2",
		"gcp:18446744073709551616", /* over 64 bits */
		"gcp:12a",
		"AWS:vpce-0123456789abcdef0",
		"ec2:i-0123",
	};
	struct mmp_endpoint ep;
	const char *reason;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &ep, &reason), -EINVAL);
		assert_non_null(reason);
		assert_non_null(strstr(reason, "write ")); /* every reason says how to fix it */
	}
}

static char *write_file(const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/mmp-test-endpoints-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_read_names_file_and_line(void **state)
{
	struct mmp_endpoint_list list = { 0 };
	char why[512], want[128];
	char *path = write_file("# endpoints\naws:vpce-0123456789abcdef0\n\nazure:nope\n");

	assert_int_equal(mmp_endpoint_list_read(path, &list, why, sizeof(why)), -EINVAL);
	snprintf(want, sizeof(want), "%s:4: bad Azure LinkID", path);
	assert_memory_equal(why, want, strlen(want));
	assert_int_equal(list.n, 0);
	assert_null(list.v);
	unlink(path);
	assert_true(mmp_endpoint_list_read("/nonexistent/endpoints", &list, why, sizeof(why)) < 0);
	assert_non_null(strstr(why, "--allowed-endpoints"));
}

static void test_match(void **state)
{
	struct mmp_endpoint_list list = { 0 };
	char why[512];
	char *path = write_file("aws:vpce-0123456789abcdef0\nazure:305419896\ngcp:1234567890123\n");
	struct pp_tlvs t;

	assert_int_equal(mmp_endpoint_list_read(path, &list, why, sizeof(why)), 3);
	unlink(path);
	memset(&t, 0, sizeof(t));
	assert_false(mmp_endpoint_list_match(&list, &t)); /* no TLV: no endpoint */
	t.aws_vpce_id.ptr = (const uint8_t *)"vpce-0123456789abcdef0";
	t.aws_vpce_id.len = 22;
	assert_true(mmp_endpoint_list_match(&list, &t));
	t.aws_vpce_id.len = 21; /* a prefix is another ID */
	assert_false(mmp_endpoint_list_match(&list, &t));
	memset(&t, 0, sizeof(t));
	t.azure_linkid_present = true;
	t.azure_linkid = 305419896;
	assert_true(mmp_endpoint_list_match(&list, &t));
	t.azure_linkid = 305419897;
	assert_false(mmp_endpoint_list_match(&list, &t));
	memset(&t, 0, sizeof(t));
	t.gcp_psc_id = 305419896; /* Azure's number, GCP's TLV: not a match */
	t.gcp_psc_present = true;
	assert_false(mmp_endpoint_list_match(&list, &t));
	t.gcp_psc_id = 1234567890123ULL;
	assert_true(mmp_endpoint_list_match(&list, &t));
	mmp_endpoint_list_free(&list);
}

/* Reload: a bad file keeps the old list in force; a good one replaces it. LOCAL passes; v1 does not. */
static void test_policy_reload(void **state)
{
	struct mmp_endpoint_policy *p = NULL;
	struct pp_header h;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s", write_file("azure:1\n"));
	assert_int_equal(mmp_endpoint_policy_open(path, &p), 0);
	memset(&h, 0, sizeof(h));
	h.version = 2;
	h.command = PP_CMD_PROXY;
	h.tlv.azure_linkid_present = true;
	h.tlv.azure_linkid = 1;
	assert_true(mmp_endpoint_policy_allowed(p, &h));

	f = fopen(path, "w");
	fputs("azure:2\nazure:bad\n", f);
	fclose(f);
	assert_true(mmp_endpoint_policy_reload(p) < 0);
	assert_true(mmp_endpoint_policy_allowed(p, &h)); /* the old list stays */

	f = fopen(path, "w");
	fputs("azure:2\n", f);
	fclose(f);
	assert_int_equal(mmp_endpoint_policy_reload(p), 0);
	assert_false(mmp_endpoint_policy_allowed(p, &h));
	h.tlv.azure_linkid = 2;
	assert_true(mmp_endpoint_policy_allowed(p, &h));

	h.tlv.azure_linkid = 3;
	h.command = PP_CMD_LOCAL; /* a health check: no client to impersonate */
	assert_true(mmp_endpoint_policy_allowed(p, &h));
	h.command = PP_CMD_PROXY;
	h.version = 1;
	h.tlv.azure_linkid = 2;
	assert_false(mmp_endpoint_policy_allowed(p, &h)); /* v1 carries no TLVs */
	assert_true(mmp_endpoint_policy_allowed(NULL, &h)); /* no --allowed-endpoints */
	mmp_endpoint_policy_close(p);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_lines),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_read_names_file_and_line),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_policy_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
