// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the JSON writer (user/lib/json.c), the stats --json
 * object (user/cli/stats_json.c), the hand-off histogram
 * (user/core/histogram.c) and the Prometheus text (user/metrics/prom.c).
 * t39-metrics parses the real outputs with json.tool, promtool and
 * prometheus_client.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/stats_json.h"
#include "core/histogram.h"
#include "lib/json.h"
#include "metrics/prom.h"

static char *buf;
static size_t len;

static FILE *mem(void)
{
	free(buf);
	buf = NULL;
	return open_memstream(&buf, &len);
}

/* Structural check: strings closed, braces balanced, no trailing or doubled comma. */
static void assert_json_shape(const char *s)
{
	int depth = 0;
	bool in_str = false;
	char prev = 0;

	for (; *s; s++) {
		if (in_str) {
			if (*s == '\\')
				s++;
			else if (*s == '"')
				in_str = false;
			assert_true((unsigned char)*s >= 0x20 || *s == '\0');
			continue;
		}
		if (*s == '"')
			in_str = true;
		else if (*s == '{')
			depth++;
		else if (*s == '}') {
			assert_true(prev != ',');
			depth--;
		} else if (*s == ',')
			assert_true(prev != ',' && prev != '{');
		assert_true(depth >= 0);
		if (*s != '\n')
			prev = *s;
	}
	assert_false(in_str);
	assert_int_equal(depth, 0);
}

static void test_writer(void **state)
{
	struct mmp_json j;
	FILE *f = mem();

	mmp_json_init(&j, f);
	mmp_json_begin(&j, NULL);
	mmp_json_u64(&j, "a", 1);
	mmp_json_begin(&j, "o");
	mmp_json_end(&j);
	mmp_json_begin(&j, "p");
	mmp_json_str(&j, "s", "q\"b\\\n");
	mmp_json_null(&j, "n");
	mmp_json_end(&j);
	mmp_json_u64(&j, "max", UINT64_MAX);
	mmp_json_end(&j);
	fclose(f);
	assert_string_equal(buf, "{\"a\":1,\"o\":{},\"p\":{\"s\":\"q\\\"b\\\\\\u000a\",\"n\":null},\"max\":18446744073709551615}\n");
	assert_json_shape(buf);
}

static void test_stats_object(void **state)
{
	struct mmp_snapshot s = { 0 };
	FILE *f;

	/* TCP mode with tc: udp, sockmap and xdp are null, every key present. */
	s.has[MMP_FAM_TCP] = s.has[MMP_FAM_TC] = true;
	s.v[MMP_FAM_TCP][MMP_TCP_CNT_accepted] = 7;
	s.has_tc_flows = true;
	s.tc_flows = 2;
	f = mem();
	mmp_stats_json_write(f, "/sys/fs/bpf/x\"y", &s);
	fclose(f);
	assert_json_shape(buf);
	assert_non_null(strstr(buf, "{\"version\":1,\"pin_dir\":\"/sys/fs/bpf/x\\\"y\",\"allowed_subnets\":null,"));
	assert_non_null(strstr(buf, "\"tcp\":{\"accepted\":7,"));
	assert_non_null(strstr(buf, "\"flows\":2,"));
	assert_non_null(strstr(buf, "\"sockmap\":null,\"udp\":null,\"xdp\":null}"));

	/* UDP mode: the drop counters are under udp.counters. */
	memset(&s, 0, sizeof(s));
	s.has[MMP_FAM_UDP] = true;
	s.v[MMP_FAM_UDP][MMP_UDP_CNT_drop_not_allowed] = 3;
	f = mem();
	mmp_stats_json_write(f, "/p", &s);
	fclose(f);
	assert_json_shape(buf);
	assert_non_null(strstr(buf, "\"drop_not_allowed\":3"));
	assert_non_null(strstr(buf, "\"tcp\":null"));
}

static void test_histogram(void **state)
{
	static struct mmp_histogram h;
	struct mmp_hist_snapshot snap;

	mmp_hist_record(&h, 0);
	mmp_hist_record(&h, 500); /* on a bound: counts in it (le) */
	mmp_hist_record(&h, 501);
	mmp_hist_record(&h, 99999999); /* past the last bound: +Inf only */
	mmp_hist_read(&h, &snap);
	assert_int_equal(snap.cumulative[0], 2);
	assert_int_equal(snap.cumulative[1], 3);
	assert_int_equal(snap.cumulative[MMP_HIST_NBOUNDS - 1], 3);
	assert_int_equal(snap.cumulative[MMP_HIST_NBOUNDS], 4);
	assert_int_equal(snap.count, 4);
	assert_int_equal(snap.sum_us, 500 + 501 + 99999999);
}

static void test_prom(void **state)
{
	static struct mmp_histogram h;
	struct mmp_hist_snapshot hs;
	struct mmp_snapshot s = { 0 };
	struct mmp_prom_extra x = { .reloads_ok = 2, .handoff = &hs };
	FILE *f;

	mmp_hist_record(&h, 1500);
	mmp_hist_read(&h, &hs);
	s.has[MMP_FAM_TCP] = true;
	s.v[MMP_FAM_TCP][MMP_TCP_CNT_refused_source] = 4;
	s.v[MMP_FAM_TCP][MMP_TCP_CNT_active] = 9;
	f = mem();
	mmp_prom_write(f, &s, &x);
	fclose(f);
	assert_non_null(strstr(buf, "mmproxy_connections_refused_total{reason=\"source_not_allowed\"} 4\n"));
	assert_non_null(strstr(buf, "# TYPE mmproxy_tcp_active gauge\nmmproxy_tcp_active 9\n"));
	assert_non_null(strstr(buf, "# TYPE mmproxy_tcp_accepted_total counter\n"));
	assert_non_null(strstr(buf, "mmproxy_reloads_total{result=\"ok\"} 2\n"));
	assert_non_null(strstr(buf, "mmproxy_handoff_duration_seconds_bucket{le=\"0.001\"} 0\n"));
	assert_non_null(strstr(buf, "mmproxy_handoff_duration_seconds_bucket{le=\"0.0025\"} 1\n"));
	assert_non_null(strstr(buf, "mmproxy_handoff_duration_seconds_count 1\n"));
	assert_null(strstr(buf, "mmproxy_udp_")); /* no UDP family in TCP mode */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_stats_object),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_prom),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	free(buf);
	return rc;
}
