// SPDX-License-Identifier: GPL-2.0
/* cmocka tests for the command line (user/cli/options.c): go-mmproxy compatibility, per-command options. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include "cli/options.h"
#include "lib/config.h"
#include "lib/instance.h"
#include "lib/log.h"
#include "lib/protocols.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof(a[0])) - 1)

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

static void test_defaults(void **state)
{
	char *argv[] = { "mmproxy-bpf", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(argv), argv, &cfg), 0);
	assert_int_equal(cfg.command, MMP_CMD_RUN);
	assert_int_equal(cfg.listen.ss_family, AF_INET);
	assert_int_equal(port_of(&cfg.listen), 8443);
	assert_int_equal(port_of(&cfg.target4), 443);
	assert_int_equal(cfg.target6.ss_family, AF_INET6);
	assert_int_equal(cfg.protocol, IPPROTO_TCP);
	assert_int_equal(cfg.header_timeout_ms, 5000);
	assert_int_equal(cfg.close_after_s, 60);
	assert_int_equal(cfg.tc_handoff_delay_ms, 20);
	assert_null(cfg.allowed_path);
	assert_int_equal(cfg.idle_timeout_s, 7200);
	assert_int_equal(cfg.keepalive_idle_s, 60);
	assert_int_equal(cfg.keepalive_intvl_s, 10);
	assert_int_equal(cfg.keepalive_cnt, 6);
}

/* Issue 26 (7): UDP needs -a or an explicit --udp-any-source; TCP and check do not. */
static void test_udp_needs_allow_list(void **state)
{
	char *bare[] = { "mmproxy-bpf", "run", "-p", "udp", NULL };
	char *with_a[] = { "mmproxy-bpf", "run", "-p", "udp", "-a", "/etc/lbs.txt", NULL };
	char *any[] = { "mmproxy-bpf", "-p", "udp", "--udp-any-source", NULL };
	char *check[] = { "mmproxy-bpf", "check", "-p", "udp", NULL };
	char *tcp[] = { "mmproxy-bpf", "run", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(bare), bare, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(with_a), with_a, &cfg), 0);
	assert_int_equal(mmp_config_parse(ARGC(any), any, &cfg), 0);
	assert_true(cfg.udp_any_source);
	assert_int_equal(mmp_config_parse(ARGC(check), check, &cfg), 0);
	assert_int_equal(mmp_config_parse(ARGC(tcp), tcp, &cfg), 0);
}

/* Issue 26 (8): --keepalive IDLE or IDLE,INTVL,CNT, 0 for off; --idle-timeout 0 for never. */
static void test_keepalive_and_idle(void **state)
{
	char ka_full[] = "30,5,3", ka_idle[] = "90", ka_off[] = "0";
	char *full[] = { "mmproxy-bpf", "--keepalive", ka_full, "--idle-timeout", "0", NULL };
	char *idle[] = { "mmproxy-bpf", "--keepalive", ka_idle, NULL };
	char *off[] = { "mmproxy-bpf", "--keepalive", ka_off, NULL };
	const char *bad[] = { "x", "5,", "5,1", "5,0,3", "5,1,0", "5,1,128", "32768", "-1", "5,1,3,4", "" };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(full), full, &cfg), 0);
	assert_int_equal(cfg.keepalive_idle_s, 30);
	assert_int_equal(cfg.keepalive_intvl_s, 5);
	assert_int_equal(cfg.keepalive_cnt, 3);
	assert_int_equal(cfg.idle_timeout_s, 0);
	assert_int_equal(mmp_config_parse(ARGC(idle), idle, &cfg), 0);
	assert_int_equal(cfg.keepalive_idle_s, 90);
	assert_int_equal(cfg.keepalive_intvl_s, 10); /* the defaults stay */
	assert_int_equal(cfg.keepalive_cnt, 6);
	assert_int_equal(mmp_config_parse(ARGC(off), off, &cfg), 0);
	assert_int_equal(cfg.keepalive_idle_s, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char val[32];
		char *argv[] = { "mmproxy-bpf", "--keepalive", val, NULL };

		snprintf(val, sizeof(val), "%s", bad[i]);
		if (mmp_config_parse(ARGC(argv), argv, &cfg) == 0)
			fail_msg("--keepalive '%s' was accepted", bad[i]);
	}
}

