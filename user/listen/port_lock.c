// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include "lib/log.h"
#include "lib/netns_lock.h"
#include "lib/sockaddr.h"
#include "listen/port_lock.h"
#include "listen/port_range.h"

#define LOCK_PREFIX "ports:"

struct ports {
	int protocol;
	struct sockaddr_storage addr; /* its port: the first */
	uint16_t hi;
};

/* "ports:tcp:127.0.0.1:7000-7999" ("…:7000" for one port). */
static void lock_name(const struct ports *p, char *buf, size_t len)
{
	char a[MMP_ADDRSTRLEN + 8];

	snprintf(buf, len, LOCK_PREFIX "%s:%s", p->protocol == IPPROTO_UDP ? "udp" : "tcp",
		 mmp_fmt_port_range(&p->addr, p->hi, a));
}

static int parse_name(const char *name, struct ports *p)
{
	const char *reason;

	if (!strncmp(name, "tcp:", 4))
		p->protocol = IPPROTO_TCP;
	else if (!strncmp(name, "udp:", 4))
		p->protocol = IPPROTO_UDP;
	else
		return -EINVAL;
	return mmp_parse_hostport_range(name + 4, &p->addr, &p->hi, &reason);
}

static bool is_any(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* The same address, or a wildcard of either that covers the other's ([::] is dual-stack). */
static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if ((is_any(a) && (a->ss_family == AF_INET6 || b->ss_family == AF_INET)) ||
	    (is_any(b) && (b->ss_family == AF_INET6 || a->ss_family == AF_INET)))
		return true;
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

static bool conflicts(const struct ports *a, const struct ports *b)
{
	bool range = a->hi != mmp_sa_port(&a->addr) || b->hi != mmp_sa_port(&b->addr);

	return range && a->protocol == b->protocol && same_addr(&a->addr, &b->addr) &&
	       mmp_port_ranges_overlap(mmp_sa_port(&a->addr), a->hi, mmp_sa_port(&b->addr), b->hi);
}

struct overlap_search {
	const struct ports *ours;
	const char *our_name;
	char *other;
	size_t len;
};

/* mmp_netns_locks_find's callback: whether the held lock name overlaps ours (then its name in other). */
static bool overlaps(const char *name, void *arg)
{
	struct overlap_search *s = arg;
	struct ports theirs;

	if (!strcmp(name, s->our_name) || parse_name(name + strlen(LOCK_PREFIX), &theirs) ||
	    !conflicts(s->ours, &theirs))
		return false;
	snprintf(s->other, s->len, "%s", name);
	return true;
}

/* Another instance's held lock in this namespace that overlaps ours: its name in other. */
static bool find_overlap(const struct ports *ours, const char *our_name, char *other, size_t len)
{
	struct overlap_search s = { .ours = ours, .our_name = our_name, .other = other, .len = len };

	return mmp_netns_locks_find(LOCK_PREFIX, overlaps, &s);
}

int mmp_port_lock(const struct mmp_config *cfg, int *lock_fd)
{
	struct ports ours = { .protocol = cfg->protocol, .addr = cfg->listen, .hi = cfg->listen_port_hi };
	char name[160], other[256], holder[320];
	int fd;

	*lock_fd = -1;
	lock_name(&ours, name, sizeof(name));
	fd = mmp_netns_lock(name, holder, sizeof(holder));
	/*
	 * A single port as another's: the pin directory's lock judges, as before
	 * ranges. Not for -p tcp,udp, whose directory ("tcpudp-") differs from
	 * a -p tcp or -p udp instance's on the same -l: refused here instead.
	 */
	if (fd == -EADDRINUSE && ours.hi == mmp_sa_port(&ours.addr) && !cfg->tcp_and_udp)
		return 0;
	if (fd == -EADDRINUSE) {
		pr_err("another mmproxy-bpf instance serves the same ports (%s): stop it, or give this one another -l range",
		       holder);
		return fd;
	}
	if (fd < 0)
		return fd; /* logged by mmp_netns_lock */
	/* Taken first, then looked for others: of two that start at once, at least one sees the other. */
	if (find_overlap(&ours, name, other, sizeof(other))) {
		mmp_netns_locked(other, holder, sizeof(holder));
		pr_err("another mmproxy-bpf instance serves %s, which overlaps -l %s (%s): port ranges on one address must not overlap: stop it, or give this one a disjoint -l range",
		       other + strlen(LOCK_PREFIX), name + strlen(LOCK_PREFIX) + 4, holder);
		close(fd);
		return -EADDRINUSE;
	}
	*lock_fd = fd;
	return 0;
}
