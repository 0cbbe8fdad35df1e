// SPDX-License-Identifier: GPL-2.0
/*
 * The fast path's control side: attach bpf/udp.bpf.c's program and write a
 * flow's entries once userspace has opened it. See udp_fast.h.
 *
 * The program goes on clsact with its own handle and a priority ahead of
 * the tc engine's filters, both derived from the pin directory so that UDP
 * instances side by side keep their own (lib/instance.c), and returns TC_ACT_UNSPEC for packets that are not
 * theirs, so a TCP instance using the tc engine on the same host still sees
 * its packets. On exit only our filters are removed; the qdisc may carry
 * other filters.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/clock.h"
#include "lib/clsact.h"
#include "lib/instance.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "lib/sysctl.h"
#include "steer/reply_steer.h"
#include "udp/fast/udp_fast.h"
#include "udp/udp_flow.h"
#include "udp/fast/udp_maps.h"

#define MAX_HOOKS 64

struct hook {
	int ifindex;
	uint32_t mtu;
	bool attached;
};

struct udp_fast {
	int fwd_fd, rev_fd, drain_fd, prog;
	int lo;
	bool into_lo; /* lo takes redirected datagrams: route_localnet and accept_local are on */
	/* Appended to while workers read it (udp_fast_follow): an entry is filled before nhooks counts it. */
	struct hook hooks[MAX_HOOKS];
	int nhooks;
	struct mmp_tc_id id;
	int up_ifindex[2]; /* IPv4's and IPv6's upstream interface beyond loopback, as last seen (§14) */
};

static int attach(struct hook *h, struct mmp_tc_id id, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = id.handle, .priority = id.prio,
			    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	char name[IF_NAMESIZE] = "?";
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		goto fail;
	/* REPLACE: a filter left by a killed instance is taken over, not doubled. */
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		goto fail;
	__atomic_store_n(&h->attached, true, __ATOMIC_RELEASE);
	return 0;
fail:
	if_indextoname(h->ifindex, name);
	pr_err("UDP fast path: failed to attach to %s ingress: %s", name, strerror(-err));
	return err;
}

static void detach(struct hook *h, struct mmp_tc_id id)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = h->ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = id.handle, .priority = id.prio);

	bpf_tc_detach(&hook, &opts);
	/* Ours was the last filter on it: the qdisc goes too (another tool's filters keep it). */
	mmp_clsact_remove_if_empty(h->ifindex);
}

static uint32_t if_mtu(int ifindex)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	uint32_t mtu = 1500;

	if (fd >= 0 && if_indextoname(ifindex, ifr.ifr_name) && !ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = ifr.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return mtu;
}

static bool if_up(const char *name)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool up = false;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (fd >= 0 && !ioctl(fd, SIOCGIFFLAGS, &ifr))
		up = ifr.ifr_flags & IFF_UP;
	if (fd >= 0)
		close(fd);
	return up;
}

static int add_hook(struct udp_fast *fp, int ifindex)
{
	struct hook *h;

	if (fp->nhooks == MAX_HOOKS) {
		pr_err("UDP fast path: more than %d interfaces; name the load balancers' ones with --iface", MAX_HOOKS);
		return -E2BIG;
	}
	h = &fp->hooks[fp->nhooks];
	h->ifindex = ifindex;
	h->mtu = if_mtu(ifindex);
	__atomic_store_n(&fp->nhooks, fp->nhooks + 1, __ATOMIC_RELEASE);
	return 0;
}

static const struct hook *hook_of(const struct udp_fast *fp, int ifindex)
{
	int n = __atomic_load_n(&fp->nhooks, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (fp->hooks[i].ifindex == ifindex)
			return &fp->hooks[i];
	return NULL;
}

/*
 * The interfaces of upstreams beyond loopback (docs/DESIGN.md §14), where
 * their replies arrive and their flows' datagrams leave: hooked even when
 * --iface names only the load balancers' interfaces.
 */
static int add_upstream_hooks(struct udp_fast *fp)
{
	static const int families[] = { AF_INET, AF_INET6 };
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(families) / sizeof(families[0]); i++) {
		int idx = mmp_steer_ifindex(families[i]);

		if (idx > 0 && !hook_of(fp, idx))
			err = add_hook(fp, idx);
	}
	return err;
}

