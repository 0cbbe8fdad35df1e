// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "mmp_maps.h"
#include "stats.h"

static const char *const counter_names[MMP_CNT_MAX] = {
	[MMP_CNT_REDIRECTED_BYTES] = "redirected_bytes",
	[MMP_CNT_PASSED_BYTES] = "held_back_bytes",
	[MMP_CNT_HEADER_BYTES] = "header_bytes_stripped",
	[MMP_CNT_PAUSES] = "backpressure_pauses",
	[MMP_CNT_NO_FLOW] = "verdicts_without_flow",
	[MMP_CNT_REDIRECT_FAILED] = "strip_failures",
};

static int open_pinned(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_get(path);
}

static const char *fmt_addr(const struct mmp_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->family == AF_INET) {
		inet_ntop(AF_INET, a->addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, a->port);
	} else if (a->family == AF_INET6) {
		inet_ntop(AF_INET6, a->addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, a->port);
	} else {
		snprintf(buf, len, "-");
	}
	return buf;
}

static int count_entries(int fd, size_t key_size)
{
	uint8_t key[64], next[64];
	void *prev = NULL;
	int n = 0;

	while (key_size <= sizeof(key) && bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}

static void print_counters(int fd)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	if (ncpu <= 0)
		return;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return;
	printf("sockmap counters:\n");
	for (uint32_t i = 0; i < MMP_CNT_MAX; i++) {
		uint64_t sum = 0;

		if (bpf_map_lookup_elem(fd, &i, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
		printf("  %-24s %llu\n", counter_names[i], (unsigned long long)sum);
	}
	free(vals);
}

static void print_flows(int fd)
{
	uint64_t key, *prev = NULL;
	struct mmp_flow f;
	int n = 0;

	printf("sockmap flows:\n");
	printf("  %-46s %-46s %14s %14s %s\n", "client", "upstream", "bytes_up", "bytes_down", "state");
	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		char a[80], b[80];

		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &f))
			continue;
		printf("  %-46s %-46s %14llu %14llu %s%s\n", fmt_addr(&f.client, a, sizeof(a)),
		       fmt_addr(&f.upstream, b, sizeof(b)), (unsigned long long)f.up.bytes,
		       (unsigned long long)f.down.bytes, f.up.paused ? "up-paused " : "",
		       f.down.paused ? "down-paused" : "");
		n++;
	}
	printf("  (%d flows)\n", n);
}

static void close_if_open(int fd)
{
	if (fd >= 0)
		close(fd);
}

int mmp_stats_command(const char *pin_dir)
{
	int allow4 = open_pinned(pin_dir, MMP_ALLOW4_MAP);
	int allow6 = open_pinned(pin_dir, MMP_ALLOW6_MAP);
	int flows = open_pinned(pin_dir, MMP_FLOWS_MAP);
	int counters = open_pinned(pin_dir, MMP_COUNTERS_MAP);

	if (allow4 < 0 && flows < 0) {
		fprintf(stderr, "mmproxy-bpf: nothing pinned under %s (is mmproxy-bpf running? pass its --pin-dir)\n",
			pin_dir);
		return 1;
	}
	printf("pin directory: %s\n", pin_dir);
	if (allow4 >= 0 && allow6 >= 0)
		printf("allowed subnets: %d IPv4, %d IPv6 (%s, %s)\n",
		       count_entries(allow4, sizeof(struct mmp_allow4_key)),
		       count_entries(allow6, sizeof(struct mmp_allow6_key)), MMP_ALLOW4_MAP, MMP_ALLOW6_MAP);
	if (counters >= 0)
		print_counters(counters);
	if (flows >= 0)
		print_flows(flows);
	else
		printf("sockmap engine: not loaded (engine splice moves bytes in userspace; no per-flow maps)\n");
	close_if_open(allow4);
	close_if_open(allow6);
	close_if_open(flows);
	close_if_open(counters);
	return 0;
}
