// SPDX-License-Identifier: GPL-2.0
/* The tc engine's kernel side: load, adopt a predecessor's pins, attach, detach, and `cleanup`. */
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/clock.h"
#include "core/conn.h"
#include "core/counters.h"
#include "core/loop.h"
#include "engine/tc/tc_internal.h"
#include "lib/config.h"
#include "lib/handover.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "mmp_tc.h"
#include "lib/clsact.h"
#include "lib/pins.h"
#include "mmp_maps.h"
#include "lib/instance.h"
#include "lib/lo_sysctls.h"
#include "lib/netlink.h"
#include "steer/reply_steer.h"
#include "tc.skel.h"

static const char *const pinned_maps[] = {
	MMP_TC_TUPLES_MAP, MMP_TC_FLOWS_MAP, MMP_TC_CARRY_MAP, MMP_TC_COUNTERS_MAP, MMP_TC_LEGACY_STATS_MAP,
};

static int attach_hook(struct mmp_tc *tc, int idx, enum bpf_tc_attach_point where, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tc->ifindex[idx], .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = tc->id.handle, .priority = tc->id.prio,
			    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	char name[IF_NAMESIZE] = "?";
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		goto fail;
	/*
	 * REPLACE: a restarted instance takes over its predecessor's filter in
	 * place, which uses the maps this one adopted. A filter at our priority
	 * whose program uses other maps belongs to another instance whose pin
	 * directory hashes to the same priority (lib/instance.c), and may still
	 * carry its kept flows: never take it over.
	 */
	err = mmp_clsact_filter_foreign(tc->ifindex[idx], where == BPF_TC_EGRESS, tc->id.handle, tc->id.prio,
					bpf_map__fd(tc->skel->maps.mmp_tc_flows));
	if (err == 1) {
		if_indextoname(tc->ifindex[idx], name);
		pr_err("tc engine: %s %s already has a filter at priority %u that is not this instance's (its maps are "
		       "not the ones pinned in %s): another instance's pin directory maps to the same priority; give "
		       "this one another --pin-dir, or run `mmproxy-bpf cleanup --pin-dir DIR` for the other if it "
		       "is gone for good",
		       name, where == BPF_TC_EGRESS ? "egress" : "ingress", tc->id.prio, tc->pin_dir);
		return -EBUSY;
	}
	err = bpf_tc_attach(&hook, &opts);
	if (!err) {
		tc->attached[idx][where == BPF_TC_EGRESS] = true;
		return 0;
	}
fail:
	if_indextoname(tc->ifindex[idx], name);
	pr_err("tc engine: failed to attach to %s %s: %s", name, where == BPF_TC_EGRESS ? "egress" : "ingress",
	       strerror(-err));
	return err;
}

static void detach_hook(struct mmp_tc *tc, int idx, enum bpf_tc_attach_point where)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tc->ifindex[idx], .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = tc->id.handle, .priority = tc->id.prio);

	/*
	 * Our filter only: the clsact qdisc may carry other filters (the UDP
	 * engine's, other tools'), and a hook we never attached to may hold
	 * another instance's filter at our priority (attach_hook refused it).
	 */
	if (tc->attached[idx][where == BPF_TC_EGRESS])
		bpf_tc_detach(&hook, &opts);
}

/*
 * An upstream beyond loopback whose interface the engine does not hook yet:
 * a route that moved (a pod recreated behind a new veth, Calico), or
 * --iface naming only the load balancers'. Reply steering follows the route
 * within a second (steer/reply_steer.c); this hooks its new interface too,
 * ingress and egress, so new flows to it are handed off again
 * (docs/DESIGN.md §14). The old interface keeps its filters until exit: the
 * flows still on it (if it still exists) need them. Called by the tick, on
 * one loop; the hand-offs of other loops read nifaces with acquire.
 */
void mmp_tc_follow_upstreams(struct mmp_tc *tc)
{
	static const int families[2] = { AF_INET, AF_INET6 };
	char name[IF_NAMESIZE] = "?";

	/* Draining for a successor: its filters are the ones that count now (§15). */
	if (!tc || !tc->skel || mmp_handing_over())
		return;
	for (int f = 0; f < 2; f++) {
		int idx = mmp_steer_ifindex(families[f]), n = tc->nifaces;

		if (idx <= 0 || mmp_tc_hooked(tc, idx) || n >= MAX_IFACES)
			continue;
		tc->ifindex[n] = idx;
		if (attach_hook(tc, n, BPF_TC_INGRESS, bpf_program__fd(tc->skel->progs.mmp_tc_ingress)) ||
		    attach_hook(tc, n, BPF_TC_EGRESS, bpf_program__fd(tc->skel->progs.mmp_tc_egress))) {
			/* Not counted, so never hooked: its flows stay on splice, and the next tick tries again. */
			detach_hook(tc, n, BPF_TC_INGRESS);
			tc->attached[n][0] = tc->attached[n][1] = false;
			continue;
		}
		__atomic_store_n(&tc->nifaces, n + 1, __ATOMIC_RELEASE);
		pr_info("tc engine: hooked %s, the interface of the upstream's route now",
			if_indextoname(idx, name) ? name : "?");
	}
}

