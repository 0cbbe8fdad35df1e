// SPDX-License-Identifier: GPL-2.0
/* `stats --watch`: the counters every second with per-second rates (deltas over the measured interval). */
#include <stdio.h>
#include <time.h>
#include "cli/stats_json.h"
#include "core/clock.h"

static void print_family(const struct mmp_snapshot *s, const struct mmp_snapshot *prev, enum mmp_family f,
			 double secs)
{
	const struct mmp_family_desc *d = &mmp_families[f];

	if (!s->has[f])
		return;
	printf("%s:\n", d->key);
	for (unsigned int i = 0; i < d->n; i++) {
		uint64_t v = s->v[f][i], p = prev && prev->has[f] ? prev->v[f][i] : v;
		/* Gauges (active, flows_*) can fall: show the change signed. */
		double rate = secs > 0 ? ((double)v - (double)p) / secs : 0;

		printf("  %-24s %16llu %12.1f/s\n", d->c[i].name, (unsigned long long)v, rate);
	}
}

int mmp_stats_watch(const char *pin_dir)
{
	struct mmp_snapshot snap[2];
	uint64_t t[2] = { 0, 0 };
	int cur = 0, n = 0;

	for (;; n++, cur ^= 1) {
		const struct mmp_snapshot *prev = n ? &snap[cur ^ 1] : NULL;
		double secs;

		if (mmp_snapshot_read(pin_dir, &snap[cur])) {
			fprintf(stderr, "mmproxy-bpf: nothing pinned under %s (is mmproxy-bpf running? pass its --pin-dir)\n",
				pin_dir);
			return 1;
		}
		t[cur] = mmp_now_ns();
		secs = n ? (t[cur] - t[cur ^ 1]) / 1e9 : 0;
		printf("\033[H\033[2J"); /* clear the terminal: one screen per refresh */
		printf("mmproxy-bpf stats --watch: %s, every 1 s (Ctrl-C stops)\n", pin_dir);
		if (snap[cur].has_allow)
			printf("allowed subnets: %llu IPv4, %llu IPv6\n", (unsigned long long)snap[cur].allow4,
			       (unsigned long long)snap[cur].allow6);
		for (int f = 0; f < MMP_FAM_MAX; f++)
			print_family(&snap[cur], prev, f, secs);
		if (snap[cur].has_tc_flows)
			printf("tc flows in the kernel: %llu\n", (unsigned long long)snap[cur].tc_flows);
		if (snap[cur].has_sockmap_flows)
			printf("sockmap flows: %llu\n", (unsigned long long)snap[cur].sockmap_flows);
		if (snap[cur].has_udp_flows)
			printf("udp flows: %llu\n", (unsigned long long)snap[cur].udp_flows);
		fflush(stdout);
		nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
	}
}
