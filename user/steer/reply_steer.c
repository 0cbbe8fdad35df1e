// SPDX-License-Identifier: GPL-2.0
/* Reply steering's control plane: see steer/reply_steer.h and docs/DESIGN.md §14. */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/config.h"
#include "lib/handover.h"
#include "lib/instance.h"
#include "lib/log.h"
#include "lib/netlink.h"
#include "lib/pins.h"
#include "lib/sockaddr.h"
#include "mmp_steer.h"
#include "steer/marked_route.h"
#include "steer/reply_steer.h"
#include "steer/steer_attach.h"
#include "steer.skel.h"

/* A closed tuple waiting for its linger to end. Linger is constant, so the queue is in deadline order. */
struct lingering {
	struct mmp_steer_key key;
	uint64_t owner;
	uint64_t closed_ns;
};

static struct {
	struct steer_bpf *skel;
	char pin_dir[256];
	struct mmp_tc_id id;
	/*
	 * [0] IPv4's upstream interface, [1] IPv6's; 0: that family is not
	 * steered. Written by the tick (follow_routes), read by every worker.
	 */
	int ifindex[2];
	struct sockaddr_storage target[2]; /* the upstream whose route ifindex follows */
	uint32_t mark; /* -m: the upstream sockets' SO_MARK, which fwmark rules may route by */
	int hooked[2]; /* the interfaces our filter is on (one serves both families on one interface) */
	int map_fd;
	__u32 prog_id;
	pthread_mutex_t lock; /* the map's writes and the queue */
	uint64_t next_owner;
	struct lingering *q;
	size_t q_head, q_len, q_cap; /* a ring */
} st = { .lock = PTHREAD_MUTEX_INITIALIZER, .map_fd = -1 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the BPF side's clock too */
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int fam_idx(int family)
{
	return family == AF_INET6 ? 1 : 0;
}

bool mmp_steer_family(int family)
{
	return st.skel && __atomic_load_n(&st.ifindex[fam_idx(family)], __ATOMIC_RELAXED) > 0;
}

int mmp_steer_ifindex(int family)
{
	return st.skel ? __atomic_load_n(&st.ifindex[fam_idx(family)], __ATOMIC_RELAXED) : 0;
}

int mmp_steer_path_mss(int family)
{
	struct ifreq ifr = { 0 };
	int ifindex = mmp_steer_ifindex(family), fd, mss = 0;

	if (ifindex <= 0 || !if_indextoname(ifindex, ifr.ifr_name))
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && !ioctl(fd, SIOCGIFMTU, &ifr))
		mss = ifr.ifr_mtu - (family == AF_INET6 ? 60 : 40); /* IP and TCP headers without options */
	if (fd >= 0)
		close(fd);
	return mss > 0 ? mss : 0;
}

/* Mark lo..hi (host order) in the program's port filter. */
static void mark_ports(uint16_t lo, uint16_t hi)
{
	for (uint32_t p = lo; p <= (hi ? hi : lo); p++)
		st.skel->bss->mmp_steer_ports[p >> 5] |= 1U << (p & 31);
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					       : ((const struct sockaddr_in *)ss)->sin_port);
}

/* The interface replies from target arrive on, or 0 when target needs no steering; -errno when unroutable. */
static int upstream_ifindex(const struct sockaddr_storage *target, uint32_t mark)
{
	char a[MMP_ADDRSTRLEN], name[IF_NAMESIZE] = "?";
	struct mmp_rp_explain why;
	int oif, rp;

	if (!target->ss_family || mmp_is_loopback_addr(target) || mmp_is_local_addr(target))
		return 0; /* on this host: replies come back through lo, the `from 127.0.0.1/8 iif lo` rule */
	oif = mmp_route_oif(target, mark);
	if (oif <= 0) {
		pr_err("no route to the upstream %s (%s): add a route to it, or fix %s",
		       mmp_fmt_addr((const void *)target, a), strerror(oif ? -oif : ENOENT),
		       target->ss_family == AF_INET6 ? "-6" : "-4");
		return oif ? oif : -ENOENT;
	}
	rp = mmp_marked_route_rp_filter(target, mark, oif);
	if (rp) {
		if_indextoname((unsigned int)oif, name);
		mmp_marked_route_rp_explain(&why, rp, name);
		pr_warn("warning: connections to the upstream %s via %s will time out: %s (fix: %s)",
			mmp_fmt_addr((const void *)target, a), name, why.cause, why.fix);
	}
	return oif;
}

