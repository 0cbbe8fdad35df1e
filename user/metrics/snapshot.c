// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "lib/map_keys.h"
#include "lib/percpu.h"
#include "lib/pins.h"
#include "metrics/snapshot.h"

_Static_assert(MMP_UDP_CNT_MAX <= 64 && MMP_TCP_CNT_MAX <= 64, "struct mmp_snapshot: v[][64] too small");

/* An ARRAY of one struct of __u64 (mmp_tcp_cnt, mmp_udp_cnt). */
static bool read_struct(int fd, uint64_t *v, size_t n)
{
	__u32 zero = 0;

	return fd >= 0 && n && bpf_map_lookup_elem(fd, &zero, v) == 0;
}

static bool read_percpu(int fd, uint64_t *v, unsigned int n)
{
	if (fd < 0)
		return false;
	for (unsigned int i = 0; i < n; i++)
		if (mmp_percpu_sum(fd, i, &v[i]))
			v[i] = 0;
	return true;
}

static void read_tc_flows(int flows_fd, struct mmp_snapshot *s)
{
	uint64_t key, *prev = NULL;

	while (bpf_map_get_next_key(flows_fd, prev, &key) == 0) {
		struct mmp_tc_flow f;

		prev = &key;
		s->tc_flows++;
		if (bpf_map_lookup_elem(flows_fd, &key, &f) == 0)
			for (int d = 0; d < 2; d++) {
				s->tc_bytes[d] += f.st.bytes[d];
				s->tc_packets[d] += f.st.packets[d];
			}
	}
}

static void read_sockmap_flows(int fd, struct mmp_snapshot *s)
{
	uint64_t key, *prev = NULL;
	struct mmp_flow f;

	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		prev = &key;
		s->sockmap_flows++;
		if (bpf_map_lookup_elem(fd, &key, &f) == 0) {
			s->sockmap_bytes[0] += f.up.bytes;
			s->sockmap_bytes[1] += f.down.bytes;
		}
	}
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

/* The flow maps' part of s: one lookup per flow, so a scrape of 100k flows costs about 0.1 s of CPU. */
static void read_flows(const char *pin_dir, struct mmp_snapshot *s)
{
	int tcf = mmp_open_pin(pin_dir, MMP_TC_FLOWS_MAP);
	int smf = mmp_open_pin(pin_dir, MMP_FLOWS_MAP), udf = mmp_open_pin(pin_dir, MMP_UDP_FLOWS_MAP);

	if ((s->has_tc_flows = tcf >= 0))
		read_tc_flows(tcf, s);
	if ((s->has_sockmap_flows = smf >= 0))
		read_sockmap_flows(smf, s);
	if ((s->has_udp_flows = udf >= 0))
		s->udp_flows = mmp_map_count_keys(udf, sizeof(__u64));
	close_fd(tcf), close_fd(smf), close_fd(udf);
}

void mmp_snapshot_copy_flows(struct mmp_snapshot *dst, const struct mmp_snapshot *src)
{
	dst->has_tc_flows = src->has_tc_flows;
	dst->tc_flows = src->tc_flows;
	memcpy(dst->tc_bytes, src->tc_bytes, sizeof(dst->tc_bytes));
	memcpy(dst->tc_packets, src->tc_packets, sizeof(dst->tc_packets));
	dst->has_sockmap_flows = src->has_sockmap_flows;
	dst->sockmap_flows = src->sockmap_flows;
	memcpy(dst->sockmap_bytes, src->sockmap_bytes, sizeof(dst->sockmap_bytes));
	dst->has_udp_flows = src->has_udp_flows;
	dst->udp_flows = src->udp_flows;
}

int mmp_snapshot_read(const char *pin_dir, struct mmp_snapshot *s)
{
	int err = mmp_snapshot_read_counters(pin_dir, s);

	read_flows(pin_dir, s);
	return err && !s->has_tc_flows && !s->has_sockmap_flows ? err : 0;
}

int mmp_snapshot_read_counters(const char *pin_dir, struct mmp_snapshot *s)
{
	int tcp = mmp_open_pin(pin_dir, MMP_TCP_COUNTERS_MAP), udp = mmp_open_pin(pin_dir, MMP_UDP_COUNTERS_MAP);
	int tc = mmp_open_pin(pin_dir, MMP_TC_COUNTERS_MAP), sm = mmp_open_pin(pin_dir, MMP_COUNTERS_MAP);
	int a4 = mmp_open_pin(pin_dir, MMP_ALLOW4_MAP), a6 = mmp_open_pin(pin_dir, MMP_ALLOW6_MAP);
	int xdp = mmp_open_pin(pin_dir, MMP_XDP_COUNTERS_MAP);
	int err = 0;

	memset(s, 0, sizeof(*s));
	s->has[MMP_FAM_TCP] = read_struct(tcp, s->v[MMP_FAM_TCP], MMP_TCP_CNT_MAX);
	s->has[MMP_FAM_UDP] = read_struct(udp, s->v[MMP_FAM_UDP], MMP_UDP_CNT_MAX);
	s->has[MMP_FAM_TC] = read_percpu(tc, s->v[MMP_FAM_TC], MMP_TC_CNT_MAX);
	s->has[MMP_FAM_SOCKMAP] = read_percpu(sm, s->v[MMP_FAM_SOCKMAP], MMP_CNT_MAX);
	if (a4 >= 0 && a6 >= 0) {
		s->has_allow = true;
		s->allow4 = mmp_map_count_keys(a4, sizeof(struct mmp_allow4_key));
		s->allow6 = mmp_map_count_keys(a6, sizeof(struct mmp_allow6_key));
	}
	if (xdp >= 0) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);

		/* Unknown layout from another part of the project: take it only as per-CPU __u64s. */
		if (!bpf_obj_get_info_by_fd(xdp, &info, &len) && info.value_size == sizeof(__u64)) {
			s->n_xdp = info.max_entries < MMP_SNAP_XDP_MAX ? info.max_entries : MMP_SNAP_XDP_MAX;
			read_percpu(xdp, s->xdp, s->n_xdp);
		}
	}
	if (a4 < 0 && tcp < 0 && udp < 0)
		err = -ENOENT;
	close_fd(tcp), close_fd(udp), close_fd(tc), close_fd(sm), close_fd(a4), close_fd(a6), close_fd(xdp);
	return err;
}
