// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h> /* TCP_REPAIR_* */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "clsact.h"
#include "log.h"
#include "netlink.h"
#include "mmp_maps.h"
#include "mmp_tc.h"
#include "pins.h"
#include "routing.h"
#include "sockaddr.h"
#include "sockinfo.h"
#include "splice.h"
#include "tc_engine.h"
#include "tc_packet.h"
#include "tc.skel.h"
#include "worker.h"

/*
 * Our filters' handle on every hook: "MM". The priority is 0x4d4d for the
 * default pin directory and another one per --pin-dir, so that two instances
 * in one namespace each keep their own filter (a restart with the same
 * directory replaces its predecessor's in place).
 */
#define MMP_TC_HANDLE 0x4d4d
#define MMP_TC_PRIO 0x4d4d
/*
 * How long a flow may take to quiet down (a peer that does not read keeps our
 * send queue full). It then runs on splice and is tried again later, with
 * backoff, up to HOLD_ATTEMPTS times.
 */
#define HOLD_TIMEOUT_MS 300
#define HOLD_ATTEMPTS 5
#define HOLD_RETRY_MS 500
#define FREEZE_SETTLE_US 50
/* Translated TSvals start this far (ms) above what the receiver last saw. */
#define TS_MARGIN 100
/* FIN both ways or RST: entries stay this long for the last ACKs/retransmits. */
#define CLOSED_LINGER_NS (2ULL * 1000000000ULL)
/*
 * A hand-off holds a flow for HOLD_TIMEOUT_MS at most: a HOLD or FREEZE entry
 * this old was left by an instance that died mid-hand-off (docs/DESIGN.md,
 * tc engine hardening).
 */
#define ORPHAN_NS (60ULL * 1000000000ULL)
#define MAX_IFACES 32

struct mmp_tc {
	struct tc_bpf *skel;
	char pin_dir[PATH_MAX - 64];
	int tuples_fd, flows_fd, stats_fd;
	int ifindex[MAX_IFACES]; /* [0] is lo */
	int nifaces;
	int raw4, raw6; /* window updates */
	uint32_t prio; /* our filters' priority, from the pin directory */
	bool adopting; /* reusing a previous instance's pinned maps */
	uint64_t idle_ns;
	uint64_t open_ns; /* HOLD/FREEZE entries older than this were left by a previous instance */
};