/*
 * A successor (--takeover, docs/DESIGN.md §15) shares its predecessor's
 * pinned maps: the predecessor's draining flows keep their tuples, and its
 * replies stay steered by our program. Any other start makes new maps, so
 * a killed instance's tuples never outlive it.
 */
static int open_and_load(const struct mmp_config *cfg)
{
	struct bpf_map *maps[2];
	int err;

	st.skel = steer_bpf__open();
	if (!st.skel)
		return -errno;
	maps[0] = st.skel->maps.mmp_reply_steer;
	maps[1] = st.skel->maps.mmp_steer_cnt;
	for (int i = 0; cfg->takeover && i < 2; i++) {
		int fd = mmp_open_pin(cfg->pin_dir, bpf_map__name(maps[i]));

		if (fd < 0)
			continue; /* the predecessor steers nothing: ours are new */
		err = bpf_map__reuse_fd(maps[i], fd);
		close(fd);
		if (err)
			goto fail;
	}
	err = steer_bpf__load(st.skel);
	if (!err)
		return 0;
fail:
	steer_bpf__destroy(st.skel);
	st.skel = NULL;
	return err;
}

int mmp_steer_open(const struct mmp_config *cfg)
{
	return mmp_steer_open_as(cfg, cfg->pin_dir, true);
}

int mmp_steer_open_as(const struct mmp_config *cfg, const char *id_dir, bool pin)
{
	const struct sockaddr_storage *targets[2] = { &cfg->target4, &cfg->target6 };
	const uint16_t his[2] = { cfg->target4_port_hi, cfg->target6_port_hi };
	int err, prog_fd;

	for (int i = 0; i < 2; i++) {
		st.ifindex[i] = upstream_ifindex(targets[i], cfg->mark);
		if (st.ifindex[i] < 0)
			return st.ifindex[i];
	}
	if (!st.ifindex[0] && !st.ifindex[1])
		return 0; /* every upstream on this host: nothing to steer */
	err = open_and_load(cfg);
	if (err) {
		pr_err("reply steering: failed to load bpf/steer.bpf.c: %s (a kernel with BPF and tc clsact is needed for an upstream beyond loopback)",
		       strerror(-err));
		return err;
	}
	snprintf(st.pin_dir, sizeof(st.pin_dir), "%s", pin ? cfg->pin_dir : "");
	st.map_fd = bpf_map__fd(st.skel->maps.mmp_reply_steer);
	st.id = mmp_instance_steer_id(id_dir);
	/* Owners are unique across a takeover's two processes, which share the map (open_and_load). */
	st.next_owner = ((uint64_t)getpid() << 32) | 1;
	st.mark = cfg->mark;
	for (int i = 0; i < 2; i++) {
		if (!st.ifindex[i])
			continue;
		mark_ports(port_of(targets[i]), his[i]);
		st.target[i] = *targets[i];
	}
	err = pin ? mmp_pin_map(cfg->pin_dir, st.skel->maps.mmp_reply_steer) : 0;
	if (!err && pin)
		err = mmp_pin_map(cfg->pin_dir, st.skel->maps.mmp_steer_cnt);
	prog_fd = bpf_program__fd(st.skel->progs.mmp_steer_in);
	{
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (!err && bpf_obj_get_info_by_fd(prog_fd, &info, &len))
			err = -errno;
		st.prog_id = info.id; /* what detach looks for at exit */
	}
	for (int i = 0; !err && i < 2; i++) {
		char name[IF_NAMESIZE] = "?";

		if (!st.ifindex[i] || (i == 1 && st.ifindex[1] == st.ifindex[0]))
			continue; /* one filter serves both families on one interface */
		err = mmp_steer_attach(st.ifindex[i], st.id, prog_fd);
		st.hooked[i] = err ? 0 : st.ifindex[i];
		if (!err && pin)
			pr_info("reply steering: %s upstream replies are steered at %s ingress (tc pref %u handle 0x%x, fwmark 0x%x; docs/DESIGN.md §14)",
				i ? "IPv6" : st.ifindex[1] == st.ifindex[0] ? "IPv4 and IPv6" : "IPv4", if_indextoname(st.ifindex[i], name) ? name : "?", st.id.prio,
				st.id.handle, MMP_STEER_MARK);
	}
	if (err)
		mmp_steer_close();
	return err;
}

