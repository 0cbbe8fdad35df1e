// SPDX-License-Identifier: GPL-2.0
/* loadgen results: a human summary, then one line "JSON {...}". */
#include <stdio.h>

#include "loadgen.h"
#include "proxyhdr.h"
#include "report_common.h"

static const char *mode_name(enum lg_mode m)
{
	switch (m) {
	case LG_PINGPONG:
		return "pingpong";
	case LG_BULK:
		return "bulk";
	case LG_CONNRATE:
		return "connrate";
	case LG_STREAM:
		return "stream";
	case LG_HOLD:
		return "hold";
	}
	return "?";
}

static const char *dir_name(int d)
{
	return d == LG_UP ? "up" : d == LG_DOWN ? "down" : "both";
}

void lg_report(const struct lg_config *cfg, const struct lg_result *res)
{
	const struct lg_stats *s = &res->total;
	const struct hist *h = &s->lat;
	uint64_t errors = s->connect_errors + s->io_errors + s->verify_errors;
	char target[64];

	addr_str(&cfg->target, target, sizeof(target));
	printf("loadgen: %s", mode_name(cfg->mode));
	if (cfg->mode == LG_BULK)
		printf(" %s", dir_name(cfg->direction));
	else if (cfg->mode != LG_STREAM)
		printf(" %u B x%u", cfg->size, cfg->pipeline);
	printf(", %u connections, %u threads, proxy %s -> %s, %.2f s measured after %.1f s warm-up\n",
	       cfg->conns, cfg->threads, hdr_kind_name(cfg->proxy), target, res->elapsed,
	       cfg->warmup);
	printf("  throughput   up %.2f MB/s, down %.2f MB/s\n",
	       report_per_s(s->tx_bytes, res->elapsed) / 1e6, report_per_s(s->rx_bytes, res->elapsed) / 1e6);
	if (cfg->mode != LG_BULK && cfg->mode != LG_STREAM) {
		printf("  %-12s %.0f/s (%llu)\n", cfg->mode == LG_CONNRATE ? "connections" : "messages",
		       report_per_s(s->msgs, res->elapsed), (unsigned long long)s->msgs);
		report_latency_line(h);
	}
	printf("  connections  %llu open at end, %llu opened while measuring, %llu connect errors (%llu refused, %llu reset), "
	       "%llu I/O errors (%llu EOF, %llu reset)\n",
	       (unsigned long long)res->open_at_end, (unsigned long long)s->conns_opened,
	       (unsigned long long)s->connect_errors, (unsigned long long)s->connect_refused,
	       (unsigned long long)s->connect_reset, (unsigned long long)s->io_errors,
	       (unsigned long long)s->io_eof, (unsigned long long)s->io_reset);
	if (cfg->mode == LG_HOLD)
		printf("  held         %llu of %llu open at end echoed a message while measuring "
		       "(one per %.1f s each)\n",
		       (unsigned long long)s->alive, (unsigned long long)res->open_at_end, cfg->interval);
	if (cfg->verify)
		printf("  verify       %llu bytes checked, %llu wrong\n",
		       (unsigned long long)s->verified_bytes, (unsigned long long)s->verify_errors);
	report_cpu_line("loadgen", &res->cpu);

	printf("JSON {\"tool\":\"loadgen\",\"mode\":\"%s\",\"direction\":\"%s\",\"target\":\"%s\","
	       "\"proxy\":\"%s\",\"connections\":%u,\"threads\":%u,\"size\":%u,\"pipeline\":%u,"
	       "\"duration_s\":%.3f,\"warmup_s\":%.3f,",
	       mode_name(cfg->mode), cfg->mode == LG_BULK ? dir_name(cfg->direction) : "",
	       target, hdr_kind_name(cfg->proxy), cfg->conns, cfg->threads, cfg->size,
	       cfg->pipeline, res->elapsed, cfg->warmup);
	printf("\"tx_bytes\":%llu,\"rx_bytes\":%llu,\"tx_Bps\":%.0f,\"rx_Bps\":%.0f,"
	       "\"msgs\":%llu,\"msgs_per_s\":%.1f,",
	       (unsigned long long)s->tx_bytes, (unsigned long long)s->rx_bytes,
	       report_per_s(s->tx_bytes, res->elapsed), report_per_s(s->rx_bytes, res->elapsed),
	       (unsigned long long)s->msgs, report_per_s(s->msgs, res->elapsed));
	printf("\"conns_open\":%llu,\"conns_opened\":%llu,\"conns_per_s\":%.1f,\"client_next\":%llu,"
	       "\"connect_errors\":%llu,\"connect_refused\":%llu,\"connect_reset\":%llu,\"io_errors\":%llu,\"io_eof\":%llu,\"io_reset\":%llu,"
	       "\"verify\":%s,\"verified_bytes\":%llu,"
	       "\"verify_errors\":%llu,\"errors\":%llu,\"alive\":%llu,\"interval_s\":%.3f,",
	       (unsigned long long)res->open_at_end, (unsigned long long)s->conns_opened,
	       report_per_s(s->conns_opened, res->elapsed), (unsigned long long)res->client_next,
	       (unsigned long long)s->connect_errors, (unsigned long long)s->connect_refused,
	       (unsigned long long)s->connect_reset, (unsigned long long)s->io_errors, (unsigned long long)s->io_eof,
	       (unsigned long long)s->io_reset, cfg->verify ? "true" : "false",
	       (unsigned long long)s->verified_bytes, (unsigned long long)s->verify_errors,
	       (unsigned long long)errors, (unsigned long long)s->alive, cfg->interval);
	report_json_latency(h);
	report_json_cpu("loadgen", &res->cpu);
	printf("}\n");
	fflush(stdout);
}