static const char *const pinned_maps[] = {
	MMP_TC_TUPLES_MAP, MMP_TC_FLOWS_MAP, MMP_TC_STATS_MAP, MMP_TC_COUNTERS_MAP,
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the TC programs' coarse clock runs at most a tick behind it */
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int gc(struct mmp_tc *tc, uint64_t linger_ns);

uint32_t mmp_tc_priority(const char *pin_dir)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	if (!strcmp(pin_dir, MMP_PIN_DIR_DEFAULT))
		return MMP_TC_PRIO;
	for (const char *c = pin_dir; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	return 0x4e00 + h % 0x1000;
}

static int attach_hook(struct mmp_tc *tc, int idx, enum bpf_tc_attach_point where, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tc->ifindex[idx], .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = MMP_TC_HANDLE, .priority = tc->prio,
			    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	char name[IF_NAMESIZE] = "?";
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		goto fail;
	/* REPLACE: a restarted instance takes over its predecessor's filter in place. */
	err = bpf_tc_attach(&hook, &opts);
	if (!err)
		return 0;
fail:
	if_indextoname(tc->ifindex[idx], name);
	pr_err("tc engine: failed to attach to %s %s: %s", name, where == BPF_TC_EGRESS ? "egress" : "ingress",
	       strerror(-err));
	return err;
}

static void detach_hook(struct mmp_tc *tc, int idx, enum bpf_tc_attach_point where)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = tc->ifindex[idx], .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = MMP_TC_HANDLE, .priority = tc->prio);

	/* Our filter only: the clsact qdisc may carry other filters (the UDP engine's, other tools'). */
	bpf_tc_detach(&hook, &opts);
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
		int fd, err;

		if (is_internal_map(map))
			continue;
		snprintf(path, sizeof(path), "%s/%s", tc->pin_dir, bpf_map__name(map));
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != bpf_map__type(map) ||
		    info.key_size != bpf_map__key_size(map) || info.value_size != bpf_map__value_size(map) ||
		    info.map_flags != bpf_map__map_flags(map)) {
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

int mmp_tc_open(const struct mmp_config *cfg, struct mmp_tc **out)
{
	struct mmp_tc *tc;
	struct bpf_map *map;
	int err;

	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return -ENOMEM;
	snprintf(tc->pin_dir, sizeof(tc->pin_dir), "%s", cfg->pin_dir);
	tc->prio = mmp_tc_priority(cfg->pin_dir);
	tc->raw4 = tc->raw6 = -1;
	tc->idle_ns = (uint64_t)cfg->tc_idle_timeout_s * 1000000000ULL;
	tc->open_ns = now_ns();
	tc->skel = tc_bpf__open();
	if (!tc->skel) {
		err = -errno;
		pr_err("tc engine: failed to open the BPF object: %s", strerror(-err));
		goto fail;
	}
	bpf_map__set_max_entries(tc->skel->maps.mmp_tc_tuples, 4 * cfg->tc_max_flows);
	bpf_map__set_max_entries(tc->skel->maps.mmp_tc_flows, cfg->tc_max_flows);
	bpf_map__set_max_entries(tc->skel->maps.mmp_tc_stats, cfg->tc_max_flows);
	/* IPv4 ICMP errors go to the upstream's address only where lo accepts them (bpf/tc_icmp.h). */
	tc->skel->rodata->icmp4_to_upstream = mmp_lo_sysctls_ok();
	err = adopt_pins(tc);
	if (err)
		goto fail;
	err = tc_bpf__load(tc->skel);
	if (err) {
		pr_err("tc engine: the kernel refused the TC programs: %s (rerun with -v 2 for the verifier log)",
		       strerror(-err));
		goto fail;
	}
	tc->tuples_fd = bpf_map__fd(tc->skel->maps.mmp_tc_tuples);
	tc->flows_fd = bpf_map__fd(tc->skel->maps.mmp_tc_flows);
	tc->stats_fd = bpf_map__fd(tc->skel->maps.mmp_tc_stats);
	/* The pin directory's lock makes this the only instance: its hand-offs in HOLD or FREEZE died with it. */
	if (tc->adopting) {
		int n = gc(tc, CLOSED_LINGER_NS);

		if (n > 0)
			pr_info("tc engine: collected %d flow entries left by the previous instance in %s", n,
				tc->pin_dir);
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
		if (is_internal_map(map))
			continue;
		err = mmp_pin_map(tc->pin_dir, map);
		if (err)
			goto fail;
	}
	if (tc->nifaces > 1 && !mmp_lo_sysctls_ok())
		pr_err("warning: lo's route_localnet/accept_local are off: IPv4 flows from remote load balancers stay on splice (fix: mmproxy-bpf setup-routing, or sysctl -w net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1)");
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
	mmp_tc_close(tc, false);
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

void mmp_tc_close(struct mmp_tc *tc, bool keep)
{
	if (!tc)
		return;
	/* Flows that already ended (FIN both ways, RST) need no successor. */
	if (tc->skel && tc->flows_fd > 0)
		gc(tc, 0);
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
	if (tc->raw4 >= 0)
		close(tc->raw4);
	if (tc->raw6 >= 0)
		close(tc->raw6);
	tc_bpf__destroy(tc->skel);
	free(tc);
}

int mmp_tc_conn2_mss(int client_fd)
{
	int mss = 0;
	socklen_t len = sizeof(mss);

	/* conn1's MSS: the upstream's segments must fit the load balancer's path. */
	if (getsockopt(client_fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len))
		return 0;
	/* TCP_MAXSEG takes at most 32767; above that (loopback) both paths carry 64 KiB anyway. */
	return mss > 0 && mss <= 32767 ? mss : 0;
}

/* ---- the hand-off ---- */

static int addr_of(int fd, bool peer, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);
	int ret = peer ? getpeername(fd, (struct sockaddr *)ss, &len) : getsockname(fd, (struct sockaddr *)ss, &len);

	if (ret)
		return -errno;
	mmp_unmap_v4(ss); /* the wire carries IPv4 for ::ffff:a.b.c.d */
	return 0;
}

static void make_tuple(struct mmp_tc_tuple *t, const struct sockaddr_storage *src, const struct sockaddr_storage *dst)
{
	memset(t, 0, sizeof(*t));
	if (src->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)src, *d = (const void *)dst;

		t->family = 4;
		t->sport = s->sin_port;
		t->dport = d->sin_port;
		memcpy(t->saddr, &s->sin_addr, 4);
		memcpy(t->daddr, &d->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *s = (const void *)src, *d = (const void *)dst;

		t->family = 6;
		t->sport = s->sin6_port;
		t->dport = d->sin6_port;
		memcpy(t->saddr, &s->sin6_addr, 16);
		memcpy(t->daddr, &d->sin6_addr, 16);
	}
}

void mmp_tc_reverse_tuple(struct mmp_tc_tuple *r, const struct mmp_tc_tuple *t)
{
	*r = *t;
	r->sport = t->dport;
	r->dport = t->sport;
	memcpy(r->saddr, t->daddr, 16);
	memcpy(r->daddr, t->saddr, 16);
}

/* The four 4-tuples of a flow: [role] as in enum mmp_tc_role. */
struct flow_tuples {
	struct mmp_tc_tuple t[4];
};

/* The tuples of a spliced flow, derived from its translation: each peer's tuple is the reverse of what it receives. */
static void tuples_of_flow(const struct mmp_tc_flow *flow, struct flow_tuples *ft)
{
	mmp_tc_reverse_tuple(&ft->t[MMP_TC_ROLE_UP], &flow->down.out);
	mmp_tc_reverse_tuple(&ft->t[MMP_TC_ROLE_DOWN], &flow->up.out);
	ft->t[MMP_TC_ROLE_HOLD_CONN1] = flow->down.out;
	ft->t[MMP_TC_ROLE_HOLD_CONN2] = flow->up.out;
}

/* Both sides sent a FIN, or one reset: nothing but stray segments can follow. */
static bool flow_ended(const struct mmp_tc_stats *st)
{
	return st->rst || (st->fin[0] && st->fin[1]);
}

static int flow_tuples(struct mmp_conn *c, struct flow_tuples *ft)
{
	struct sockaddr_storage l, p, cl, u;
	int err;

	err = addr_of(c->client.fd, true, &l);
	if (!err)
		err = addr_of(c->client.fd, false, &p);
	if (!err)
		err = addr_of(c->upstream.fd, false, &cl);
	if (!err)
		err = addr_of(c->upstream.fd, true, &u);
	if (err)
		return err;
	if (l.ss_family != cl.ss_family)
		return -EAFNOSUPPORT;
	make_tuple(&ft->t[MMP_TC_ROLE_UP], &l, &p);
	make_tuple(&ft->t[MMP_TC_ROLE_DOWN], &u, &cl);
	make_tuple(&ft->t[MMP_TC_ROLE_HOLD_CONN1], &p, &l);
	make_tuple(&ft->t[MMP_TC_ROLE_HOLD_CONN2], &cl, &u);
	return 0;
}

#define TCP_STATE_ESTABLISHED 1 /* include/net/tcp_states.h */
#define OPT_MATCH (TCPI_OPT_TIMESTAMPS | TCPI_OPT_SACK | TCPI_OPT_ECN | TCPI_OPT_WSCALE)

/* NULL when the pair can be spliced at the packet level, else why not. */
static const char *ineligible(struct mmp_tc *tc, struct mmp_conn *c, uint32_t w_cfg_mark)
{
	struct tcp_info a, b;
	bool local_lb;
	struct sockaddr_storage l;

	if (mmp_tcp_info(c->client.fd, &a) || mmp_tcp_info(c->upstream.fd, &b))
		return "TCP_INFO failed";
	if (a.tcpi_state != TCP_STATE_ESTABLISHED)
		return "the load balancer's connection is not established (it half-closed or reset already)";
	if (b.tcpi_state != TCP_STATE_ESTABLISHED)
		return "the upstream connection is not established (it half-closed or reset already)";
	if ((a.tcpi_options & OPT_MATCH) != (b.tcpi_options & OPT_MATCH))
		return "the two connections negotiated different options (timestamps, SACK, ECN or window scaling)";
	if ((b.tcpi_options & TCPI_OPT_WSCALE) && b.tcpi_rcv_wscale < a.tcpi_snd_wscale)
		return "the upstream connection's window scale is below the load balancer's";
	if (w_cfg_mark)
		return "SO_MARK (-m) is set: marks and netfilter do not apply to packet-level splicing";
	if (addr_of(c->client.fd, true, &l))
		return "getpeername failed";
	/* A remote load balancer needs the hooks on the interface its packets use. */
	local_lb = mmp_is_local_addr(&l);
	c->tc_oif = 0;
	if (!local_lb) {
		int oif = mmp_route_oif(&l);

		if (oif <= 0)
			return "no route back to the load balancer";
		for (int i = 1; i < tc->nifaces; i++)
			if (tc->ifindex[i] == oif)
				c->tc_oif = oif;
		if (!c->tc_oif)
			return "the load balancer's interface is not hooked (add it with --iface)";
		/*
		 * Its packets are redirected into lo without a route. Early demux
		 * lends them the upstream socket's cached one, but any routing
		 * change in the namespace invalidates that; from then on every
		 * packet is routed, and dropped as a martian (127/8 without
		 * route_localnet) unless lo allows it: the flow would stall for good.
		 */
		if (l.ss_family == AF_INET && !mmp_lo_sysctls_ok())
			return "lo's route_localnet/accept_local are off, so packets from a remote load balancer cannot be redirected into lo (fix: mmproxy-bpf setup-routing)";
	}
	return NULL;
}

/* Each direction's packets are the flow's only on the interface they arrive on: lo, or the remote load balancer's. */
static void set_ifaces(struct mmp_tc *tc, const struct mmp_conn *c, struct mmp_tc_flow *flow)
{
	flow->up.in_ifindex = c->tc_oif ? (uint32_t)c->tc_oif : (uint32_t)tc->ifindex[0];
	flow->down.in_ifindex = tc->ifindex[0];
}

static void delete_flow(struct mmp_tc *tc, uint64_t flow, const struct flow_tuples *ft)
{
	for (int i = 0; i < 4; i++) {
		struct mmp_tc_tuple_val tv;

		/* A newer flow may already own this tuple (port reuse after RST): leave it. */
		if (bpf_map_lookup_elem(tc->tuples_fd, &ft->t[i], &tv) == 0 && tv.flow == flow)
			bpf_map_delete_elem(tc->tuples_fd, &ft->t[i]);
	}
	bpf_map_delete_elem(tc->flows_fd, &flow);
	bpf_map_delete_elem(tc->stats_fd, &flow);
}

static const char *client_name(struct mmp_conn *c, char *buf)
{
	return mmp_fmt_addr((const void *)(c->src_addr.ss_family ? &c->src_addr : &c->lb_addr), buf);
}

/*
 * A tuple still held by a flow that already ended (its last packets were a
 * RST or FINs, or its entries are half gone): the ports were reused. Remove
 * it and return true; a live owner keeps it (false).
 */
static bool forget_stale_tuple(struct mmp_tc *tc, const struct mmp_tc_tuple *t)
{
	struct mmp_tc_tuple_val tv;
	struct mmp_tc_stats st;
	struct mmp_tc_flow flow;

	if (bpf_map_lookup_elem(tc->tuples_fd, t, &tv))
		return true; /* gone meanwhile */
	if (bpf_map_lookup_elem(tc->flows_fd, &tv.flow, &flow) == 0 &&
	    bpf_map_lookup_elem(tc->stats_fd, &tv.flow, &st) == 0 &&
	    !(flow.mode == MMP_TC_MODE_SPLICE && flow_ended(&st)))
		return false;
	bpf_map_delete_elem(tc->tuples_fd, t);
	return true;
}

void mmp_tc_begin(struct mmp_worker *w, struct mmp_conn *c)
{
	struct mmp_tc *tc = w->tc;
	struct mmp_tc_flow flow = { .mode = MMP_TC_MODE_HOLD };
	struct mmp_tc_stats st = { 0 };
	struct flow_tuples ft;
	char a[MMP_ADDRSTRLEN];
	const char *why;

	if (!tc || c->state != CONN_SPLICING)
		return;
	why = ineligible(tc, c, w->cfg->mark);
	if (!why && flow_tuples(c, &ft))
		why = "the two connections are of different IP families";
	if (!why && mmp_sock_cookie(c->client.fd, &c->tc_flow))
		why = "SO_COOKIE failed";
	if (why) {
		atomic_fetch_add(&w->counters->tc_ineligible, 1);
		pr_debug("tc engine: client %s stays on splice: %s", client_name(c, a), why);
		return;
	}
	set_ifaces(tc, c, &flow);
	st.last_seen_ns = now_ns(); /* the hand-off's age, should this instance die in it */
	if (bpf_map_update_elem(tc->stats_fd, &c->tc_flow, &st, BPF_NOEXIST) ||
	    bpf_map_update_elem(tc->flows_fd, &c->tc_flow, &flow, BPF_NOEXIST))
		goto full;
	for (int i = 0; i < 4; i++) {
		struct mmp_tc_tuple_val tv = { .flow = c->tc_flow, .role = i };

		if (bpf_map_update_elem(tc->tuples_fd, &ft.t[i], &tv, BPF_NOEXIST) &&
		    (errno != EEXIST || !forget_stale_tuple(tc, &ft.t[i]) ||
		     bpf_map_update_elem(tc->tuples_fd, &ft.t[i], &tv, BPF_NOEXIST)))
			goto full;
	}
	memcpy(c->tc_tuples, ft.t, sizeof(c->tc_tuples));
	c->tc_holding = true;
	c->tc_attempts++;
	c->tc_quiet = 0;
	c->tc_start_ns = now_ns();
	c->tc_deadline_ms = mmp_now_ms() + HOLD_TIMEOUT_MS;
	mmp_worker_poll_add(w, c);
	return;
full:
	/* Never evict a live flow: a full map only means this one stays on splice. */
	atomic_fetch_add(&w->counters->tc_ineligible, 1);
	pr_conn("tc engine: flow maps full or entry exists (%s); client %s stays on splice (raise --tc-max-flows)",
		strerror(errno), client_name(c, a));
	delete_flow(tc, c->tc_flow, &ft);
}

void mmp_tc_abort(struct mmp_worker *w, struct mmp_conn *c, const char *why)
{
	struct flow_tuples ft;
	char a[MMP_ADDRSTRLEN];

	if (!c->tc_holding)
		return;
	c->tc_holding = false;
	/*
	 * The tuples saved at the start, not getsockname(): a socket that died
	 * has no name any more, and its entries would leak (regression).
	 * The proxy's sockets advertised a zero window: splice's next ACKs reopen it.
	 */
	memcpy(ft.t, c->tc_tuples, sizeof(ft.t));
	delete_flow(w->tc, c->tc_flow, &ft);
	atomic_fetch_add(&w->counters->tc_aborted, 1);
	pr_debug("tc engine: hand-off of client %s aborted (%s): staying on splice", client_name(c, a), why);
}

static int queue_bytes(int fd, unsigned long req)
{
	int n = 0;

	return ioctl(fd, req, &n) ? -1 : n;
}

/* Nothing queued anywhere: both sockets' receive and send queues, and our pipes. */
static bool quiet(struct mmp_conn *c)
{
	return c->dir[0].in_pipe == 0 && c->dir[1].in_pipe == 0 && queue_bytes(c->client.fd, SIOCINQ) == 0 &&
	       queue_bytes(c->client.fd, SIOCOUTQ) == 0 && queue_bytes(c->upstream.fd, SIOCINQ) == 0 &&
	       queue_bytes(c->upstream.fd, SIOCOUTQ) == 0;
}

struct frozen {
	uint32_t rcv_nxt, write_seq, tsval;
	uint32_t ts_recent; /* the peer's last TSval this socket accepted (read_ts_recent) */
	struct tcp_repair_window win;
	struct tcp_info ti;
};

static int set_repair(int fd, int on)
{
	return setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)) ? -errno : 0;
}