static void expire(uint64_t now, bool all);

void mmp_steer_close(void)
{
	if (!st.skel)
		return;
	for (int i = 0; i < 2; i++)
		if (st.hooked[i])
			mmp_steer_detach(st.hooked[i], st.id, st.prog_id);
	if (mmp_handing_over()) { /* the map and its pins are the successor's now: leave it none of our tuples */
		expire(0, true);
	} else if (st.pin_dir[0]) {
		mmp_unpin(st.pin_dir, MMP_STEER_MAP);
		mmp_unpin(st.pin_dir, MMP_STEER_COUNTERS_MAP);
	}
	steer_bpf__destroy(st.skel);
	free(st.q);
	memset(st.hooked, 0, sizeof(st.hooked));
	memset(st.ifindex, 0, sizeof(st.ifindex));
	memset(st.target, 0, sizeof(st.target));
	st.skel = NULL;
	st.q = NULL;
	st.q_head = st.q_len = st.q_cap = 0;
	st.map_fd = -1;
}

/* The reply's tuple: from the upstream to the client. */
static void make_key(struct mmp_steer_key *k, int proto, const struct sockaddr *client, const struct sockaddr *up)
{
	memset(k, 0, sizeof(*k));
	k->family = (__u8)up->sa_family;
	k->proto = (__u8)proto;
	if (up->sa_family == AF_INET) {
		const struct sockaddr_in *c = (const void *)client, *u = (const void *)up;

		k->up_port = u->sin_port;
		k->client_port = c->sin_port;
		k->up_addr[0] = u->sin_addr.s_addr;
		k->client_addr[0] = c->sin_addr.s_addr;
	} else {
		const struct sockaddr_in6 *c = (const void *)client, *u = (const void *)up;

		k->up_port = u->sin6_port;
		k->client_port = c->sin6_port;
		memcpy(k->up_addr, &u->sin6_addr, 16);
		memcpy(k->client_addr, &c->sin6_addr, 16);
	}
}

int mmp_steer_add(int proto, const struct sockaddr *client, const struct sockaddr *upstream, uint64_t *owner)
{
	struct mmp_steer_val v = { 0 }, old;
	struct mmp_steer_key k;
	int err = 0;

	*owner = 0;
	if (!client || client->sa_family != upstream->sa_family || !mmp_steer_family(upstream->sa_family))
		return 0;
	make_key(&k, proto, client, upstream);
	pthread_mutex_lock(&st.lock);
	v.owner = st.next_owner++;
	if (bpf_map_update_elem(st.map_fd, &k, &v, BPF_NOEXIST)) {
		err = -errno;
		/* A closed connection's lingering tuple is taken over: its queue entry no longer matches it. */
		if (err == -EEXIST && !bpf_map_lookup_elem(st.map_fd, &k, &old))
			err = old.closed_ns ? (bpf_map_update_elem(st.map_fd, &k, &v, BPF_EXIST) ? -errno : 0)
					    : -EADDRINUSE;
		if (err == -E2BIG || err == -ENOMEM)
			err = -ENOSPC;
	}
	pthread_mutex_unlock(&st.lock);
	if (!err)
		*owner = v.owner;
	return err;
}

static void queue_push(const struct lingering *l)
{
	if (st.q_len == st.q_cap) {
		size_t cap = st.q_cap ? st.q_cap * 2 : 256;
		struct lingering *q = malloc(cap * sizeof(*q));

		if (!q)
			return; /* left in the map: deleted at exit, or taken over by the tuple's next connection */
		for (size_t i = 0; i < st.q_len; i++)
			q[i] = st.q[(st.q_head + i) % st.q_cap];
		free(st.q);
		st.q = q;
		st.q_cap = cap;
		st.q_head = 0;
	}
	st.q[(st.q_head + st.q_len) % st.q_cap] = *l;
	st.q_len++;
}