/* lo first; then --iface, or every interface that is up; then the upstreams' beyond loopback. */
static int pick_interfaces(struct udp_fast *fp, const struct mmp_config *cfg)
{
	struct if_nameindex *ifs, *i;
	int err;

	fp->lo = if_nametoindex("lo");
	if (!fp->lo) {
		pr_err("UDP fast path: no loopback interface in this network namespace");
		return -ENODEV;
	}
	err = add_hook(fp, fp->lo);
	for (int n = 0; !err && n < cfg->n_ifaces; n++) {
		int idx = if_nametoindex(cfg->ifaces[n]);

		if (!idx) {
			pr_err("UDP fast path: no interface named %s (check --iface)", cfg->ifaces[n]);
			return -ENODEV;
		}
		if (idx != fp->lo && !hook_of(fp, idx))
			err = add_hook(fp, idx);
	}
	if (err || cfg->n_ifaces)
		return err ? err : add_upstream_hooks(fp);
	ifs = if_nameindex();
	for (i = ifs; i && i->if_index && !err; i++)
		if ((int)i->if_index != fp->lo && if_up(i->if_name))
			err = add_hook(fp, i->if_index);
	if_freenameindex(ifs);
	return err ? err : add_upstream_hooks(fp);
}

static bool sysctl_on(const char *path)
{
	return mmp_sysctl_read(path) > 0;
}

/*
 * A remote LB's datagram, rewritten to go from the client to 127.0.0.1, is
 * redirected into lo ingress. The route lookup there drops it as a martian
 * (loopback destination, and a source our table-123 route makes local)
 * unless lo has route_localnet and accept_local (docs/DESIGN.md §4). We do not
 * change them behind the operator's back: without them, remote LBs'
 * datagrams go through userspace and only their replies through the kernel.
 */
static bool lo_takes_redirects(void)
{
	return sysctl_on("/proc/sys/net/ipv4/conf/lo/route_localnet") &&
	       sysctl_on("/proc/sys/net/ipv4/conf/lo/accept_local");
}

int udp_fast_open(const struct mmp_config *cfg, struct udp_maps *maps, struct udp_fast **out)
{
	struct udp_fast *fp;
	int err;

	fp = calloc(1, sizeof(*fp));
	if (!fp)
		return -ENOMEM;
	fp->prog = udp_maps_prog_fd(maps);
	fp->fwd_fd = udp_maps_fwd_fd(maps);
	fp->rev_fd = udp_maps_rev_fd(maps);
	fp->drain_fd = udp_maps_drain_fd(maps);
	fp->id = mmp_instance_tc_id(IPPROTO_UDP, cfg->pin_dir);
	if (fp->prog < 0) {
		err = -EOPNOTSUPP;
		goto fail;
	}
	err = pick_interfaces(fp, cfg);
	if (err)
		goto fail;
	fp->into_lo = lo_takes_redirects();
	if (!fp->into_lo && fp->nhooks > 1)
		pr_info("UDP fast path: remote load balancers' datagrams stay in userspace (their replies do not): to move them in the kernel too, sysctl -w net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1");
	/* The LB's datagrams arrive on lo or its interface; the upstream's replies on lo or its own (§14). */
	for (int i = 0; !err && i < fp->nhooks; i++)
		err = attach(&fp->hooks[i], fp->id, fp->prog);
	if (err)
		goto fail;
	fp->up_ifindex[0] = mmp_steer_ifindex(AF_INET);
	fp->up_ifindex[1] = mmp_steer_ifindex(AF_INET6);
	*out = fp;
	return 0;
fail:
	udp_fast_close(fp);
	return err;
}

void udp_fast_close(struct udp_fast *fp)
{
	if (!fp)
		return;
	for (int i = 0; i < fp->nhooks; i++)
		if (fp->hooks[i].attached)
			detach(&fp->hooks[i], fp->id);
	free(fp);
}