static int read_frozen(int fd, struct frozen *f)
{
	int q = TCP_RECV_QUEUE;
	socklen_t len = sizeof(uint32_t);

	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	    getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &f->rcv_nxt, &len))
		return -errno;
	q = TCP_SEND_QUEUE;
	len = sizeof(uint32_t);
	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	    getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &f->write_seq, &len))
		return -errno;
	len = sizeof(uint32_t);
	if (getsockopt(fd, IPPROTO_TCP, TCP_TIMESTAMP, &f->tsval, &len))
		return -errno;
	len = sizeof(f->win);
	if (getsockopt(fd, IPPROTO_TCP, TCP_REPAIR_WINDOW, &f->win, &len))
		return -errno;
	return mmp_tcp_info(fd, &f->ti);
}

/*
 * The peer's last TSval the socket receiving `incoming` accepted, read by
 * mmp_tc_ts_probe: the TSval offsets come from the frozen sockets' state,
 * never from a packet (docs/DESIGN.md, tc engine hardening).
 */
static int read_ts_recent(struct mmp_tc *tc, const struct mmp_tc_tuple *incoming, uint32_t *ts)
{
	struct __attribute__((packed)) {
		uint8_t eth[14];
		struct mmp_tc_ts_query q;
	} in = { 0 }, out = { 0 };
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = &in, .data_size_in = sizeof(in), .data_out = &out,
			    .data_size_out = sizeof(out), .repeat = 1);
	int err;

	in.q.tuple = *incoming;
	err = bpf_prog_test_run_opts(bpf_program__fd(tc->skel->progs.mmp_tc_ts_probe), &opts);
	if (err)
		return err;
	if (!out.q.found)
		return -ENOENT;
	*ts = out.q.ts_recent;
	return 0;
}