/* A go-mmproxy unit file's ExecStart line must parse unchanged. */
static void test_go_mmproxy_flags(void **state)
{
	char *argv[] = { "mmproxy-bpf", "-l", "0.0.0.0:25577", "-4", "127.0.0.1:25578", "-6", "[::1]:25578",
			 "-a", "/etc/allowed.txt", "-p", "tcp", "-m", "123", "-listeners", "4", "-v", "2", "-c", "30", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(argv), argv, &cfg), 0);
	assert_int_equal(port_of(&cfg.listen), 25577);
	assert_int_equal(port_of(&cfg.target4), 25578);
	assert_int_equal(port_of(&cfg.target6), 25578);
	assert_string_equal(cfg.allowed_path, "/etc/allowed.txt");
	assert_int_equal(cfg.mark, 123);
	assert_int_equal(cfg.listeners, 4);
	assert_int_equal(mmp_verbosity, 2);
	assert_int_equal(cfg.close_after_s, 30);
	mmp_verbosity = 0;
}

static void test_long_options_and_subcommand(void **state)
{
	char *argv[] = { "mmproxy-bpf", "run", "--listen-addr", "[::]:8443", "--ipv4", "127.0.0.1:80", "--ipv6",
			 "[::1]:80", "--allowed-subnets", "a.txt", "--protocol", "tcp", "--mark", "7", "--listeners",
			 "2", "--header-timeout", "3", "--engine", "splice", "--tc-handoff-delay", "0", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(argv), argv, &cfg), 0);
	assert_int_equal(cfg.listen.ss_family, AF_INET6);
	assert_int_equal(cfg.header_timeout_ms, 3000);
	assert_int_equal(cfg.engine, MMP_ENGINE_SPLICE);
	assert_int_equal(cfg.mark, 7);
	assert_int_equal(cfg.tc_handoff_delay_ms, 0);
}

static void test_subcommands(void **state)
{
	char *check[] = { "mmproxy-bpf", "check", NULL };
	char *setup[] = { "mmproxy-bpf", "setup-routing", "--table", "100", NULL };
	char *help[] = { "mmproxy-bpf", "--help", NULL };
	char *stats_help[] = { "mmproxy-bpf", "stats", "--help", NULL };
	char *cleanup[] = { "mmproxy-bpf", "cleanup", "--pin-dir", "/sys/fs/bpf/x", "-v", "1", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(check), check, &cfg), 0);
	assert_int_equal(cfg.command, MMP_CMD_CHECK);
	assert_int_equal(mmp_config_parse(ARGC(setup), setup, &cfg), 0);
	assert_int_equal(cfg.command, MMP_CMD_SETUP_ROUTING);
	assert_int_equal(cfg.route_table, 100);
	assert_int_equal(mmp_config_parse(ARGC(help), help, &cfg), 0);
	assert_int_equal(cfg.command, MMP_CMD_HELP);
	assert_int_equal(mmp_config_parse(ARGC(stats_help), stats_help, &cfg), 0);
	assert_int_equal(cfg.command, MMP_CMD_STATS);
	assert_true(cfg.help);
	assert_int_equal(mmp_config_parse(ARGC(cleanup), cleanup, &cfg), 0);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/x");
}

