// SPDX-License-Identifier: GPL-2.0
/* `mmproxy-bpf stats` for UDP mode: the totals and the flows from the pinned maps. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include "mmp_udp.h"
#include "core/clock.h"
#include "lib/counter_table.h"
#include "lib/pins.h"
#include "lib/sockaddr.h"
#include "udp/udp_stats.h"

static const char *format_name(__u32 f)
{
	return f == MMP_UDP_FMT_SPP ? "spp" : f == MMP_UDP_FMT_LOCAL ? "local" : f == MMP_UDP_FMT_V2 ? "v2" : "?";
}

static void print_counters(int fd)
{
	struct mmp_udp_counters c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &c))
		return;
	mmp_counters_print(stdout, "udp counters (refreshed every second):", MMP_FAM_UDP, (const uint64_t *)&c);
}

static void print_flow(__u64 now, const struct mmp_udp_flow *f)
{
	char a[64], b[64];

	static const char *const kernel[] = { "-", "fwd", "rev", "both" };

	printf("  %-42s %-42s %-5s %-6s %10llu %12llu %10llu %12llu %7.1f\n", mmp_fmt_map_addr(&f->client, a, sizeof(a)),
	       mmp_fmt_map_addr(&f->lb, b, sizeof(b)), format_name(f->format), kernel[f->kernel & 3],
	       (unsigned long long)f->pkts_up, (unsigned long long)f->bytes_up, (unsigned long long)f->pkts_down,
	       (unsigned long long)f->bytes_down, now > f->last_seen_ns ? (double)(now - f->last_seen_ns) / 1e9 : 0.0);
}

/*
 * Walk the flows with BPF_MAP_LOOKUP_BATCH: its cursor is a bucket, so flows
 * closing meanwhile never make the walk start over and list entries twice,
 * as get_next_key does. Returns the number printed, or -1 when the kernel
 * has no batch lookup for hash maps.
 */
static int print_batched(int fd, __u64 now)
{
	enum { CHUNK = 256 };
	static __u64 keys[CHUNK];
	static struct mmp_udp_flow vals[CHUNK];
	__u64 token = 0;
	bool first = true, done = false;
	int n = 0;

	while (!done) {
		__u32 count = CHUNK;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &token, &token, keys, vals, &count, NULL);

		if (err && errno != ENOENT)
			return first ? -1 : n;
		done = err != 0; /* ENOENT: this was the last batch */
		first = false;
		for (__u32 i = 0; i < count; i++, n++)
			print_flow(now, &vals[i]);
	}
	return n;
}

static int print_walked(int fd, __u64 now)
{
	__u64 key, *prev = NULL;
	struct mmp_udp_flow f;
	int n = 0;

	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &f))
			continue;
		print_flow(now, &f);
		n++;
	}
	return n;
}

static void print_flows(int fd)
{
	__u64 now = mmp_now_ns();
	int n;

	printf("udp flows:\n");
	printf("  %-42s %-42s %-5s %-6s %10s %12s %10s %12s %7s\n", "client", "load balancer", "fmt", "kernel",
	       "pkts_up", "bytes_up", "pkts_down", "bytes_down", "idle_s");
	n = print_batched(fd, now);
	if (n < 0)
		n = print_walked(fd, now);
	printf("  (%d flows; packet and byte counts are refreshed every second)\n", n);
}

void mmp_udp_stats_print(const char *pin_dir)
{
	int cnt = mmp_open_pin(pin_dir, MMP_UDP_COUNTERS_MAP);
	int flows = mmp_open_pin(pin_dir, MMP_UDP_FLOWS_MAP);

	/* Not a UDP instance: say nothing. */
	if (cnt >= 0)
		print_counters(cnt);
	if (flows >= 0)
		print_flows(flows);
	if (cnt >= 0)
		close(cnt);
	if (flows >= 0)
		close(flows);
}