static const struct hook *attached_hook(const struct udp_fast *fp, int ifindex)
{
	const struct hook *h = hook_of(fp, ifindex);

	return h && __atomic_load_n(&h->attached, __ATOMIC_ACQUIRE) ? h : NULL;
}

/* The upstream (-4 or -6) as an endpoint: 16-byte address, IPv4-mapped for IPv4. */
static void target_ep(const struct udp_flow *f, struct udp_ep *up)
{
	udp_ep_from_sa(up, (const struct sockaddr *)f->target);
}

/*
 * The kernel moves a flow only when its four addresses are of one family:
 * translating between IPv4 and IPv6 (a v2 INET client behind an IPv6 load
 * balancer...) is left to userspace.
 */
static bool one_family(const struct udp_flow *f)
{
	struct udp_ep up;

	target_ep(f, &up);
	return f->lb.family == f->client.family && f->local.family == f->client.family &&
	       up.family == f->client.family;
}

static void fwd_key(const struct udp_flow *f, struct mmp_udp_fkey *k)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->lb_addr, f->lb.addr, 16);
	k->lb_port = f->lb.port;
	memcpy(k->local_addr, f->local.addr, 16);
	k->local_port = f->local.port;
	if (f->format == MMP_UDP_FMT_SPP) {
		memcpy(k->client_addr, f->client.addr, 16);
		k->client_port = f->client.port;
	}
}

static void rev_key(const struct udp_flow *f, struct mmp_udp_rkey *k)
{
	struct udp_ep up;

	target_ep(f, &up);
	memset(k, 0, sizeof(*k));
	memcpy(k->up_addr, up.addr, 16);
	k->up_port = up.port;
	memcpy(k->client_addr, f->client.addr, 16);
	k->client_port = f->client.port;
}

/* The consumed counts the program compares with its own (see mmp_udp.h). */
int udp_fast_publish(struct udp_fast *fp, struct udp_flow *f)
{
	struct mmp_udp_drain d = { .fwd = f->drain_fwd, .rev = f->drain_rev };

	if (bpf_map_update_elem(fp->drain_fd, &f->cookie, &d, BPF_ANY))
		return -errno;
	f->drain_entry = true;
	return 0;
}

/*
 * f's mmp_udp_fwd entry, armed or stale, under the key it went in with;
 * an entry another flow has put there since is left alone.
 */
static void del_fwd(struct udp_fast *fp, struct udp_flow *f)
{
	struct mmp_udp_fval fv;

	if (!f->fwd_entry)
		return;
	if (!bpf_map_lookup_elem(fp->fwd_fd, &f->fwd_key, &fv) && fv.cookie == f->cookie)
		bpf_map_delete_elem(fp->fwd_fd, &f->fwd_key);
	f->fwd_entry = false;
	f->fast_fwd = false;
}

int udp_fast_spp_header(struct udp_fast *fp, const struct udp_flow *f)
{
	struct mmp_udp_rkey rk;
	struct mmp_udp_rval rv;

	if (!f->fast_rev)
		return 0;
	rev_key(f, &rk);
	if (bpf_map_lookup_elem(fp->rev_fd, &rk, &rv) || rv.cookie != f->cookie)
		return -ENOENT;
	if (!memcmp(rv.spp_hdr, f->spp_hdr, SPP_HEADER_LEN))
		return 0;
	memcpy(rv.spp_hdr, f->spp_hdr, SPP_HEADER_LEN);
	return bpf_map_update_elem(fp->rev_fd, &rk, &rv, BPF_EXIST) ? -errno : 0;
}

/*
 * out: the upstream's interface when it is beyond loopback (§14), where the
 * datagrams leave by bpf_redirect_neigh; NULL when it listens on lo.
 */
