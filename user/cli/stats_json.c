// SPDX-License-Identifier: GPL-2.0
#include "cli/stats_json.h"
#include "lib/json.h"

#define MMP_STATS_JSON_VERSION 1 /* bumped only when a key changes meaning or goes away */

static void counters(struct mmp_json *j, const char *key, const struct mmp_snapshot *s, enum mmp_family f)
{
	const struct mmp_family_desc *d = &mmp_families[f];

	mmp_json_begin(j, key);
	for (unsigned int i = 0; i < d->n; i++)
		mmp_json_u64(j, d->c[i].name, s->v[f][i]);
	mmp_json_end(j);
}

static void tc(struct mmp_json *j, const struct mmp_snapshot *s)
{
	if (!s->has[MMP_FAM_TC]) {
		mmp_json_null(j, "tc");
		return;
	}
	mmp_json_begin(j, "tc");
	counters(j, "counters", s, MMP_FAM_TC);
	mmp_json_u64(j, "flows", s->tc_flows);
	mmp_json_u64(j, "flow_bytes_up", s->tc_bytes[0]);
	mmp_json_u64(j, "flow_bytes_down", s->tc_bytes[1]);
	mmp_json_u64(j, "flow_packets_up", s->tc_packets[0]);
	mmp_json_u64(j, "flow_packets_down", s->tc_packets[1]);
	mmp_json_end(j);
}

static void sockmap(struct mmp_json *j, const struct mmp_snapshot *s)
{
	if (!s->has[MMP_FAM_SOCKMAP]) {
		mmp_json_null(j, "sockmap");
		return;
	}
	mmp_json_begin(j, "sockmap");
	counters(j, "counters", s, MMP_FAM_SOCKMAP);
	mmp_json_u64(j, "flows", s->sockmap_flows);
	mmp_json_u64(j, "flow_bytes_up", s->sockmap_bytes[0]);
	mmp_json_u64(j, "flow_bytes_down", s->sockmap_bytes[1]);
	mmp_json_end(j);
}

static void udp(struct mmp_json *j, const struct mmp_snapshot *s)
{
	if (!s->has[MMP_FAM_UDP]) {
		mmp_json_null(j, "udp");
		return;
	}
	mmp_json_begin(j, "udp");
	counters(j, "counters", s, MMP_FAM_UDP);
	mmp_json_u64(j, "flows", s->udp_flows);
	mmp_json_end(j);
}

static void xdp(struct mmp_json *j, const struct mmp_snapshot *s)
{
	char key[16];

	if (!s->n_xdp) {
		mmp_json_null(j, "xdp");
		return;
	}
	mmp_json_begin(j, "xdp");
	mmp_json_begin(j, "verdicts"); /* by index into mmp_xdp_cnt */
	for (unsigned int i = 0; i < s->n_xdp; i++) {
		snprintf(key, sizeof(key), "%u", i);
		mmp_json_u64(j, key, s->xdp[i]);
	}
	mmp_json_end(j);
	mmp_json_end(j);
}

void mmp_stats_json_write(FILE *out, const char *pin_dir, const struct mmp_snapshot *s)
{
	struct mmp_json j;

	mmp_json_init(&j, out);
	mmp_json_begin(&j, NULL);
	mmp_json_u64(&j, "version", MMP_STATS_JSON_VERSION);
	mmp_json_str(&j, "pin_dir", pin_dir);
	if (s->has_allow) {
		mmp_json_begin(&j, "allowed_subnets");
		mmp_json_u64(&j, "ipv4", s->allow4);
		mmp_json_u64(&j, "ipv6", s->allow6);
		mmp_json_end(&j);
	} else {
		mmp_json_null(&j, "allowed_subnets");
	}
	if (s->has[MMP_FAM_TCP])
		counters(&j, "tcp", s, MMP_FAM_TCP);
	else
		mmp_json_null(&j, "tcp");
	tc(&j, s);
	sockmap(&j, s);
	udp(&j, s);
	xdp(&j, s);
	mmp_json_end(&j);
}

int mmp_stats_json_command(const char *pin_dir)
{
	struct mmp_snapshot s;

	if (mmp_snapshot_read(pin_dir, &s)) {
		fprintf(stderr, "mmproxy-bpf: nothing pinned under %s (is mmproxy-bpf running? pass its --pin-dir)\n",
			pin_dir);
		return 1;
	}
	mmp_stats_json_write(stdout, pin_dir, &s);
	return 0;
}