/* One pin directory per instance by default (docs/DESIGN.md §6a): from -p and -l; stats/cleanup choose. */
static void test_pin_dir_per_instance(void **state)
{
	char *run[] = { "mmproxy-bpf", "-l", "0.0.0.0:8443", NULL };
	char *udp6[] = { "mmproxy-bpf", "run", "-p", "udp", "-l", "[::]:53", "--udp-any-source", NULL };
	char *given[] = { "mmproxy-bpf", "-l", "0.0.0.0:9", "--pin-dir", "/sys/fs/bpf/mine", NULL };
	char *stats[] = { "mmproxy-bpf", "stats", NULL };
	char *stats_l[] = { "mmproxy-bpf", "stats", "-l", "127.0.0.1:7000", NULL };
	char *all[] = { "mmproxy-bpf", "cleanup", "--all", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(run), run, &cfg), 0);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcp-0_0_0_0-8443");
	assert_int_equal(mmp_config_parse(ARGC(udp6), udp6, &cfg), 0);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/udp-[::]-53");
	assert_int_equal(mmp_config_parse(ARGC(given), given, &cfg), 0);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mine");
	assert_int_equal(mmp_config_parse(ARGC(stats), stats, &cfg), 0);
	assert_null(cfg.pin_dir);
	assert_int_equal(mmp_config_parse(ARGC(stats_l), stats_l, &cfg), 0);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcp-127_0_0_1-7000");
	assert_int_equal(mmp_config_parse(ARGC(all), all, &cfg), 0);
	assert_true(cfg.all);
	assert_null(cfg.pin_dir);
}

/* Issue 27 (3): -p tcp,udp (or udp,tcp) is one instance: TCP's config with UDP beside it, one pin directory. */
static void test_tcp_and_udp(void **state)
{
	char *both[] = { "mmproxy-bpf", "run", "-p", "tcp,udp", "-l", "0.0.0.0:7000", "-a", "/etc/lbs.txt", NULL };
	char *swapped[] = { "mmproxy-bpf", "-p", "udp,tcp", "-l", "[::]:7100-7103", "--udp-any-source", NULL };
	char *no_a[] = { "mmproxy-bpf", "run", "-p", "tcp,udp", NULL };
	char *bad[] = { "mmproxy-bpf", "run", "-p", "tcp,udp,tcp", "--udp-any-source", NULL };
	char *last_wins[] = { "mmproxy-bpf", "-p", "tcp,udp", "-p", "tcp", NULL };
	char *stats[] = { "mmproxy-bpf", "stats", "-p", "tcp,udp", "-l", "0.0.0.0:7000", NULL };
	char *cleanup[] = { "mmproxy-bpf", "cleanup", "--protocol", "udp,tcp", "-l", "0.0.0.0:7000", NULL };
	struct mmp_config cfg, udp;

	assert_int_equal(mmp_config_parse(ARGC(both), both, &cfg), 0);
	assert_true(cfg.tcp_and_udp);
	assert_int_equal(cfg.protocol, IPPROTO_TCP);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcpudp-0_0_0_0-7000");
	assert_string_equal(mmp_config_protocol_name(&cfg), "tcpudp");
	assert_true(mmp_config_serves(&cfg, IPPROTO_TCP) && mmp_config_serves(&cfg, IPPROTO_UDP));
	/* The UDP half: its own protocol, the same pin directory (its copy's, not a pointer into cfg). */
	mmp_config_for_protocol(&cfg, IPPROTO_UDP, &udp);
	assert_int_equal(udp.protocol, IPPROTO_UDP);
	assert_string_equal(udp.pin_dir, cfg.pin_dir);
	assert_ptr_equal(udp.pin_dir, udp.pin_dir_derived);
	assert_int_equal(mmp_config_parse(ARGC(swapped), swapped, &cfg), 0);
	assert_true(cfg.tcp_and_udp);
	assert_int_equal(cfg.n_ports, 4);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcpudp-[::]-7100-7103");
	/* UDP's half still needs -a or --udp-any-source. */
	assert_int_equal(mmp_config_parse(ARGC(no_a), no_a, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(bad), bad, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(last_wins), last_wins, &cfg), 0);
	assert_false(cfg.tcp_and_udp);
	assert_false(mmp_config_serves(&cfg, IPPROTO_UDP));
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcp-0_0_0_0-8443");
	/* stats and cleanup with -p tcp,udp -l find the combined instance's directory. */
	assert_int_equal(mmp_config_parse(ARGC(stats), stats, &cfg), 0);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcpudp-0_0_0_0-7000");
	assert_int_equal(mmp_config_parse(ARGC(cleanup), cleanup, &cfg), 0);
	assert_string_equal(cfg.pin_dir, "/sys/fs/bpf/mmproxy-bpf/tcpudp-0_0_0_0-7000");
}