static uint8_t wscale(const struct tcp_info *ti, bool snd)
{
	if (!(ti->tcpi_options & TCPI_OPT_WSCALE))
		return 0;
	return snd ? ti->tcpi_snd_wscale : ti->tcpi_rcv_wscale;
}

/* Both directions' translation from the frozen state (1 = conn1 L<->P, 2 = conn2 C<->U). */
static void build_flow(struct mmp_tc_flow *flow, const struct flow_tuples *ft, const struct frozen *f1,
		       const struct frozen *f2)
{
	bool ts = f1->ti.tcpi_options & TCPI_OPT_TIMESTAMPS;
	bool sack = f1->ti.tcpi_options & TCPI_OPT_SACK;

	memset(flow, 0, sizeof(*flow));
	flow->mode = MMP_TC_MODE_SPLICE;
	/* L->P becomes C->U: L's bytes continue conn2's stream; L's acks cover U's bytes. */
	flow->up.out = ft->t[MMP_TC_ROLE_HOLD_CONN2];
	flow->up.seq_delta = f2->write_seq - f1->rcv_nxt;
	flow->up.ack_delta = f2->rcv_nxt - f1->write_seq;
	flow->up.ts_base = f2->tsval + TS_MARGIN;
	/* L's next TSvals are >= the last one conn1 accepted: translated, >= ts_base. */
	flow->up.tsval_delta = ts ? flow->up.ts_base - f1->ts_recent : 0;
	flow->up.wscale_in = wscale(&f1->ti, true);
	flow->up.wscale_out = wscale(&f2->ti, false);
	/* U->C becomes P->L. */
	flow->down.out = ft->t[MMP_TC_ROLE_HOLD_CONN1];
	flow->down.seq_delta = f1->write_seq - f2->rcv_nxt;
	flow->down.ack_delta = f1->rcv_nxt - f2->write_seq;
	flow->down.ts_base = f1->tsval + TS_MARGIN;
	flow->down.tsval_delta = ts ? flow->down.ts_base - f2->ts_recent : 0;
	flow->down.wscale_in = wscale(&f2->ti, true);
	flow->down.wscale_out = wscale(&f1->ti, false);
	flow->up.timestamps = flow->down.timestamps = ts;
	flow->up.sack = flow->down.sack = sack;
}