static int add_fwd(struct udp_fast *fp, struct udp_flow *f, bool remote, const struct hook *out, bool header_required)
{
	struct mmp_udp_fkey fk;
	struct mmp_udp_fval fv;
	struct udp_ep up;

	target_ep(f, &up);
	fwd_key(f, &fk);
	/* Our entry under another key (f->local changed since): deleted now, or nothing ever would. */
	if (f->fwd_entry && memcmp(&fk, &f->fwd_key, sizeof(fk)))
		del_fwd(fp, f);
	/* Re-arming a stale entry of ours: its counts go on. */
	if (!bpf_map_lookup_elem(fp->fwd_fd, &fk, &fv) && fv.cookie == f->cookie)
		memset(&fv, 0, offsetof(struct mmp_udp_fval, passed));
	else
		memset(&fv, 0, sizeof(fv));
	fv.cookie = f->cookie;
	memcpy(fv.client_addr, f->client.addr, 16);
	fv.client_port = f->client.port;
	memcpy(fv.up_addr, up.addr, 16);
	fv.up_port = up.port;
	/* A remote LB's datagrams continue into lo ingress, where the upstream listens. */
	fv.redirect_ifindex = out ? (uint32_t)out->ifindex : remote ? (uint32_t)fp->lo : 0;
	fv.redirect_out = out != NULL;
	fv.max_len = out ? out->mtu : 0;
	/* Where IP_PKTINFO saw them arrive: on any other interface they are not the LB's (udp.bpf.c wrong_iface). */
	fv.in_ifindex = (uint32_t)f->lb_ifindex;
	fv.format = f->format;
	fv.header_required = header_required;
	fv.mode = MMP_UDP_MODE_DRAIN;
	fv.passed = 0;
	if (f->format == MMP_UDP_FMT_SPP)
		memcpy(fv.spp_tail, f->spp_hdr + MMP_UDP_SPP_TAIL_OFF, MMP_UDP_SPP_TAIL_LEN);
	if (bpf_map_update_elem(fp->fwd_fd, &fk, &fv, BPF_ANY))
		return -errno;
	f->fwd_key = fk;
	f->fwd_entry = true;
	f->fast_fwd = true;
	return 0;
}

static void add_rev(struct udp_fast *fp, struct udp_flow *f, const struct hook *h, bool remote, const struct hook *out)
{
	struct mmp_udp_rkey rk;
	struct mmp_udp_rval rv = { 0 };

	rev_key(f, &rk);
	rv.cookie = f->cookie;
	memcpy(rv.lb_addr, f->lb.addr, 16);
	rv.lb_port = f->lb.port;
	memcpy(rv.local_addr, f->local.addr, 16);
	rv.local_port = f->local.port;
	rv.redirect_ifindex = remote ? (uint32_t)h->ifindex : 0;
	rv.max_len = h->mtu;
	/* Its replies arrive on lo (docs/DESIGN.md §4), or beyond loopback on its interface only (§14). */
	rv.in_ifindex = out ? (uint32_t)out->ifindex : (uint32_t)fp->lo;
	rv.mode = MMP_UDP_MODE_DRAIN;
	rv.format = f->format;
	if (f->format == MMP_UDP_FMT_SPP)
		memcpy(rv.spp_hdr, f->spp_hdr, SPP_HEADER_LEN);
	if (!bpf_map_update_elem(fp->rev_fd, &rk, &rv, BPF_ANY))
		f->fast_rev = true;
}

/*
 * The interface the LB's datagrams really come in on. IP_PKTINFO names the
 * interface of the address they were sent to, but a load balancer on this
 * host sends through lo whichever of our addresses it picks (the tc engine
 * decides alike, tc_handoff.c): its flow is a local one, on lo both ways.
 * Taken as remote, the entries would name an interface its datagrams never
 * use, and its replies would be redirected out of it and lost.
 */
static int arrival_ifindex(const struct udp_fast *fp, const struct udp_flow *f, int lb_ifindex)
{
	struct sockaddr_storage lb;

	if (lb_ifindex == fp->lo)
		return lb_ifindex;
	udp_ep_to_sa(&f->lb, &lb);
	return mmp_is_local_addr(&lb) ? fp->lo : lb_ifindex;
}

/*
 * *out: the hook of the upstream's interface for a flow whose upstream is
 * beyond loopback (its replies steered, §14); NULL for an upstream on lo.
 * False when that interface has no hook: the flow stays in userspace.
 */
