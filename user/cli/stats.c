// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/clock.h"
#include "mmp_maps.h"
#include "mmp_tc.h"
#include "mmp_tcp.h"
#include "mmp_xdp.h"
#include "lib/counter_table.h"
#include "lib/map_keys.h"
#include "lib/pins.h"
#include "lib/sockaddr.h"
#include "lib/percpu.h"
#include "cli/instances.h"
#include "cli/stats.h"
#include "engine/tc/tc_engine.h"
#include "udp/udp_stats.h"

static void print_tcp_counters(int fd)
{
	struct mmp_tcp_counters c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &c))
		return;
	mmp_counters_print(stdout, "tcp counters (refreshed every second):", MMP_FAM_TCP, (const uint64_t *)&c);
}

/* The XDP gate's verdicts (per-CPU, summed): one line each. */
static void print_xdp_counters(int fd)
{
	uint64_t v[MMP_XDP_CNT_MAX] = { 0 };

	for (uint32_t i = 0; i < MMP_XDP_CNT_MAX; i++)
		mmp_percpu_sum(fd, i, &v[i]);
	mmp_counters_print(stdout, "xdp gate counters:", MMP_FAM_XDP, v);
}

/* A per-CPU array of counters (sockmap's, tc's): name and sum, one line each. */
static void print_percpu(int fd, const char *title, enum mmp_family f)
{
	printf("%s\n", title);
	for (uint32_t i = 0; i < mmp_families[f].n; i++) {
		uint64_t sum;

		if (!mmp_percpu_sum(fd, i, &sum))
			printf("  %-24s %llu\n", mmp_counter_name(f, i), (unsigned long long)sum);
	}
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
		printf("  %-46s %-46s %14llu %14llu %s%s\n", mmp_fmt_map_addr(&f.client, a, sizeof(a)),
		       mmp_fmt_map_addr(&f.upstream, b, sizeof(b)), (unsigned long long)f.up.bytes,
		       (unsigned long long)f.down.bytes, f.up.paused ? "up-paused " : "",
		       f.down.paused ? "down-paused" : "");
		n++;
	}
	printf("  (%d flows)\n", n);
}

static const char *fmt_tuple(const struct mmp_tc_tuple *t, char *buf, size_t len)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	int af = t->family == 4 ? AF_INET : AF_INET6;

	inet_ntop(af, t->saddr, s, sizeof(s));
	inet_ntop(af, t->daddr, d, sizeof(d));
	if (af == AF_INET)
		snprintf(buf, len, "%s:%u -> %s:%u", s, ntohs(t->sport), d, ntohs(t->dport));
	else
		snprintf(buf, len, "[%s]:%u -> [%s]:%u", s, ntohs(t->sport), d, ntohs(t->dport));
	return buf;
}

/* Each spliced flow: the load balancer's tuple, the upstream's, deltas, traffic. */
static void print_tc_flows(int flows_fd)
{
	uint64_t key, *prev = NULL;
	uint64_t now_ns = mmp_now_ns();
	int n = 0;

	printf("tc flows (spliced in the kernel):\n");
	while (bpf_map_get_next_key(flows_fd, prev, &key) == 0) {
		struct mmp_tc_flow f;
		const struct mmp_tc_stats *st = &f.st;
		struct mmp_tc_tuple lb;
		char a[128], b[128];

		prev = &key;
		if (bpf_map_lookup_elem(flows_fd, &key, &f))
			continue;
		mmp_tc_reverse_tuple(&lb, &f.down.out);
		printf("  flow %llu %s\n", (unsigned long long)key,
		       f.mode == MMP_TC_MODE_SPLICE ? "" : f.mode == MMP_TC_MODE_HOLD ? "(hand-off: hold)" : "(hand-off: freeze)");
		if (f.mode != MMP_TC_MODE_SPLICE)
			continue;
		printf("    load balancer %s\n", fmt_tuple(&lb, a, sizeof(a)));
		printf("    upstream      %s\n", fmt_tuple(&f.up.out, b, sizeof(b)));
		printf("    up:   seq %+d ack %+d wscale %u->%u  %llu packets %llu bytes\n", (int)f.up.seq_delta,
		       (int)f.up.ack_delta, f.up.wscale_in, f.up.wscale_out, (unsigned long long)st->packets[0],
		       (unsigned long long)st->bytes[0]);
		printf("    down: seq %+d ack %+d wscale %u->%u  %llu packets %llu bytes\n", (int)f.down.seq_delta,
		       (int)f.down.ack_delta, f.down.wscale_in, f.down.wscale_out, (unsigned long long)st->packets[1],
		       (unsigned long long)st->bytes[1]);
		printf("    state: %s%s%s, idle %.1f s\n", st->fin[0] ? "FIN from load balancer " : "",
		       st->fin[1] ? "FIN from upstream " : "", st->rst ? "RST" : st->fin[0] || st->fin[1] ? "" : "open",
		       st->last_seen_ns ? (now_ns - st->last_seen_ns) / 1e9 : 0.0);
		n++;
	}
	printf("  (%d flows)\n", n);
}