/*
 * The peers sat on a zero window: tell each the real window of the far end,
 * in its own scale, with an in-window pure ACK. Client first.
 */
static void send_window_updates(struct mmp_tc *tc, const struct mmp_tc_flow *flow, const struct frozen *f1,
				const struct frozen *f2)
{
	struct mmp_tc_ack to_lb = {
		.tuple = flow->down.out,
		.seq = f1->write_seq,
		.ack = f1->rcv_nxt,
		.window = f2->win.snd_wnd >> wscale(&f1->ti, false),
		.timestamps = flow->down.timestamps,
		.tsval = flow->down.ts_base,
	};
	struct mmp_tc_ack to_up = {
		.tuple = flow->up.out,
		.seq = f2->write_seq,
		.ack = f2->rcv_nxt,
		.window = f1->win.snd_wnd >> wscale(&f2->ti, false),
		.timestamps = flow->up.timestamps,
		.tsval = flow->up.ts_base,
	};
	int fd = flow->up.out.family == 4 ? tc->raw4 : tc->raw6;
	int err;

	err = mmp_tc_send_ack(fd, &to_lb);
	if (!err)
		err = mmp_tc_send_ack(fd, &to_up);
	if (err)
		pr_conn("tc engine: failed to send a window update: %s (the peers recover by window probes)",
			strerror(-err));
}

/*
 * An RST that arrived between the state check and the SPLICE write hit a
 * frozen socket: nothing will ever translate it. Reset the other peer
 * ourselves and forget the flow. Returns true when that happened.
 */
static bool reset_during_switch(struct mmp_worker *w, struct mmp_conn *c, const struct mmp_tc_flow *flow,
				const struct frozen *f1, const struct frozen *f2, const struct flow_tuples *ft)
{
	struct mmp_tc *tc = w->tc;
	struct tcp_info a, b;
	struct mmp_tc_ack rst = { .flags = 0x14 }; /* RST|ACK */
	int fd = flow->up.out.family == 4 ? tc->raw4 : tc->raw6;
	char name[MMP_ADDRSTRLEN];

	if (mmp_tcp_info(c->client.fd, &a) || mmp_tcp_info(c->upstream.fd, &b))
		return false;
	if (a.tcpi_state == TCP_STATE_ESTABLISHED && b.tcpi_state == TCP_STATE_ESTABLISHED)
		return false;
	if (a.tcpi_state != TCP_STATE_ESTABLISHED) {
		/* The load balancer reset conn1: reset the upstream, from the client. */
		rst.tuple = flow->up.out;
		rst.seq = f2->write_seq;
		rst.ack = f2->rcv_nxt;
	} else {
		rst.tuple = flow->down.out;
		rst.seq = f1->write_seq;
		rst.ack = f1->rcv_nxt;
	}
	mmp_tc_send_ack(fd, &rst);
	delete_flow(tc, c->tc_flow, ft);
	c->tc_holding = false;
	pr_debug("tc engine: hand-off of client %s aborted (a reset arrived during the switch): forwarded it",
		 client_name(c, name));
	atomic_fetch_add(&w->counters->resets_forwarded, 1);
	/* The hand-off has an outcome like any other: every flow is counted once. */
	atomic_fetch_add(&w->counters->tc_aborted, 1);
	mmp_conn_close(w, c, false, false);
	return true;
}