static bool upstream_hook(const struct udp_fast *fp, const struct udp_flow *f, const struct hook **out)
{
	int idx;

	*out = NULL;
	if (!f->steer_owner)
		return true;
	idx = mmp_steer_ifindex(((const struct sockaddr *)f->target)->sa_family);
	*out = idx > 0 ? attached_hook(fp, idx) : NULL;
	return *out != NULL;
}

int udp_fast_add(struct udp_fast *fp, struct udp_flow *f, int lb_ifindex, bool header_required)
{
	const struct hook *h, *out;
	bool remote, fwd, rev;
	int err;

	if ((f->format != MMP_UDP_FMT_V2 && f->format != MMP_UDP_FMT_SPP) || !f->client.family || !one_family(f))
		return 1;
	lb_ifindex = arrival_ifindex(fp, f, lb_ifindex);
	h = attached_hook(fp, lb_ifindex);
	if (!h)
		return 1;
	remote = lb_ifindex != fp->lo;
	/*
	 * Beyond loopback, a local LB's flows stay here: the replies would
	 * have to enter lo from the upstream's interface, a source this host
	 * owns arriving on a wire (a martian without accept_local there).
	 */
	if (!upstream_hook(fp, f, &out) || (out && !remote))
		return 1;
	f->lb_ifindex = lb_ifindex;
	fwd = !f->fast_fwd && (!remote || out || fp->into_lo);
	/* A remote LB's SPP replies would leave with a wrong checksum offset (reply() in udp.bpf.c). */
	rev = !f->fast_rev && (f->format == MMP_UDP_FMT_V2 || !remote);
	if (!fwd && !rev)
		return f->fast ? 0 : 1;
	/* Each entry starts draining from zero: the counts first, then the entry. */
	if (fwd)
		f->drain_fwd = 0;
	if (rev)
		f->drain_rev = 0;
	err = udp_fast_publish(fp, f);
	if (err)
		return err;
	if (fwd) {
		err = add_fwd(fp, f, remote, out, header_required);
		if (err)
			return err;
	}
	if (rev)
		add_rev(fp, f, h, remote, out);
	f->fast = f->fast_fwd || f->fast_rev;
	return 0;
}

void udp_fast_del(struct udp_fast *fp, struct udp_flow *f)
{
	struct mmp_udp_rkey rk;
	struct mmp_udp_rval rv;

	/*
	 * By what was inserted, not by f->fast: a forward entry that went stale
	 * and is no longer re-armed (udp_fast_fwd_missed) is still ours, and
	 * so is the drain entry of a flow whose replies never were in the kernel.
	 * Only our own entries: while another thread takes the client over, its
	 * new flow's reply entry has the same key. (The reply key never changes:
	 * the upstream and the client are fixed for a flow's life.)
	 */
	del_fwd(fp, f);
	if (f->fast_rev) {
		rev_key(f, &rk);
		if (!bpf_map_lookup_elem(fp->rev_fd, &rk, &rv) && rv.cookie == f->cookie)
			bpf_map_delete_elem(fp->rev_fd, &rk);
	}
	if (f->drain_entry)
		bpf_map_delete_elem(fp->drain_fd, &f->cookie);
	f->fast = f->fast_fwd = f->fast_rev = f->drain_entry = false;
}

void udp_fast_fwd_missed(struct udp_flow *f)
{
	if (!f->fast_fwd)
		return;
	f->fast_fwd = false;
	f->fast = f->fast_rev;
}

void udp_fast_forget_client(struct udp_fast *fp, const struct udp_flow *f)
{
	struct mmp_udp_rkey rk;

	if (!f->client.family || !one_family(f))
		return;
	rev_key(f, &rk);
	bpf_map_delete_elem(fp->rev_fd, &rk);
}

/*
 * The kernel stamps datagrams with the coarse clock, which runs up to a tick
 * behind: a datagram stamped T arrived before T + tick. Idle timeouts count
 * from there, so a flow is never closed before -c after its last datagram.
 */