static void close_if_open(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* Print what is pinned under pin_dir. Returns 0, or 1 when nothing is pinned there. */
static int mmp_stats_command(const char *pin_dir)
{
	int allow4 = mmp_open_pin(pin_dir, MMP_ALLOW4_MAP);
	int allow6 = mmp_open_pin(pin_dir, MMP_ALLOW6_MAP);
	int flows = mmp_open_pin(pin_dir, MMP_FLOWS_MAP);
	int counters = mmp_open_pin(pin_dir, MMP_COUNTERS_MAP);
	int tc_flows = mmp_open_pin(pin_dir, MMP_TC_FLOWS_MAP);
	int tc_counters = mmp_open_pin(pin_dir, MMP_TC_COUNTERS_MAP);
	int tcp_counters = mmp_open_pin(pin_dir, MMP_TCP_COUNTERS_MAP);
	int xdp_counters = mmp_open_pin(pin_dir, MMP_XDP_COUNTERS_MAP);

	if (allow4 < 0 && flows < 0 && tc_flows < 0) {
		fprintf(stderr, "mmproxy-bpf: nothing pinned under %s (is mmproxy-bpf running? pass its --pin-dir)\n",
			pin_dir);
		return 1;
	}
	printf("pin directory: %s\n", pin_dir);
	if (allow4 >= 0 && allow6 >= 0)
		printf("allowed subnets: %llu IPv4, %llu IPv6 (%s, %s)\n",
		       (unsigned long long)mmp_map_count_keys(allow4, sizeof(struct mmp_allow4_key)),
		       (unsigned long long)mmp_map_count_keys(allow6, sizeof(struct mmp_allow6_key)), MMP_ALLOW4_MAP,
		       MMP_ALLOW6_MAP);
	if (tcp_counters >= 0)
		print_tcp_counters(tcp_counters);
	if (xdp_counters >= 0)
		print_xdp_counters(xdp_counters);
	if (counters >= 0)
		print_percpu(counters, "sockmap counters:", MMP_FAM_SOCKMAP);
	if (tc_counters >= 0)
		print_percpu(tc_counters, "tc counters:", MMP_FAM_TC);
	if (tc_flows >= 0)
		print_tc_flows(tc_flows);
	if (flows >= 0)
		print_flows(flows);
	mmp_udp_stats_print(pin_dir);
	if (flows < 0 && tc_flows < 0)
		printf("no in-kernel engine loaded (engine splice moves bytes in userspace; no per-flow maps)\n");
	close_if_open(allow4);
	close_if_open(allow6);
	close_if_open(flows);
	close_if_open(counters);
	close_if_open(tc_flows);
	close_if_open(tc_counters);
	close_if_open(tcp_counters);
	close_if_open(xdp_counters);
	return 0;
}

int mmp_stats_cli(const struct mmp_config *cfg)
{
	static struct mmp_instances todo;
	int err = 0;

	if (mmp_instances_choose(cfg, "stats", &todo))
		return 1;
	for (int i = 0; i < todo.n; i++) {
		if (i)
			printf("\n");
		err |= mmp_stats_command(todo.dir[i]);
	}
	return err;
}