/* Freeze both sockets, switch the flow to SPLICE, close the sockets silently. */
static void switch_over(struct mmp_worker *w, struct mmp_conn *c)
{
	struct mmp_tc *tc = w->tc;
	struct mmp_tc_flow flow = { .mode = MMP_TC_MODE_FREEZE };
	struct mmp_tc_stats st = { 0 };
	struct flow_tuples ft;
	struct frozen f1, f2;
	char a[MMP_ADDRSTRLEN];
	uint64_t took_us;
	bool ts;

	memcpy(ft.t, c->tc_tuples, sizeof(ft.t));
	set_ifaces(tc, c, &flow);
	if (bpf_map_update_elem(tc->flows_fd, &c->tc_flow, &flow, BPF_EXIST)) {
		mmp_tc_abort(w, c, "flow entry vanished");
		return;
	}
	/*
	 * A segment another CPU let through just before FREEZE is still on its
	 * way into the socket: give it time to land, so the state we read next
	 * includes it (or quiet() below sees it and aborts).
	 */
	usleep(FREEZE_SETTLE_US);
	/*
	 * A FIN or RST that reached a socket before the freeze leaves it not
	 * ESTABLISHED: that flow stays on splice, which forwards it.
	 */
	if (set_repair(c->client.fd, 1) || set_repair(c->upstream.fd, 1) || read_frozen(c->client.fd, &f1) ||
	    read_frozen(c->upstream.fd, &f2) || !quiet(c) || f1.ti.tcpi_state != TCP_STATE_ESTABLISHED ||
	    f2.ti.tcpi_state != TCP_STATE_ESTABLISHED) {
		/* Rare: back to the live sockets; leaving repair mode sends a window probe. */
		set_repair(c->client.fd, 0);
		set_repair(c->upstream.fd, 0);
		mmp_tc_abort(w, c, "freezing failed or data arrived while freezing");
		return;
	}
	ts = f1.ti.tcpi_options & TCPI_OPT_TIMESTAMPS;
	f1.ts_recent = f2.ts_recent = 0;
	if (ts && (read_ts_recent(tc, &ft.t[MMP_TC_ROLE_UP], &f1.ts_recent) ||
		   read_ts_recent(tc, &ft.t[MMP_TC_ROLE_DOWN], &f2.ts_recent))) {
		set_repair(c->client.fd, 0);
		set_repair(c->upstream.fd, 0);
		mmp_tc_abort(w, c, "reading the peers' last timestamps failed");
		return;
	}
	build_flow(&flow, &ft, &f1, &f2);
	set_ifaces(tc, c, &flow);
	if (c->tc_oif) {
		/* Remote load balancer: its packets come in on tc_oif and go into lo; replies go out tc_oif. */
		flow.up.redirect_ifindex = tc->ifindex[0];
		flow.up.redirect_ingress = 1;
		flow.down.redirect_ifindex = c->tc_oif;
	}
	/* Nothing is translated yet (FREEZE): the idle clock starts now. */
	st.last_seen_ns = now_ns();
	/* What each receiver expects next, and its window: RSTs and FINs are judged by them. */
	st.snd_nxt[0] = f1.rcv_nxt;
	st.snd_nxt[1] = f2.rcv_nxt;
	st.rcv_wnd[0] = f2.win.snd_wnd;
	st.rcv_wnd[1] = f1.win.snd_wnd;
	bpf_map_update_elem(tc->stats_fd, &c->tc_flow, &st, BPF_EXIST);
	if (bpf_map_update_elem(tc->flows_fd, &c->tc_flow, &flow, BPF_EXIST)) {
		set_repair(c->client.fd, 0);
		set_repair(c->upstream.fd, 0);
		mmp_tc_abort(w, c, "switching the flow failed");
		return;
	}
	/* The proxy's own tuples are gone with its sockets; the window updates reuse them. */
	bpf_map_delete_elem(tc->tuples_fd, &ft.t[MMP_TC_ROLE_HOLD_CONN1]);
	bpf_map_delete_elem(tc->tuples_fd, &ft.t[MMP_TC_ROLE_HOLD_CONN2]);
	if (reset_during_switch(w, c, &flow, &f1, &f2, &ft))
		return;
	c->tc_holding = false;
	took_us = (now_ns() - c->tc_start_ns) / 1000;
	atomic_fetch_add(&w->counters->tc_flows, 1);
	pr_debug("tc engine: client %s spliced in the kernel after %llu us (seq +%u/+%u, wscale %u>%u %u>%u)",
		 client_name(c, a), (unsigned long long)took_us, flow.up.seq_delta, flow.down.seq_delta,
		 flow.up.wscale_in, flow.up.wscale_out, flow.down.wscale_in, flow.down.wscale_out);
	/* Closing in repair mode sends nothing: no FIN, no RST. */
	mmp_conn_close(w, c, false, false);
	send_window_updates(tc, &flow, &f1, &f2);
}