static uint64_t coarse_tick_ns(void)
{
	static uint64_t tick;
	struct timespec res;

	if (!tick)
		tick = clock_getres(CLOCK_MONOTONIC_COARSE, &res) ? 10000000ULL
								   : (uint64_t)res.tv_sec * 1000000000ULL + res.tv_nsec;
	return tick;
}

int udp_fast_stats(struct udp_fast *fp, const struct udp_flow *f, struct udp_fast_stats *st)
{
	struct mmp_udp_rkey rk;
	struct mmp_udp_fval fv;
	struct mmp_udp_rval rv;

	memset(st, 0, sizeof(*st));
	if (!f->fast)
		return -ENOENT;
	if (f->fast_fwd && !bpf_map_lookup_elem(fp->fwd_fd, &f->fwd_key, &fv) && fv.cookie == f->cookie) {
		st->pkts_up = fv.pkts;
		st->bytes_up = fv.bytes;
		st->last_ns = fv.last_ns;
	}
	if (f->fast_rev) {
		rev_key(f, &rk);
		if (!bpf_map_lookup_elem(fp->rev_fd, &rk, &rv) && rv.cookie == f->cookie) {
			st->pkts_down = rv.pkts;
			st->bytes_down = rv.bytes;
			if (rv.last_ns > st->last_ns)
				st->last_ns = rv.last_ns;
		}
	}
	if (st->last_ns) {
		uint64_t now_ns = mmp_now_ns();

		st->last_ns += coarse_tick_ns();
		if (st->last_ns > now_ns)
			st->last_ns = now_ns; /* never in the future: idle time is now - last */
	}
	return 0;
}

/*
 * The entries of flows whose upstream's route moved from interface old to
 * h's: the forward ones leave by h now (within its MTU), the reply ones are
 * read there. Rewritten in place, so those flows stay in the kernel and keep
 * their counts. Written during the walk: an update keeps the key, and a
 * hash bucket walked again after one only meets entries already moved.
 */
static void move_entries(struct udp_fast *fp, int old, const struct hook *h)
{
	struct mmp_udp_fkey fk, *fprev = NULL;
	struct mmp_udp_rkey rk, *rprev = NULL;
	struct mmp_udp_fval fv;
	struct mmp_udp_rval rv;

	while (!bpf_map_get_next_key(fp->fwd_fd, fprev, &fk)) {
		fprev = &fk;
		if (bpf_map_lookup_elem(fp->fwd_fd, &fk, &fv) || !fv.redirect_out || (int)fv.redirect_ifindex != old)
			continue;
		fv.redirect_ifindex = (uint32_t)h->ifindex;
		fv.max_len = h->mtu;
		bpf_map_update_elem(fp->fwd_fd, &fk, &fv, BPF_EXIST);
	}
	while (!bpf_map_get_next_key(fp->rev_fd, rprev, &rk)) {
		rprev = &rk;
		if (bpf_map_lookup_elem(fp->rev_fd, &rk, &rv) || (int)rv.in_ifindex != old)
			continue;
		rv.in_ifindex = (uint32_t)h->ifindex;
		bpf_map_update_elem(fp->rev_fd, &rk, &rv, BPF_EXIST);
	}
}

void udp_fast_follow(struct udp_fast *fp)
{
	static const int families[2] = { AF_INET, AF_INET6 };

	for (int i = 0; fp && i < 2; i++) {
		int idx = mmp_steer_ifindex(families[i]), old = fp->up_ifindex[i];
		const struct hook *h;

		if (idx <= 0 || idx == old)
			continue;
		fp->up_ifindex[i] = idx;
		if (!hook_of(fp, idx) && fp->nhooks < MAX_HOOKS && !add_hook(fp, idx))
			attach(&fp->hooks[fp->nhooks - 1], fp->id, fp->prog);
		/* Without a hook there (more than MAX_HOOKS moves), new flows stay on the relay; old ones too. */
		h = attached_hook(fp, idx);
		if (old > 0 && h)
			move_entries(fp, old, h);
	}
}