void mmp_steer_release(int proto, const struct sockaddr *client, const struct sockaddr *upstream, uint64_t owner)
{
	struct lingering l = { .owner = owner };
	struct mmp_steer_val v;

	if (!owner || !st.skel)
		return;
	make_key(&l.key, proto, client, upstream);
	pthread_mutex_lock(&st.lock);
	if (!bpf_map_lookup_elem(st.map_fd, &l.key, &v) && v.owner == owner && !v.closed_ns) {
		v.closed_ns = l.closed_ns = now_ns();
		if (!bpf_map_update_elem(st.map_fd, &l.key, &v, BPF_EXIST))
			queue_push(&l);
	}
	pthread_mutex_unlock(&st.lock);
}

/* Delete the tuples whose linger ended (all of them: at a hand-over, whose map outlives us). */
static void expire(uint64_t now, bool all)
{
	pthread_mutex_lock(&st.lock);
	while (st.q_len) {
		struct lingering *l = &st.q[st.q_head];
		struct mmp_steer_val v;

		if (!all && l->closed_ns + MMP_STEER_LINGER_MS * 1000000ULL > now)
			break;
		/* Only if no newer connection took the tuple over meanwhile. */
		if (!bpf_map_lookup_elem(st.map_fd, &l->key, &v) && v.owner == l->owner && v.closed_ns == l->closed_ns)
			bpf_map_delete_elem(st.map_fd, &l->key);
		st.q_head = (st.q_head + 1) % st.q_cap;
		st.q_len--;
	}
	pthread_mutex_unlock(&st.lock);
}

static bool in_pair(const int pair[2], int ifindex)
{
	return ifindex && (pair[0] == ifindex || pair[1] == ifindex);
}

static const char *if_name(int ifindex, char name[IF_NAMESIZE])
{
	return if_indextoname((unsigned int)ifindex, name) ? name : "a removed interface";
}

/*
 * The route to an upstream moved to another interface: a pod recreated
 * behind a new veth (Calico gives it a new one, same address), a tunnel
 * brought up again. Steering follows it: the filter goes on the new
 * interface first, then leaves the old one (gone already, most often).
 * An upstream with no route at all keeps what it had until one comes back.
 */
static void follow_routes(void)
{
	int want[2], hooked[2] = { 0 }, prog_fd = bpf_program__fd(st.skel->progs.mmp_steer_in);
	char a[MMP_ADDRSTRLEN], n1[IF_NAMESIZE], n2[IF_NAMESIZE];

	for (int i = 0; i < 2; i++) {
		int oif = st.target[i].ss_family ? mmp_route_oif(&st.target[i], st.mark) : 0;

		want[i] = oif > 0 ? oif : st.ifindex[i];
	}
	if (want[0] == st.ifindex[0] && want[1] == st.ifindex[1])
		return;
	for (int i = 0; i < 2; i++) {
		if (!want[i] || in_pair(hooked, want[i]))
			continue;
		/* A failed attach is logged; that family stays where it was. */
		if (!in_pair(st.hooked, want[i]) && mmp_steer_attach(want[i], st.id, prog_fd))
			want[i] = st.ifindex[i];
		if (!in_pair(hooked, want[i]))
			hooked[i] = want[i];
	}
	for (int i = 0; i < 2; i++)
		if (st.hooked[i] && !in_pair(hooked, st.hooked[i]))
			mmp_steer_detach(st.hooked[i], st.id, st.prog_id);
	for (int i = 0; i < 2; i++) {
		if (want[i] == st.ifindex[i])
			continue;
		pr_info("reply steering: the route to the %s upstream %s moved from %s to %s: its replies are steered there now (docs/DESIGN.md §14)",
			i ? "IPv6" : "IPv4", mmp_fmt_addr((const struct sockaddr *)&st.target[i], a), if_name(st.ifindex[i], n1),
			if_name(want[i], n2));
		__atomic_store_n(&st.ifindex[i], want[i], __ATOMIC_RELAXED);
	}
	memcpy(st.hooked, hooked, sizeof(hooked));
}

void mmp_steer_tick(void)
{
	if (!st.skel)
		return;
	expire(now_ns(), false);
	/*
	 * A predecessor draining for a successor (§15) leaves the filter to
	 * it: attached on a new interface, ours would replace the successor's
	 * there, and be detached with us at exit.
	 */
	if (!mmp_handing_over())
		follow_routes();
}