/* --lift-pipe-limits: only where --engine splice grows relay pipes of TCP flows (docs/DESIGN.md §3d). */
static void test_lift_pipe_limits(void **state)
{
	char *splice[] = { "mmproxy-bpf", "run", "--engine", "splice", "--lift-pipe-limits", NULL };
	char *before[] = { "mmproxy-bpf", "run", "--lift-pipe-limits", "--engine", "splice", NULL };
	char *both[] = { "mmproxy-bpf", "run", "-p", "tcp,udp", "--udp-any-source", "--engine", "splice",
			 "--lift-pipe-limits", NULL };
	char *dflt[] = { "mmproxy-bpf", "run", "--lift-pipe-limits", NULL };
	char *tc[] = { "mmproxy-bpf", "run", "--engine", "tc", "--lift-pipe-limits", NULL };
	char *udp[] = { "mmproxy-bpf", "run", "-p", "udp", "--udp-any-source", "--engine", "splice",
			"--lift-pipe-limits", NULL };
	char *stats[] = { "mmproxy-bpf", "stats", "--lift-pipe-limits", NULL };
	char *off[] = { "mmproxy-bpf", "run", "--engine", "splice", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(off), off, &cfg), 0);
	assert_false(cfg.lift_pipe_limits);
	assert_int_equal(mmp_config_parse(ARGC(splice), splice, &cfg), 0);
	assert_true(cfg.lift_pipe_limits);
	assert_int_equal(mmp_config_parse(ARGC(before), before, &cfg), 0); /* the engine is checked after every flag */
	assert_true(cfg.lift_pipe_limits);
	assert_int_equal(mmp_config_parse(ARGC(both), both, &cfg), 0);
	assert_int_equal(mmp_config_parse(ARGC(dflt), dflt, &cfg), -EINVAL); /* auto: tc-eligible flows keep 64 KiB */
	assert_int_equal(mmp_config_parse(ARGC(tc), tc, &cfg), -EINVAL);
	assert_int_equal(mmp_config_parse(ARGC(udp), udp, &cfg), -EINVAL); /* UDP has no relay pipes */
	assert_int_equal(mmp_config_parse(ARGC(stats), stats, &cfg), -EINVAL);
}

/* TC filter identities: the legacy default keeps its fixed ones; UDP's sort ahead of every tc engine filter. */
static void test_tc_identity(void **state)
{
	struct mmp_tc_id legacy = mmp_instance_tc_id(IPPROTO_TCP, "/sys/fs/bpf/mmproxy-bpf");
	struct mmp_tc_id a = mmp_instance_tc_id(IPPROTO_TCP, "/sys/fs/bpf/mmproxy-bpf/tcp-0_0_0_0-8443");
	struct mmp_tc_id b = mmp_instance_tc_id(IPPROTO_TCP, "/sys/fs/bpf/mmproxy-bpf/tcp-0_0_0_0-8444");
	struct mmp_tc_id u = mmp_instance_tc_id(IPPROTO_UDP, "/sys/fs/bpf/mmproxy-bpf/udp-0_0_0_0-8443");

	assert_int_equal(legacy.handle, 0x4d4d);
	assert_int_equal(legacy.prio, 0x4d4d);
	assert_int_equal(mmp_instance_tc_id(IPPROTO_UDP, "/sys/fs/bpf/mmproxy-bpf").prio, 0x4d40);
	assert_int_not_equal(a.prio, b.prio);
	assert_true(a.prio >= 0x4e00 && a.prio < 0x5e00);
	assert_int_equal(u.handle, 0x4d55);
	assert_true(u.prio < 0x4d40);
}