static int open_raw(int family)
{
	int one = 1, fd;

	fd = socket(family, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	if (fd < 0)
		return -errno;
	/* The window update to the upstream comes from the client's (foreign) address. */
	if (family == AF_INET)
		setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one));
	else
		setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one));
	return fd;
}

/* Default --iface: every interface that is up, but lo (hooked anyway). */
static void add_up_interfaces(struct mmp_tc *tc)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	for (i = ifs; i && i->if_index && tc->nifaces < MAX_IFACES; i++) {
		struct ifreq ifr = { 0 };

		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->if_name);
		if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) || !(ifr.ifr_flags & IFF_UP) ||
		    (ifr.ifr_flags & IFF_LOOPBACK))
			continue;
		tc->ifindex[tc->nifaces++] = i->if_index;
	}
	if (fd >= 0)
		close(fd);
	if_freenameindex(ifs);
}

static bool is_internal_map(const struct bpf_map *map)
{
	/* .rodata/.bss and the per-CPU packet scratch are not pinned. */
	return bpf_map__type(map) == BPF_MAP_TYPE_ARRAY || !strcmp(bpf_map__name(map), "mmp_tc_scratch");
}

/*
 * A previous instance left spliced flows running: reuse its pinned maps so
 * the new programs (attached with REPLACE) see the same flows. A pin with
 * another layout is refused, never silently reused.
 */
static int adopt_pins(struct mmp_tc *tc)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, tc->skel->obj) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);
		char path[PATH_MAX];
		bool readable;
		int fd, err;

		if (is_internal_map(map))
			continue;
		snprintf(path, sizeof(path), "%s/%s", tc->pin_dir, bpf_map__name(map));
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		readable = !bpf_obj_get_info_by_fd(fd, &info, &len);
		/*
		 * A carry entry lives for the first round trips after a switch, and
		 * only its carrier, which ended with that instance, uses it: an
		 * older version's map is replaced. Its flows find no entry and
		 * stop clamping (the bytes it still had unacked were lost anyway).
		 */
		if (readable && !strcmp(bpf_map__name(map), MMP_TC_CARRY_MAP) &&
		    info.value_size != bpf_map__value_size(map)) {
			close(fd);
			pr_info("tc engine: %s has another layout (an older version's): replaced", path);
			continue;
		}
		if (!readable || info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
		    info.value_size != bpf_map__value_size(map) || info.map_flags != bpf_map__map_flags(map)) {
			close(fd);
			pr_err("tc engine: %s has another layout (left by another version?); remove it with: mmproxy-bpf cleanup --pin-dir %s",
			       path, tc->pin_dir);
			return -EEXIST;
		}
		/*
		 * Counters are no flow state: an older version's array, without
		 * the counters added since, is replaced (pinning over it) rather
		 * than adopted, where the new counters would silently not count.
		 */
		if (!strcmp(bpf_map__name(map), MMP_TC_COUNTERS_MAP) && info.max_entries < MMP_TC_CNT_MAX) {
			close(fd);
			pr_info("tc engine: %s has fewer counters than this version: its counters start again from zero",
				path);
			continue;
		}
		err = bpf_map__reuse_fd(map, fd);
		close(fd);
		if (err) {
			pr_err("tc engine: failed to reuse %s: %s", path, strerror(-err));
			return err;
		}
		tc->adopting = true;
	}
	return 0;
}

/*
 * Is map what the pin at its path already holds (adopted)? Then pinning it
 * again, which unlinks the pin first, is skipped: a failure in between would
 * lose a pin that the predecessor's flows need.
 */
static bool pinned_already(const struct mmp_tc *tc, const struct bpf_map *map)
{
	struct bpf_map_info pinned = { 0 }, ours = { 0 };
	__u32 len = sizeof(pinned);
	char path[PATH_MAX];
	bool same;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tc->pin_dir, bpf_map__name(map));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return false;
	same = !bpf_obj_get_info_by_fd(fd, &pinned, &len) &&
	       !bpf_obj_get_info_by_fd(bpf_map__fd(map), &ours, &(__u32){ sizeof(ours) }) && pinned.id == ours.id;
	close(fd);
	return same;
}

