// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for port ranges (user/listen/port_range.c and -l/-4/-6 in
 * user/cli/options.c): "ADDR:LO-HI", the 1:1 and all-to-one mappings, the
 * pin directory, and each bad input with its one-line message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include "cli/options.h"
#include "lib/config.h"
#include "listen/port_range.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof(a[0])) - 1)

static void test_parse_forms(void **state)
{
	struct sockaddr_storage ss;
	const char *reason;
	uint16_t hi;

	assert_int_equal(mmp_parse_hostport_range("127.0.0.1:7000-7999", &ss, &hi, &reason), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(mmp_sa_port(&ss), 7000);
	assert_int_equal(hi, 7999);
	assert_int_equal(mmp_parse_hostport_range("[::1]:1-65535", &ss, &hi, &reason), 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(mmp_sa_port(&ss), 1);
	assert_int_equal(hi, 65535);
	/* A single port is what it always was; LO-LO is one port too. */
	assert_int_equal(mmp_parse_hostport_range("0.0.0.0:8443", &ss, &hi, &reason), 0);
	assert_int_equal(mmp_sa_port(&ss), 8443);
	assert_int_equal(hi, 8443);
	assert_int_equal(mmp_parse_hostport_range("10.0.0.1:53-53", &ss, &hi, &reason), 0);
	assert_int_equal(hi, 53);
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *in, *why;
	} cases[] = {
		{ "127.0.0.1:9000-8000", "above the last" },
		{ "127.0.0.1:0-10", "port 0" },
		{ "127.0.0.1:1-0", "port 0" },
		{ "127.0.0.1:7000-", "LO-HI" },
		{ "127.0.0.1:7000-70000", "LO-HI" },
		{ "127.0.0.1:7000-7x", "LO-HI" },
		{ "127.0.0.1:-7000", "port" },
		{ "[::1]:5-4", "above the last" },
		{ "nohost:1-2", "IPv4" },
	};
	struct sockaddr_storage ss;
	const char *reason;
	uint16_t hi;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		reason = NULL;
		assert_int_equal(mmp_parse_hostport_range(cases[i].in, &ss, &hi, &reason), -EINVAL);
		assert_non_null(reason);
		if (!strstr(reason, cases[i].why))
			fail_msg("%s: reason '%s' does not say '%s'", cases[i].in, reason, cases[i].why);
	}
}

static void test_config_ranges(void **state)
{
	char *one_to_one[] = { "mmproxy-bpf", "-l", "127.0.0.1:7000-7999", "-4", "127.0.0.1:9000-9999",
			       "-6", "[::1]:9000-9999", NULL };
	char *all_to_one[] = { "mmproxy-bpf", "run", "-p", "udp", "-l", "[::]:7000-7009", "-4", "127.0.0.1:53",
			       "-a", "/etc/lbs.txt", NULL };
	char *single[] = { "mmproxy-bpf", "-l", "0.0.0.0:8443", NULL };
	struct sockaddr_storage up;
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(one_to_one), one_to_one, &cfg), 0);
	assert_int_equal(cfg.n_ports, 1000);
	assert_int_equal(cfg.listen_port_hi, 7999);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-7000-7999");
	mmp_port_range_upstream(&cfg, AF_INET, 7000, &up);
	assert_int_equal(mmp_sa_port(&up), 9000);
	mmp_port_range_upstream(&cfg, AF_INET, 7999, &up);
	assert_int_equal(mmp_sa_port(&up), 9999);
	mmp_port_range_upstream(&cfg, AF_INET6, 7123, &up);
	assert_int_equal(up.ss_family, AF_INET6);
	assert_int_equal(mmp_sa_port(&up), 9123);

	assert_int_equal(mmp_config_parse(ARGC(all_to_one), all_to_one, &cfg), 0);
	assert_int_equal(cfg.n_ports, 10);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/udp-[::]-7000-7009");
	mmp_port_range_upstream(&cfg, AF_INET, 7009, &up);
	assert_int_equal(mmp_sa_port(&up), 53);
	mmp_port_range_upstream(&cfg, AF_INET6, 7005, &up);
	assert_int_equal(mmp_sa_port(&up), 443); /* -6's default: one port */

	assert_int_equal(mmp_config_parse(ARGC(single), single, &cfg), 0);
	assert_int_equal(cfg.n_ports, 1);
	assert_int_equal(cfg.max_ports, MMP_MAX_PORTS_DEFAULT);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcp-0_0_0_0-8443");
}

/* The checks across options: each fails with one line naming the cause and the fix. */
static void test_validate_messages(void **state)
{
	char *sizes[] = { "mmproxy-bpf", "-l", "127.0.0.1:7000-7999", "-4", "127.0.0.1:9000-9099", NULL };
	char *sizes6[] = { "mmproxy-bpf", "-l", "127.0.0.1:7000-7009", "-6", "[::1]:1-2", NULL };
	char *cap[] = { "mmproxy-bpf", "-l", "127.0.0.1:1000-6000", NULL };
	char *cap_flag[] = { "mmproxy-bpf", "-l", "127.0.0.1:7000-7010", "--max-ports", "10", NULL };
	char *raised[] = { "mmproxy-bpf", "-l", "127.0.0.1:1000-6000", "--max-ports", "5001", NULL };
	char *target_only[] = { "mmproxy-bpf", "-4", "127.0.0.1:9000-9001", NULL };
	char *bad_cap[] = { "mmproxy-bpf", "--max-ports", "0", NULL };
	struct mmp_config cfg;
	char msg[320];

	assert_int_equal(mmp_config_parse(ARGC(sizes), sizes, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(sizes6), sizes6, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(cap), cap, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(cap_flag), cap_flag, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(target_only), target_only, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(bad_cap), bad_cap, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(raised), raised, &cfg), 0);
	assert_int_equal(cfg.n_ports, 5001);

	/* The messages themselves. */
	assert_int_equal(mmp_config_parse(ARGC(raised), raised, &cfg), 0);
	cfg.max_ports = 4096;
	assert_int_equal(mmp_port_ranges_validate(&cfg, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "5001 ports"));
	assert_non_null(strstr(msg, "--max-ports 4096"));
	assert_null(strchr(msg, '\n'));
	cfg.max_ports = 65535;
	cfg.target4_port_hi = (uint16_t)(mmp_sa_port(&cfg.target4) + 9);
	assert_int_equal(mmp_port_ranges_validate(&cfg, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "-4 127.0.0.1:443-452 has 10 ports but -l has 5001"));
	assert_non_null(strstr(msg, "same size"));
	assert_non_null(strstr(msg, "single port"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_forms),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_config_ranges),
		cmocka_unit_test(test_validate_messages),
	};

	return cmocka_run_group_tests_name("port_range", tests, NULL, NULL);
}
