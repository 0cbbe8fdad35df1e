// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "policy/local_addrs.h"

#define SNAPSHOT_MAX_AGE_NS 1000000000ULL

static int cmp_in6(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct in6_addr));
}

bool mmp_local_addrs_has(const struct mmp_local_addrs *s, const struct in6_addr *a)
{
	return s->n && bsearch(a, s->addrs, s->n, sizeof(*s->addrs), cmp_in6);
}

int mmp_local_addrs_set(struct mmp_local_addrs *s, const struct in6_addr *v, size_t n)
{
	struct in6_addr *copy = NULL;

	if (n) {
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, v, n * sizeof(*copy));
		qsort(copy, n, sizeof(*copy), cmp_in6);
	}
	free(s->addrs);
	s->addrs = copy;
	s->n = n;
	return 0;
}

void mmp_local_addrs_free(struct mmp_local_addrs *s)
{
	free(s->addrs);
	s->addrs = NULL;
	s->n = 0;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Every IPv4 and IPv6 address of every interface, into s. Returns 0 or -errno. */
static int take_snapshot(struct mmp_local_addrs *s)
{
	struct ifaddrs *ifa, *i;
	struct in6_addr *v = NULL;
	size_t n = 0, cap = 0;
	int err;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		struct in6_addr a = { 0 };

		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a.s6_addr[10] = a.s6_addr[11] = 0xff;
			memcpy(&a.s6_addr[12], &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a = ((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		} else {
			continue;
		}
		if (n == cap) {
			struct in6_addr *grown = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!grown) {
				err = -ENOMEM;
				goto out;
			}
			v = grown;
		}
		v[n++] = a;
	}
	err = mmp_local_addrs_set(s, v, n);
out:
	free(v);
	freeifaddrs(ifa);
	return err;
}

const struct mmp_local_addrs *mmp_local_addrs_current(void)
{
	static __thread struct mmp_local_addrs snap;
	uint64_t now = monotonic_ns();

	if (!snap.taken_ns || now - snap.taken_ns >= SNAPSHOT_MAX_AGE_NS) {
		/* On failure the previous snapshot stays; the next try is a second away. */
		take_snapshot(&snap);
		snap.taken_ns = now;
	}
	return &snap;
}
