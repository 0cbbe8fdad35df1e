// SPDX-License-Identifier: GPL-2.0
/* udpgen results: a human summary, then one line "JSON {...}". */
#include <stdio.h>

#include "proxyhdr.h"
#include "report_common.h"
#include "udpgen.h"

void ug_report(const struct ug_config *cfg, const struct ug_result *res)
{
	const struct ug_stats *s = &res->total;
	const struct hist *h = &s->lat;
	const char *mode = cfg->mode == UG_RR ? "rr" : "stream";
	/* rr: lost requests; stream: what was sent but never reached the sink. */
	uint64_t lost = cfg->mode == UG_RR ? s->lost :
			(s->tx_pkts > s->rx_pkts ? s->tx_pkts - s->rx_pkts : 0);
	double loss = s->tx_pkts ? (double)lost / (double)s->tx_pkts : 0;
	uint64_t errors = s->bad + s->send_errors;
	char target[64];

	addr_str(&cfg->target, target, sizeof(target));
	printf("udpgen: %s, %u flows, %u B, proxy %s -> %s, %u threads, %.2f s measured after %.1f s warm-up\n",
	       mode, cfg->flows, cfg->size, hdr_kind_name(cfg->proxy), target, cfg->threads,
	       res->elapsed, cfg->warmup);
	printf("  sent         %.0f pkt/s (%llu), %.2f MB/s\n", report_per_s(s->tx_pkts, res->elapsed),
	       (unsigned long long)s->tx_pkts, report_per_s(s->tx_bytes, res->elapsed) / 1e6);
	printf("  received     %.0f pkt/s (%llu), %.2f MB/s\n", report_per_s(s->rx_pkts, res->elapsed),
	       (unsigned long long)s->rx_pkts, report_per_s(s->rx_bytes, res->elapsed) / 1e6);
	printf("  loss         %.3f%% (%llu)", loss * 100, (unsigned long long)lost);
	if (cfg->mode == UG_RR)
		printf(", %llu late", (unsigned long long)s->late);
	printf("; %llu bad, %llu send errors\n", (unsigned long long)s->bad,
	       (unsigned long long)s->send_errors);
	if (cfg->mode == UG_RR)
		report_latency_line(h);
	report_cpu_line("udpgen", &res->cpu);

	printf("JSON {\"tool\":\"udpgen\",\"mode\":\"%s\",\"target\":\"%s\",\"proxy\":\"%s\","
	       "\"flows\":%u,\"size\":%u,\"threads\":%u,\"window\":%u,\"rate\":%.0f,"
	       "\"duration_s\":%.3f,\"warmup_s\":%.3f,",
	       mode, target, hdr_kind_name(cfg->proxy), cfg->flows, cfg->size, cfg->threads,
	       cfg->window, cfg->rate, res->elapsed, cfg->warmup);
	printf("\"tx_pkts\":%llu,\"rx_pkts\":%llu,\"tx_pps\":%.1f,\"rx_pps\":%.1f,"
	       "\"tx_bytes\":%llu,\"rx_bytes\":%llu,\"tx_Bps\":%.0f,\"rx_Bps\":%.0f,"
	       "\"msgs\":%llu,\"msgs_per_s\":%.1f,",
	       (unsigned long long)s->tx_pkts, (unsigned long long)s->rx_pkts,
	       report_per_s(s->tx_pkts, res->elapsed), report_per_s(s->rx_pkts, res->elapsed),
	       (unsigned long long)s->tx_bytes, (unsigned long long)s->rx_bytes,
	       report_per_s(s->tx_bytes, res->elapsed), report_per_s(s->rx_bytes, res->elapsed),
	       (unsigned long long)s->rx_pkts, report_per_s(s->rx_pkts, res->elapsed));
	printf("\"lost\":%llu,\"loss\":%.6f,\"late\":%llu,\"bad\":%llu,\"send_errors\":%llu,"
	       "\"errors\":%llu,",
	       (unsigned long long)lost, loss, (unsigned long long)s->late,
	       (unsigned long long)s->bad, (unsigned long long)s->send_errors,
	       (unsigned long long)errors);
	report_json_latency(h);
	report_json_cpu("udpgen", &res->cpu);
	printf("}\n");
	fflush(stdout);
}
