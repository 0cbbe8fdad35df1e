// SPDX-License-Identifier: GPL-2.0
/* Report pieces shared by loadgen and udpgen: see report_common.h. */
#include <stdio.h>

#include "report_common.h"

double report_per_s(uint64_t n, double s)
{
	return s > 0 ? (double)n / s : 0;
}

double report_us(uint64_t ns)
{
	return (double)ns / 1e3;
}

void report_latency_line(const struct hist *h)
{
	printf("  latency      p50 %.1f us, p99 %.1f us, p99.9 %.1f us (mean %.1f, max %.1f)\n",
	       report_us(hist_percentile(h, 50)), report_us(hist_percentile(h, 99)),
	       report_us(hist_percentile(h, 99.9)), hist_mean(h) / 1e3,
	       report_us(h->count ? h->max : 0));
}

void report_cpu_line(const char *tool, const struct cpu_used *cpu)
{
	printf("  cpu          system %.2f s busy (softirq %.2f) of %.2f, %s %.2f s",
	       cpu->sys_busy, cpu->sys_softirq, cpu->sys_total, tool, cpu->self);
	if (cpu->watched >= 0)
		printf(", watched %.2f s", cpu->watched);
	printf("\n");
}

void report_json_latency(const struct hist *h)
{
	printf("\"lat_us\":{\"count\":%llu,\"p50\":%.2f,\"p99\":%.2f,\"p999\":%.2f,\"mean\":%.2f,"
	       "\"max\":%.2f},",
	       (unsigned long long)h->count, report_us(hist_percentile(h, 50)),
	       report_us(hist_percentile(h, 99)), report_us(hist_percentile(h, 99.9)),
	       hist_mean(h) / 1e3, report_us(h->count ? h->max : 0));
}

void report_json_cpu(const char *tool, const struct cpu_used *cpu)
{
	printf("\"cpu_s\":{\"watched\":");
	if (cpu->watched >= 0)
		printf("%.3f", cpu->watched);
	else
		printf("null");
	printf(",\"system_busy\":%.3f,\"softirq\":%.3f,\"system_total\":%.3f,\"%s\":%.3f}",
	       cpu->sys_busy, cpu->sys_softirq, cpu->sys_total, tool, cpu->self);
}
