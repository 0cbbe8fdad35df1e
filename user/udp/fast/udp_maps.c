// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/log.h"
#include "lib/pins.h"
#include "udp/udp_flow.h"
#include "udp/fast/udp_maps.h"
#include "udp.skel.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's own "not supported", seen by old kernels' batch ops */
#endif

struct udp_maps {
	struct udp_bpf *skel;
	char pin_dir[PATH_MAX - 64];
	int flows_fd, cnt_fd, fwd_fd, rev_fd, kcnt_fd, drain_fd;
	bool progs; /* the fast path's programs are loaded */
	int ncpu;
	uint64_t *kvals; /* one per possible CPU: a PERCPU_ARRAY lookup */
	atomic_bool batch_unsupported; /* BPF_MAP_UPDATE_BATCH refused: one update per flow */
	atomic_bool warned; /* one log line for map write errors, whatever the thread */
};

static void warn_once(struct udp_maps *m, const char *op, int err)
{
	if (atomic_exchange(&m->warned, true))
		return;
	pr_err("warning: %s in %s/%s failed: %s; flows keep working but `mmproxy-bpf stats` may be stale",
	       op, m->pin_dir, MMP_UDP_FLOWS_MAP, strerror(err));
}

static const char *const pinned[] = {
	MMP_UDP_FLOWS_MAP, MMP_UDP_COUNTERS_MAP, MMP_UDP_FWD_MAP, MMP_UDP_REV_MAP, MMP_UDP_KCNT_MAP, MMP_UDP_DRAIN_MAP,
};

/* Open and load the object, with or without the fast path's programs. */
static int load(struct udp_maps *m, uint32_t max_flows, bool progs)
{
	struct bpf_program *prog;
	int err;

	m->skel = udp_bpf__open();
	if (!m->skel)
		return -errno;
	bpf_object__for_each_program(prog, m->skel->obj)
		bpf_program__set_autoload(prog, progs);
	err = bpf_map__set_max_entries(m->skel->maps.mmp_udp_flows, max_flows);
	if (!err)
		err = bpf_map__set_max_entries(m->skel->maps.mmp_udp_fwd, max_flows);
	if (!err)
		err = bpf_map__set_max_entries(m->skel->maps.mmp_udp_rev, max_flows);
	if (!err)
		err = bpf_map__set_max_entries(m->skel->maps.mmp_udp_drain, max_flows);
	if (!err)
		err = udp_bpf__load(m->skel);
	if (err) {
		udp_bpf__destroy(m->skel);
		m->skel = NULL;
	}
	m->progs = progs && !err;
	return err;
}

int udp_maps_open(const char *pin_dir, uint32_t max_flows, bool fast, struct udp_maps **out)
{
	struct bpf_map *map;
	struct udp_maps *m;
	int err;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	snprintf(m->pin_dir, sizeof(m->pin_dir), "%s", pin_dir);
	err = fast ? load(m, max_flows, true) : -1;
	if (err && fast)
		pr_info("UDP fast path: the kernel refused its TC program: %s; relaying in userspace (rerun with -v 2 for the verifier log)",
			strerror(-err));
	if (err)
		err = load(m, max_flows, false);
	if (err) {
		pr_err("UDP mode: the kernel refused the flow maps: %s (needs CAP_BPF; rerun with -v 2 for libbpf's log)",
		       strerror(-err));
		goto fail;
	}
	m->flows_fd = bpf_map__fd(m->skel->maps.mmp_udp_flows);
	m->cnt_fd = bpf_map__fd(m->skel->maps.mmp_udp_cnt);
	m->fwd_fd = bpf_map__fd(m->skel->maps.mmp_udp_fwd);
	m->rev_fd = bpf_map__fd(m->skel->maps.mmp_udp_rev);
	m->kcnt_fd = bpf_map__fd(m->skel->maps.mmp_udp_kcnt);
	m->drain_fd = bpf_map__fd(m->skel->maps.mmp_udp_drain);
	m->ncpu = libbpf_num_possible_cpus();
	m->kvals = calloc(m->ncpu > 0 ? m->ncpu : 1, sizeof(*m->kvals));
	if (m->ncpu <= 0 || !m->kvals) {
		err = -ENOMEM;
		goto fail;
	}
	bpf_object__for_each_map(map, m->skel->obj) {
		if (bpf_map__type(map) == BPF_MAP_TYPE_ARRAY && strncmp(bpf_map__name(map), "mmp_", 4))
			continue; /* .rodata and the like */
		err = mmp_pin_map(m->pin_dir, map);
		if (err)
			goto fail;
	}
	*out = m;
	return 0;
fail:
	udp_maps_close(m);
	return err;
}

