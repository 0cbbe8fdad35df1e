// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/counters.h"
#include "lib/counter_table.h"
#include "lib/log.h"
#include "lib/pins.h"
#include "counters.skel.h"

/*
 * The exit log's "totals:" wording is the counter's name with spaces, except
 * these, which scripts and the tests already parse under their old labels.
 */
static const char *const legacy_labels[MMP_TCP_CNT_MAX] = {
	[MMP_TCP_CNT_sockmap_flows] = "sockmap",
	[MMP_TCP_CNT_sockmap_fallbacks] = "fallbacks",
	[MMP_TCP_CNT_tc_flows] = "tc",
};

static const char *log_label(int i, char *buf, size_t len)
{
	if (legacy_labels[i])
		return legacy_labels[i];
	snprintf(buf, len, "%s", mmp_counter_name(MMP_FAM_TCP, i));
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = ' ';
	return buf;
}

int mmp_counters_publish_open(struct mmp_counters *c, const char *pin_dir)
{
	int err;

	snprintf(c->pin_dir, sizeof(c->pin_dir), "%s", pin_dir);
	c->skel = counters_bpf__open_and_load();
	if (!c->skel) {
		err = -errno;
		pr_err("failed to create the %s map: %s", MMP_TCP_COUNTERS_MAP, strerror(-err));
		return err;
	}
	err = mmp_pin_map(pin_dir, c->skel->maps.mmp_tcp_cnt);
	if (err) {
		counters_bpf__destroy(c->skel);
		c->skel = NULL;
	}
	return err;
}

void mmp_counters_publish(struct mmp_counters *c)
{
	struct mmp_tcp_counters out;
	__u64 *v = (__u64 *)&out;
	__u32 zero = 0;

	if (!c->skel)
		return;
	for (int i = 0; i < MMP_TCP_CNT_MAX; i++)
		v[i] = mmp_counter(c, i);
	bpf_map_update_elem(bpf_map__fd(c->skel->maps.mmp_tcp_cnt), &zero, &out, BPF_ANY);
}

void mmp_counters_publish_close(struct mmp_counters *c)
{
	if (!c->skel)
		return;
	mmp_unpin(c->pin_dir, MMP_TCP_COUNTERS_MAP);
	counters_bpf__destroy(c->skel);
	c->skel = NULL;
}

void mmp_counters_log(const struct mmp_counters *c)
{
	char line[1024];
	size_t off = 0;

	for (int i = 0; i < MMP_TCP_CNT_MAX && off < sizeof(line); i++) {
		char label[64];

		off += snprintf(line + off, sizeof(line) - off, "%s%s %lu", i ? ", " : "",
				log_label(i, label, sizeof(label)), mmp_counter(c, i));
	}
	pr_info("totals: %s", line);
}
