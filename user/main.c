// SPDX-License-Identifier: GPL-2.0
/*
 * mmproxy-bpf: a transparent PROXY-protocol proxy. The control plane reads the
 * PROXY header, opens the upstream connection from the client's own ip:port,
 * and hands the pair to a data-path engine. main() parses the options and
 * dispatches to the commands (cli/; `run` is cli/run.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/check.h"
#include "cli/cleanup.h"
#include "cli/options.h"
#include "cli/routing.h"
#include "cli/run.h"
#include "cli/stats.h"
#include "cli/stats_json.h"
#include "lib/config.h"
#include "lib/log.h"

#ifndef MMP_VERSION
#define MMP_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
	struct mmp_config cfg;
	/* As given: getopt may reorder argv, and --takeover compares them with its predecessor's. */
	char **given = calloc((size_t)argc + 1, sizeof(*given));

	if (!given)
		return 1;
	memcpy(given, argv, (size_t)argc * sizeof(*argv));
	if (mmp_config_parse(argc, argv, &cfg))
		return 2;
	mmp_log_setup_libbpf();
	if (cfg.help) {
		mmp_usage(stdout, cfg.command);
		return 0;
	}

	switch (cfg.command) {
	case MMP_CMD_HELP:
		mmp_usage(stdout, MMP_CMD_HELP);
		return 0;
	case MMP_CMD_VERSION:
		printf("mmproxy-bpf %s\n", MMP_VERSION);
		return 0;
	case MMP_CMD_CHECK:
		return mmp_check_command(&cfg);
	case MMP_CMD_CLEANUP:
		return mmp_cleanup_command(&cfg);
	case MMP_CMD_STATS:
		if (cfg.stats_watch)
			return mmp_stats_watch(cfg.pin_dir);
		if (cfg.stats_json)
			return mmp_stats_json_command(cfg.pin_dir);
		return mmp_stats_cli(&cfg);
	case MMP_CMD_SETUP_ROUTING:
		return mmp_routing_setup(cfg.route_table) ? 1 : 0;
	case MMP_CMD_CLEANUP_ROUTING:
		return mmp_routing_cleanup(cfg.route_table) ? 1 : 0;
	case MMP_CMD_RUN:
		return mmp_run_command(&cfg, argc, given) ? 1 : 0;
	}
	return 0;
}