/* What only this process holds: the raw sockets and the skeleton's fds. Pins and filters are not touched. */
static void release(struct mmp_tc *tc)
{
	if (tc->raw4 >= 0)
		close(tc->raw4);
	if (tc->raw6 >= 0)
		close(tc->raw6);
	tc_bpf__destroy(tc->skel);
	free(tc);
}

int mmp_tc_load(const struct mmp_config *cfg, struct mmp_tc **out)
{
	struct mmp_tc *tc;
	struct bpf_map *map;
	int err;

	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return -ENOMEM;
	tc->cfg = cfg;
	snprintf(tc->pin_dir, sizeof(tc->pin_dir), "%s", cfg->pin_dir);
	tc->id = mmp_instance_tc_id(IPPROTO_TCP, cfg->pin_dir);
	tc->raw4 = tc->raw6 = -1;
	tc->idle_ns = (uint64_t)cfg->tc_idle_timeout_s * 1000000000ULL;
	tc->open_ns = mmp_now_ns();
	tc->skel = tc_bpf__open();
	if (!tc->skel) {
		err = -errno;
		pr_err("tc engine: failed to open the BPF object: %s", strerror(-err));
		goto fail;
	}
	bpf_map__set_max_entries(tc->skel->maps.mmp_tc_tuples, 4 * cfg->tc_max_flows);
	bpf_map__set_max_entries(tc->skel->maps.mmp_tc_flows, cfg->tc_max_flows);
	bpf_map__set_max_entries(tc->skel->maps.mmp_tc_carry, cfg->tc_max_flows);
	/* IPv4 ICMP errors go to the upstream's address only where lo accepts them (bpf/tc_icmp.h). */
	tc->skel->rodata->icmp4_to_upstream = mmp_lo_sysctls_ok();
	tc->skel->rodata->mmp_tc_upstream_mark = cfg->mark;
	err = adopt_pins(tc);
	if (err) {
		/* Pins of another layout are refused, not removed: `cleanup` does that. */
		release(tc);
		return err;
	}
	err = tc_bpf__load(tc->skel);
	if (err) {
		pr_err("tc engine: the kernel refused the TC programs: %s (rerun with -v 2 for the verifier log)",
		       strerror(-err));
		goto fail;
	}
	tc->tuples_fd = bpf_map__fd(tc->skel->maps.mmp_tc_tuples);
	tc->flows_fd = bpf_map__fd(tc->skel->maps.mmp_tc_flows);
	tc->carry_fd = bpf_map__fd(tc->skel->maps.mmp_tc_carry);
	/* Unknown until looked at (an adopted map may hold tuples): tuple_writes 1, empty_at 0. */
	atomic_store(&tc->tuple_writes, 1);
	atomic_store(&tc->tuple_writes_done, 1);
	/* The pin directory's lock makes this the only instance: its hand-offs in HOLD or FREEZE died with it. */
	if (tc->adopting) {
		int n = mmp_tc_collect(tc, CLOSED_LINGER_NS);

		if (n > 0)
			pr_info("tc engine: collected %d flow entries left by the previous instance in %s", n,
				tc->pin_dir);
		/*
		 * The port marks live in .bss, which is not pinned: without them
		 * the new programs would pass the adopted flows' packets to
		 * sockets that no longer exist, which answer with RSTs.
		 */
		mmp_tc_mark_adopted_ports(tc);
	}

	tc->ifindex[0] = if_nametoindex("lo");
	tc->nifaces = 1;
	for (int i = 0; i < cfg->n_ifaces && tc->nifaces < MAX_IFACES; i++) {
		int idx = if_nametoindex(cfg->ifaces[i]);

		if (!idx) {
			err = -ENODEV;
			pr_err("tc engine: no interface named %s (check --iface)", cfg->ifaces[i]);
			goto fail;
		}
		tc->ifindex[tc->nifaces++] = idx;
	}
	if (!cfg->n_ifaces)
		add_up_interfaces(tc);
	/*
	 * lo ingress sees both connections when the load balancer is local, and
	 * the upstream's side of a remote one. Ingress, not egress: a segment
	 * judged at lo egress can sit in the backlog queue under load and reach
	 * a socket after it was frozen and closed, which answers with an RST.
	 * At ingress the verdict and the delivery happen in one softirq.
	 */
	err = attach_hook(tc, 0, BPF_TC_INGRESS, bpf_program__fd(tc->skel->progs.mmp_tc_ingress));
	for (int i = 1; !err && i < tc->nifaces; i++) {
		err = attach_hook(tc, i, BPF_TC_INGRESS, bpf_program__fd(tc->skel->progs.mmp_tc_ingress));
		if (!err)
			err = attach_hook(tc, i, BPF_TC_EGRESS, bpf_program__fd(tc->skel->progs.mmp_tc_egress));
	}
	if (err)
		goto fail;
	bpf_object__for_each_map(map, tc->skel->obj) {
		if (is_internal_map(map) || (tc->adopting && pinned_already(tc, map)))
			continue;
		err = mmp_pin_map(tc->pin_dir, map);
		if (err)
			goto fail;
	}
	if (tc->nifaces > 1 && !mmp_lo_sysctls_ok())
		pr_err("warning: lo's route_localnet/accept_local are off: IPv4 flows from remote load balancers stay on splice (fix: mmproxy-bpf setup-routing, or sysctl -w net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1)");
	mmp_tc_note_empty(tc);
	if (tc->adopting && mmp_tc_flow_count(tc) > 0)
		pr_info("tc engine: adopted %d spliced flows from the previous instance in %s", mmp_tc_flow_count(tc),
			tc->pin_dir);
	tc->raw4 = open_raw(AF_INET);
	tc->raw6 = open_raw(AF_INET6);
	if (tc->raw4 < 0) {
		err = tc->raw4;
		pr_err("tc engine: failed to open a raw socket for window updates: %s (needs CAP_NET_RAW)",
		       strerror(-err));
		goto fail;
	}
	*out = tc;
	return 0;
fail:
	/*
	 * A start that failed after adopting a predecessor's pins leaves them,
	 * and every filter, as they were: its spliced flows keep running (on
	 * its programs, or on ours where REPLACE already took over: they read
	 * the same maps) and the next good start adopts them (docs/DESIGN.md
	 * §3c, "A failed restart").
	 */
	if (tc->adopting) {
		pr_err("tc engine: start failed after adopting the pins in %s: they and the filters stay as they were, for the previous instance's spliced flows and the next start",
		       tc->pin_dir);
		release(tc);
		return err;
	}
	mmp_tc_unload(tc, false);
	return err;
}