void mmp_tc_schedule(struct mmp_worker *w, struct mmp_conn *c)
{
	if (!w->cfg->tc_handoff_delay_ms) {
		mmp_tc_begin(w, c);
		return;
	}
	/* The retry timer doubles as the delay: tc_attempts 0 marks a first try. */
	c->tc_retry_ms = mmp_now_ms() + (uint64_t)w->cfg->tc_handoff_delay_ms;
	mmp_worker_poll_add(w, c);
}

void mmp_tc_retry(struct mmp_worker *w, struct mmp_conn *c)
{
	if (c->state != CONN_SPLICING || !c->tc_retry_ms)
		return;
	if (mmp_now_ms() < c->tc_retry_ms) {
		mmp_worker_poll_add(w, c);
		return;
	}
	c->tc_retry_ms = 0;
	mmp_tc_begin(w, c);
}

/*
 * The seq, ack and TSval a socket would put on a pure ACK now: a moment in
 * repair mode, left without the window probe TCP_REPAIR_OFF would send.
 */
static int peek_ack_state(int fd, struct frozen *f)
{
	int off = TCP_REPAIR_OFF_NO_WP, err;

	err = set_repair(fd, 1);
	if (err)
		return err;
	err = read_frozen(fd, f);
	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)) && !err)
		err = -errno;
	return err;
}

/*
 * HOLD rewrites the window to 0 only in segments the proxy sends. A peer
 * that was sent none since HOLD began (its last data was acked before, or
 * the ACK is still delayed) still has window to use, and the segment it
 * sends next would be dropped in FREEZE and cost it a 200 ms timeout. So,
 * once both queues are empty (the send queue's end is the next seq), tell
 * each peer the zero window ourselves, with an in-window pure ACK.
 */
static void announce_zero_window(struct mmp_tc *tc, struct mmp_conn *c)
{
	const struct mmp_tc_tuple *to[2] = { &c->tc_tuples[MMP_TC_ROLE_HOLD_CONN1],
					     &c->tc_tuples[MMP_TC_ROLE_HOLD_CONN2] };
	int fds[2] = { c->client.fd, c->upstream.fd };

	for (int i = 0; i < 2; i++) {
		struct mmp_tc_ack ack = { .tuple = *to[i], .window = 0 };
		struct frozen f;

		if (peek_ack_state(fds[i], &f))
			continue; /* the flow will find out at FREEZE */
		ack.seq = f.write_seq;
		ack.ack = f.rcv_nxt;
		ack.timestamps = f.ti.tcpi_options & TCPI_OPT_TIMESTAMPS;
		ack.tsval = f.tsval;
		mmp_tc_send_ack(to[i]->family == 4 ? tc->raw4 : tc->raw6, &ack);
	}
}

void mmp_tc_check(struct mmp_worker *w, struct mmp_conn *c)
{
	if (!c->tc_holding || c->state != CONN_SPLICING)
		return;
	if (c->dir[0].src_eof || c->dir[1].src_eof) {
		mmp_tc_abort(w, c, "a FIN arrived during the hand-off");
		return;
	}
	if (!quiet(c)) {
		c->tc_quiet = 0;
		if (mmp_now_ms() > c->tc_deadline_ms) {
			mmp_tc_abort(w, c, "the flow did not quiet down in time");
			if (c->tc_attempts < HOLD_ATTEMPTS) {
				c->tc_retry_ms = mmp_now_ms() + ((uint64_t)HOLD_RETRY_MS << (c->tc_attempts - 1));
				mmp_worker_poll_add(w, c);
			}
		} else {
			mmp_worker_poll_add(w, c);
		}
		return;
	}
	/* Twice in a row: a segment in flight at the first look has landed by the second. */
	if (++c->tc_quiet < 2) {
		announce_zero_window(w->tc, c);
		mmp_worker_poll_add(w, c);
		return;
	}
	switch_over(w, c);
}

int mmp_tc_claim_client(struct mmp_tc *tc, const struct sockaddr *client, const struct sockaddr *upstream)
{
	struct sockaddr_storage c, u;
	struct mmp_tc_tuple down;
	struct mmp_tc_tuple_val tv;
	struct mmp_tc_stats st;
	struct mmp_tc_flow flow;
	struct flow_tuples ft;

	memcpy(&c, client, mmp_sockaddr_len(client));
	memcpy(&u, upstream, mmp_sockaddr_len(upstream));
	mmp_unmap_v4(&c);
	mmp_unmap_v4(&u);
	if (c.ss_family != u.ss_family)
		return 0;
	make_tuple(&down, &u, &c);
	if (bpf_map_lookup_elem(tc->tuples_fd, &down, &tv) || tv.role != MMP_TC_ROLE_DOWN)
		return 0;
	if (bpf_map_lookup_elem(tc->stats_fd, &tv.flow, &st) || bpf_map_lookup_elem(tc->flows_fd, &tv.flow, &flow))
		return 0;
	/* A live spliced flow holds this ip:port, as a live socket would. */
	if (!flow_ended(&st))
		return -EADDRINUSE;
	tuples_of_flow(&flow, &ft);
	delete_flow(tc, tv.flow, &ft);
	return 0;
}