void udp_maps_close(struct udp_maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++)
		mmp_unpin(m->pin_dir, pinned[i]);
	udp_bpf__destroy(m->skel);
	free(m->kvals);
	free(m);
}

static void sa_to_mmp(const struct sockaddr_storage *ss, struct mmp_addr *a)
{
	struct udp_ep ep;

	udp_ep_from_sa(&ep, (const struct sockaddr *)ss);
	udp_ep_to_mmp(&ep, a);
}

void udp_flow_to_map(const struct udp_flow *f, uint32_t thread, struct mmp_udp_flow *v)
{
	memset(v, 0, sizeof(*v));
	udp_ep_to_mmp(&f->client, &v->client);
	udp_ep_to_mmp(&f->lb, &v->lb);
	udp_ep_to_mmp(&f->local, &v->local);
	sa_to_mmp(f->target, &v->upstream);
	v->pkts_up = f->pkts_up;
	v->bytes_up = f->bytes_up;
	v->pkts_down = f->pkts_down;
	v->bytes_down = f->bytes_down;
	v->created_ns = f->created_ns;
	v->last_seen_ns = f->last_ns;
	v->format = f->format;
	v->thread = thread;
	v->kernel = (f->fast_fwd ? 1 : 0) | (f->fast_rev ? 2 : 0);
}

void udp_maps_put_flow(struct udp_maps *m, const struct udp_flow *f, uint32_t thread)
{
	struct mmp_udp_flow v;

	udp_flow_to_map(f, thread, &v);
	if (bpf_map_update_elem(m->flows_fd, &f->cookie, &v, BPF_ANY))
		warn_once(m, "adding a flow", errno);
}

void udp_maps_put_flows(struct udp_maps *m, uint64_t *keys, struct mmp_udp_flow *vals, uint32_t n)
{
	uint32_t count = n;

	if (!n)
		return;
	if (!m->batch_unsupported) {
		if (!bpf_map_update_batch(m->flows_fd, keys, vals, &count, NULL))
			return;
		if (errno != EINVAL && errno != ENOTSUPP && errno != EOPNOTSUPP) {
			warn_once(m, "refreshing flows", errno);
			return;
		}
		m->batch_unsupported = true; /* an old kernel: fall through, for good */
	}
	for (uint32_t i = 0; i < n; i++)
		if (bpf_map_update_elem(m->flows_fd, &keys[i], &vals[i], BPF_ANY))
			warn_once(m, "refreshing a flow", errno);
}

void udp_maps_del_flow(struct udp_maps *m, uint64_t cookie)
{
	if (bpf_map_delete_elem(m->flows_fd, &cookie) && errno != ENOENT)
		warn_once(m, "removing a flow", errno);
}

void udp_maps_put_counters(struct udp_maps *m, const struct mmp_udp_counters *c)
{
	uint32_t zero = 0;

	if (bpf_map_update_elem(m->cnt_fd, &zero, c, BPF_ANY))
		warn_once(m, "writing the counters", errno);
}

int udp_maps_prog_fd(struct udp_maps *m)
{
	return m->progs ? bpf_program__fd(m->skel->progs.mmp_udp_ingress) : -1;
}

int udp_maps_fwd_fd(struct udp_maps *m)
{
	return m->fwd_fd;
}

int udp_maps_rev_fd(struct udp_maps *m)
{
	return m->rev_fd;
}

int udp_maps_drain_fd(struct udp_maps *m)
{
	return m->drain_fd;
}

void udp_maps_kcounters(struct udp_maps *m, uint64_t out[MMP_UDP_KCNT_MAX])
{
	/* Called by the main thread only: m->kvals is its scratch. */
	for (uint32_t i = 0; i < MMP_UDP_KCNT_MAX; i++) {
		out[i] = 0;
		if (bpf_map_lookup_elem(m->kcnt_fd, &i, m->kvals))
			continue;
		for (int c = 0; c < m->ncpu; c++)
			out[i] += m->kvals[c];
	}
}