int mmp_tc_flow_count(struct mmp_tc *tc)
{
	uint64_t key, *prev = NULL;
	int n = 0;

	while (bpf_map_get_next_key(tc->flows_fd, prev, &key) == 0) {
		prev = &key;
		n++;
	}
	return n;
}

void mmp_tc_unload(struct mmp_tc *tc, bool keep)
{
	if (!tc)
		return;
	/* Handing over: the successor adopted the maps and replaced the filters (docs/DESIGN.md §15). */
	if (mmp_handing_over()) {
		release(tc);
		return;
	}
	/* Flows that already ended (FIN both ways, RST) need no successor. */
	if (tc->skel && tc->flows_fd > 0)
		mmp_tc_collect(tc, 0);
	if (keep && tc->skel && mmp_tc_flow_count(tc) > 0) {
		/* Spliced flows live in the kernel: leave the filters and pins for the next instance. */
		pr_info("tc engine: %d spliced flows keep running; filters and pins stay in %s (mmproxy-bpf cleanup removes them)",
			mmp_tc_flow_count(tc), tc->pin_dir);
	} else {
		if (tc->skel && tc->nifaces > 0) {
			detach_hook(tc, 0, BPF_TC_INGRESS);
			for (int i = 1; i < tc->nifaces; i++) {
				detach_hook(tc, i, BPF_TC_INGRESS);
				detach_hook(tc, i, BPF_TC_EGRESS);
			}
			for (int i = 0; i < tc->nifaces; i++)
				mmp_clsact_remove_if_empty(tc->ifindex[i]);
		}
		for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
			mmp_unpin(tc->pin_dir, pinned_maps[i]);
	}
	release(tc);
}

int mmp_tc_detach_everywhere(struct mmp_tc_id id)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int removed = 0;

	for (i = ifs; i && i->if_index; i++) {
		bool ours = false;

		for (int dir = 0; dir < 2; dir++) {
			DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = i->if_index,
					    .attach_point = dir ? BPF_TC_EGRESS : BPF_TC_INGRESS);
			DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = id.handle, .priority = id.prio);

			if (bpf_tc_detach(&hook, &opts) == 0) {
				printf("removed: tc filter pref %u handle 0x%x on %s %s\n", id.prio, id.handle,
				       i->if_name, dir ? "egress" : "ingress");
				removed++;
				ours = true;
			}
		}
		if (ours && mmp_clsact_remove_if_empty((int)i->if_index) == 1)
			printf("removed: clsact qdisc on %s (no filter left on it)\n", i->if_name);
	}
	if_freenameindex(ifs);
	return removed;
}