#define SOURCE_TRIES 8

int mmp_tc_unspoofed_source(struct mmp_tc *tc, const struct sockaddr *upstream, struct sockaddr_storage *src)
{
	int held[SOURCE_TRIES], n = 0, fd = -1, err;
	socklen_t len = sizeof(*src);

	/* The source address the kernel would choose: a connected UDP socket sends nothing. */
	fd = socket(upstream->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = connect(fd, upstream, mmp_sockaddr_len(upstream)) || getsockname(fd, (struct sockaddr *)src, &len) ?
		      -errno : 0;
	close(fd);
	if (err)
		return err;
	/*
	 * A port the kernel binds now is free, but may be a spliced flow's,
	 * whose sockets are gone: keep such a port bound while looking further,
	 * so that the kernel offers another one.
	 */
	err = -EADDRINUSE;
	while (n < SOURCE_TRIES) {
		fd = socket(upstream->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			break;
		}
		if (src->ss_family == AF_INET)
			((struct sockaddr_in *)src)->sin_port = 0;
		else
			((struct sockaddr_in6 *)src)->sin6_port = 0;
		len = sizeof(*src);
		if (bind(fd, (struct sockaddr *)src, mmp_sockaddr_len((struct sockaddr *)src)) ||
		    getsockname(fd, (struct sockaddr *)src, &len)) {
			err = -errno;
			close(fd);
			break;
		}
		err = mmp_tc_claim_client(tc, (struct sockaddr *)src, upstream);
		held[n++] = fd;
		if (err != -EADDRINUSE)
			break;
	}
	while (n > 0)
		close(held[--n]);
	return err;
}

int mmp_tc_detach_everywhere(uint32_t prio)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int removed = 0;

	for (i = ifs; i && i->if_index; i++) {
		bool ours = false;

		for (int dir = 0; dir < 2; dir++) {
			DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = i->if_index,
					    .attach_point = dir ? BPF_TC_EGRESS : BPF_TC_INGRESS);
			DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = MMP_TC_HANDLE, .priority = prio);

			if (bpf_tc_detach(&hook, &opts) == 0) {
				printf("removed: tc filter pref %u handle 0x%x on %s %s\n", prio, MMP_TC_HANDLE,
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

/* ---- garbage collection ---- */

/*
 * A hand-off's entries, found by walking the tuples (its flow entry may not
 * name them all: the instance died before the switch wrote them).
 */
static void delete_orphan(struct mmp_tc *tc, uint64_t flow)
{
	struct mmp_tc_tuple key, next;
	bool have = bpf_map_get_next_key(tc->tuples_fd, NULL, &next) == 0;

	while (have) {
		struct mmp_tc_tuple_val tv;

		key = next;
		have = bpf_map_get_next_key(tc->tuples_fd, &key, &next) == 0;
		if (bpf_map_lookup_elem(tc->tuples_fd, &key, &tv) == 0 && tv.flow == flow)
			bpf_map_delete_elem(tc->tuples_fd, &key);
	}
	bpf_map_delete_elem(tc->flows_fd, &flow);
	bpf_map_delete_elem(tc->stats_fd, &flow);
}

/* Returns how many flows were removed. */
static int gc(struct mmp_tc *tc, uint64_t linger_ns)
{
	uint64_t key, next, now = now_ns();
	bool have = bpf_map_get_next_key(tc->stats_fd, NULL, &next) == 0;
	int removed = 0;

	while (have) {
		struct mmp_tc_stats st;
		struct mmp_tc_flow flow;
		uint64_t idle;
		bool done;

		key = next;
		have = bpf_map_get_next_key(tc->stats_fd, &key, &next) == 0;
		if (bpf_map_lookup_elem(tc->stats_fd, &key, &st))
			continue;
		if (bpf_map_lookup_elem(tc->flows_fd, &key, &flow)) {
			/* A hand-off a previous instance died in before writing its flow entry. */
			if (st.last_seen_ns < tc->open_ns) {
				delete_orphan(tc, key);
				removed++;
			}
			continue;
		}
		/*
		 * A hand-off in progress belongs to its worker, unless it was
		 * left by a previous instance (started before this one opened;
		 * the pin directory's lock rules out a live one) or is far older
		 * than any hand-off takes: its claim on the tuple is released.
		 */
		if (flow.mode != MMP_TC_MODE_SPLICE) {
			if (st.last_seen_ns < tc->open_ns ||
			    (st.last_seen_ns < now && now - st.last_seen_ns > ORPHAN_NS)) {
				delete_orphan(tc, key);
				removed++;
			}
			continue;
		}
		/*
		 * Regression: `now` is taken before the walk, and the programs keep
		 * stamping last_seen meanwhile; an unsigned now - last_seen then
		 * wrapped and removed busy flows (every one of them reset).
		 */
		idle = st.last_seen_ns && st.last_seen_ns < now ? now - st.last_seen_ns : 0;
		done = flow_ended(&st) && st.last_seen_ns && idle >= linger_ns;
		/* Idle: no packet at all (keepalives count) for the idle timeout. */
		if (!done && tc->idle_ns && idle > tc->idle_ns)
			done = true;
		if (done) {
			struct flow_tuples ft;

			tuples_of_flow(&flow, &ft);
			delete_flow(tc, key, &ft);
			removed++;
		}
	}
	return removed;
}

void mmp_tc_gc(struct mmp_tc *tc)
{
	gc(tc, CLOSED_LINGER_NS);
}
