/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The parts of the loadgen and udpgen reports that are the same: rates,
 * the latency and CPU lines of the human summary, and the "lat_us" and
 * "cpu_s" objects of the JSON line (bench/report.py reads both).
 */
#ifndef MMPB_REPORT_COMMON_H
#define MMPB_REPORT_COMMON_H

#include <stdint.h>

#include "cpustat.h"
#include "histogram.h"

/* n per second over s seconds; 0 when nothing was measured. */
double report_per_s(uint64_t n, double s);
/* Nanoseconds as microseconds. */
double report_us(uint64_t ns);

/* "  latency      p50 ... us, p99 ..., p99.9 ... (mean ..., max ...)\n" */
void report_latency_line(const struct hist *h);
/* "  cpu          system ... of ..., TOOL ... s[, watched ... s]\n" */
void report_cpu_line(const char *tool, const struct cpu_used *cpu);
/* "\"lat_us\":{...}," */
void report_json_latency(const struct hist *h);
/* "\"cpu_s\":{...,\"TOOL\":...}" with watched null when nothing is watched. */
void report_json_cpu(const char *tool, const struct cpu_used *cpu);

#endif
