// SPDX-License-Identifier: GPL-2.0
/* Per-address quotas: an open-addressing table of counts, linear probing, backward-shift deletion. */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lib/quota.h"

#define MIN_SLOTS 64 /* a power of two */

struct slot {
	uint8_t addr[16]; /* IPv4 in the first 4 bytes, the rest 0 */
	uint8_t family; /* 0: empty, 4 or 6 */
	uint32_t count;
};

struct mmp_quota {
	pthread_mutex_t lock;
	struct slot *slots;
	uint32_t mask; /* slots - 1 */
	uint32_t used;
	uint32_t limit;
	uint64_t seed;
};

/* The address as a key: IPv4 and IPv4-mapped IPv6 alike. Returns false for other families. */
static bool key_of(const struct sockaddr *sa, struct slot *k)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET) {
		memcpy(k->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		k->family = 4;
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(k->addr, &a->s6_addr[12], 4);
			k->family = 4;
		} else {
			memcpy(k->addr, a, 16);
			k->family = 6;
		}
		return true;
	}
	return false;
}

/* A seeded mix of the address: sources choose their addresses, so chains must not be predictable. */
static uint32_t hash_of(const struct mmp_quota *q, const struct slot *k)
{
	uint64_t h = q->seed ^ k->family, w;

	for (int i = 0; i < 16; i += 8) {
		memcpy(&w, k->addr + i, 8);
		h ^= w;
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	h *= 0xbf58476d1ce4e5b9ULL;
	return (uint32_t)(h ^ (h >> 32));
}

static bool same(const struct slot *a, const struct slot *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, 16);
}

/* The slot holding k, or the empty slot where it would go. */
static struct slot *find(struct mmp_quota *q, const struct slot *k)
{
	for (uint32_t i = hash_of(q, k) & q->mask;; i = (i + 1) & q->mask) {
		struct slot *s = &q->slots[i];

		if (!s->family || same(s, k))
			return s;
	}
}

/* Double the table (rehashing every entry) once it is half full. Returns 0 or -ENOMEM. */
static int grow(struct mmp_quota *q)
{
	struct slot *old = q->slots;
	uint32_t n = q->mask + 1;

	q->slots = calloc((size_t)n * 2, sizeof(*q->slots));
	if (!q->slots) {
		q->slots = old;
		return -ENOMEM;
	}
	q->mask = n * 2 - 1;
	for (uint32_t i = 0; i < n; i++)
		if (old[i].family)
			*find(q, &old[i]) = old[i];
	free(old);
	return 0;
}

/* Empty slot i and move later entries of its probe run back, so that no lookup stops early. */
static void remove_at(struct mmp_quota *q, uint32_t i)
{
	uint32_t j = i;

	for (;;) {
		struct slot *s;
		uint32_t home;

		q->slots[i].family = 0;
		for (;;) {
			j = (j + 1) & q->mask;
			s = &q->slots[j];
			if (!s->family)
				return;
			home = hash_of(q, s) & q->mask;
			/* s may move to i only if i lies on its probe path: between home and j, cyclically. */
			if (((j - home) & q->mask) >= ((j - i) & q->mask))
				break;
		}
		q->slots[i] = *s;
		i = j;
	}
}

int mmp_quota_open(uint32_t limit, uint64_t seed, struct mmp_quota **out)
{
	struct mmp_quota *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->slots = calloc(MIN_SLOTS, sizeof(*q->slots));
	if (!q->slots) {
		free(q);
		return -ENOMEM;
	}
	pthread_mutex_init(&q->lock, NULL);
	q->mask = MIN_SLOTS - 1;
	q->limit = limit ? limit : 1;
	q->seed = seed;
	*out = q;
	return 0;
}

void mmp_quota_close(struct mmp_quota *q)
{
	if (!q)
		return;
	pthread_mutex_destroy(&q->lock);
	free(q->slots);
	free(q);
}

int mmp_quota_take(struct mmp_quota *q, const struct sockaddr *sa)
{
	struct slot k, *s;
	int err = 0;

	if (!q)
		return -ENOENT;
	if (!key_of(sa, &k))
		return -EAFNOSUPPORT;
	pthread_mutex_lock(&q->lock);
	s = find(q, &k);
	if (s->family) {
		if (s->count >= q->limit)
			err = -EDQUOT;
		else
			s->count++;
		goto out;
	}
	if ((q->used + 1) * 2 > q->mask + 1) {
		err = grow(q);
		if (err)
			goto out;
		s = find(q, &k);
	}
	*s = k;
	s->count = 1;
	q->used++;
out:
	pthread_mutex_unlock(&q->lock);
	return err;
}

void mmp_quota_give(struct mmp_quota *q, const struct sockaddr *sa)
{
	struct slot k, *s;

	if (!q || !key_of(sa, &k))
		return;
	pthread_mutex_lock(&q->lock);
	s = find(q, &k);
	if (s->family && --s->count == 0) {
		remove_at(q, (uint32_t)(s - q->slots));
		q->used--;
	}
	pthread_mutex_unlock(&q->lock);
}

uint32_t mmp_quota_held(struct mmp_quota *q, const struct sockaddr *sa)
{
	struct slot k, *s;
	uint32_t n = 0;

	if (!key_of(sa, &k))
		return 0;
	pthread_mutex_lock(&q->lock);
	s = find(q, &k);
	if (s->family)
		n = s->count;
	pthread_mutex_unlock(&q->lock);
	return n;
}

uint32_t mmp_quota_addresses(struct mmp_quota *q)
{
	uint32_t n;

	pthread_mutex_lock(&q->lock);
	n = q->used;
	pthread_mutex_unlock(&q->lock);
	return n;
}