static void test_bad_values(void **state)
{
	char *cases[][6] = { /* each row NULL-terminated: at most 5 words */
		{ "mmproxy-bpf", "-l", "1.2.3.4", NULL }, /* no port */
		{ "mmproxy-bpf", "-l", "1.2.3.4:70000", NULL },
		{ "mmproxy-bpf", "-4", "[::1]:443", NULL }, /* IPv6 given to -4 */
		{ "mmproxy-bpf", "-6", "127.0.0.1:443", NULL },
		{ "mmproxy-bpf", "-p", "sctp", NULL },
		{ "mmproxy-bpf", "-v", "3", NULL },
		{ "mmproxy-bpf", "-m", "-1", NULL },
		{ "mmproxy-bpf", "--listeners", "0", NULL },
		{ "mmproxy-bpf", "--engine", "warp", NULL },
		{ "mmproxy-bpf", "--tc-handoff-delay", "-1", NULL },
		{ "mmproxy-bpf", "--tc-handoff-delay", "60001", NULL },
		{ "mmproxy-bpf", "frobnicate", NULL },
		{ "mmproxy-bpf", "--bogus", NULL },
		{ "mmproxy-bpf", "-l", NULL }, /* missing value */
		/* Each command takes only its own options (regression: cleanup --engine tc was accepted). */
		{ "mmproxy-bpf", "cleanup", "--engine", "tc" },
		{ "mmproxy-bpf", "stats", "--detach", NULL },
		{ "mmproxy-bpf", "cleanup", "--all", "--pin-dir", "/sys/fs/bpf/x" }, /* --all and one instance */
		{ "mmproxy-bpf", "--all", NULL }, /* run takes no --all */
		{ "mmproxy-bpf", "setup-routing", "--pin-dir", "/x" },
		{ "mmproxy-bpf", "version", "--listeners", "2" },
		{ "mmproxy-bpf", "check", "--detach", NULL },
		{ "mmproxy-bpf", "--xdp-mode", "hw", NULL },
		{ "mmproxy-bpf", "--xdp-iface", "an-interface-name-too-long", NULL },
		{ "mmproxy-bpf", "stats", "--xdp-iface", "eth0" },
	};
	struct mmp_config cfg;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int argc = 0;

		while (cases[i][argc])
			argc++;
		if (mmp_config_parse(argc, cases[i], &cfg) == 0)
			fail_msg("case %zu (%s %s) was accepted", i, cases[i][1], cases[i][2] ? cases[i][2] : "");
	}
}

static void test_xdp_options(void **state)
{
	char ifaces[] = "eth0,eth1";
	char *argv[] = { "mmproxy-bpf", "--xdp-iface", ifaces, "--xdp-mode", "skb", NULL };
	char *none[] = { "mmproxy-bpf", NULL };
	struct mmp_config cfg;

	assert_int_equal(mmp_config_parse(ARGC(none), none, &cfg), 0);
	assert_int_equal(cfg.n_xdp_ifaces, 0); /* the gate is opt-in */
	assert_int_equal(cfg.xdp_mode, MMP_XDP_MODE_AUTO);
	assert_int_equal(mmp_config_parse(ARGC(argv), argv, &cfg), 0);
	assert_int_equal(cfg.n_xdp_ifaces, 2);
	assert_string_equal(cfg.xdp_ifaces[0], "eth0");
	assert_string_equal(cfg.xdp_ifaces[1], "eth1");
	assert_int_equal(cfg.xdp_mode, MMP_XDP_MODE_SKB);
}

/* A valid value for each option without a default in the table; a new option needs one here. */
static const char *sample_value(const struct mmp_option *o)
{
	static const struct {
		const char *name, *value;
	} samples[] = {
		{ "allowed-subnets", "/etc/mmproxy/allowed" }, { "allowed-endpoints", "/etc/mmproxy/endpoints" },
		{ "listeners", "2" }, { "verbose", "1" }, { "iface", "lo" }, { "xdp-iface", "lo" },
		{ "xdp-mode", "skb" }, { "pin-dir", "/sys/fs/bpf/x" }, { "metrics", "127.0.0.1:9100" },
	};

	if (o->def)
		return o->def;
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
		if (!strcmp(samples[i].name, o->name))
			return samples[i].value;
	return NULL;
}

static const char *command_word(int cmd)
{
	static const char *const words[] = {
		[MMP_CMD_RUN] = "run", [MMP_CMD_CHECK] = "check", [MMP_CMD_SETUP_ROUTING] = "setup-routing",
		[MMP_CMD_CLEANUP_ROUTING] = "cleanup-routing", [MMP_CMD_STATS] = "stats", [MMP_CMD_CLEANUP] = "cleanup",
	};

	return cmd < (int)(sizeof(words) / sizeof(words[0])) ? words[cmd] : NULL;
}

/* Issue 28: each command's --help lists every option it accepts, and the parser takes every one listed. */
static void test_help_lists_every_option(void **state)
{
	int verbosity = mmp_verbosity;

	for (int cmd = 0; cmd < 32; cmd++) {
		const char *word = command_word(cmd);
		char *text = NULL;
		size_t len = 0;
		FILE *f;

		if (!word)
			continue;
		f = open_memstream(&text, &len);
		mmp_usage(f, cmd);
		fclose(f);
		for (size_t i = 0; i < mmp_options_n; i++) {
			const struct mmp_option *o = &mmp_options[i];
			/* A flag that only one engine takes comes with that engine (test_lift_pipe_limits). */
			bool splice_only = !strcmp(o->name, "lift-pipe-limits");
			char flag[64], *argv[7] = { "mmproxy-bpf", (char *)word, flag, NULL, NULL, NULL, NULL };
			int argc = o->arg ? 4 : 3;
			struct mmp_config cfg;

			if (!(o->commands & (1u << cmd)))
				continue;
			snprintf(flag, sizeof(flag), "--%s", o->name);
			if (!strstr(text, flag))
				fail_msg("%s --help does not list %s", word, flag);
			if (o->arg && !(argv[3] = (char *)sample_value(o)))
				fail_msg("%s: no sample value in test_config.c's samples[]", flag);
			if (splice_only) {
				argv[argc++] = "--engine";
				argv[argc++] = "splice";
			}
			if (mmp_config_parse(argc, argv, &cfg))
				fail_msg("%s %s %s: refused", word, flag, argv[3] ? argv[3] : "");
		}
		free(text);
	}
	mmp_verbosity = verbosity;
}

/* Issue 28: each table default is the one --help states and the one set when the option is absent. */
static void test_defaults_match_help(void **state)
{
	char *bare[] = { "mmproxy-bpf", "run", NULL };
	struct mmp_config want, got;

	assert_int_equal(mmp_config_parse(ARGC(bare), bare, &want), 0);
	want.pin_dir = NULL;
	for (size_t i = 0; i < mmp_options_n; i++) {
		const struct mmp_option *o = &mmp_options[i];
		char flag[64], def[64], *argv[] = { "mmproxy-bpf", "run", flag, def, NULL };

		if (!o->def)
			continue;
		if (!strstr(o->help, "default") || !strstr(o->help, o->def))
			fail_msg("--%s: the help does not state the default %s", o->name, o->def);
		snprintf(flag, sizeof(flag), "--%s", o->name);
		snprintf(def, sizeof(def), "%s", o->def);
		assert_int_equal(mmp_config_parse(ARGC(argv), argv, &got), 0);
		got.pin_dir = NULL;
		if (memcmp(&want, &got, sizeof(want)))
			fail_msg("--%s %s gives another configuration than no --%s", o->name, o->def, o->name);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_go_mmproxy_flags),
		cmocka_unit_test(test_long_options_and_subcommand),
		cmocka_unit_test(test_subcommands),
		cmocka_unit_test(test_pin_dir_per_instance),
		cmocka_unit_test(test_tc_identity),
		cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_xdp_options),
		cmocka_unit_test(test_udp_needs_allow_list),
		cmocka_unit_test(test_tcp_and_udp),
		cmocka_unit_test(test_lift_pipe_limits),
		cmocka_unit_test(test_keepalive_and_idle),
		cmocka_unit_test(test_help_lists_every_option),
		cmocka_unit_test(test_defaults_match_help),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
