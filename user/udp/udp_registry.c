// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "udp/udp_registry.h"

#define INITIAL_BUCKETS 1024

struct reg_entry {
	struct udp_ep client;
	struct udp_ep lb; /* the load balancer the owner's flow has it from */
	int owner;
	struct reg_entry *next;
};

struct mbox {
	int efd;
	struct udp_ep *items;
	size_t n, cap;
};

struct udp_registry {
	pthread_mutex_t lock;
	struct reg_entry **buckets;
	size_t nbuckets, count;
	uint64_t seed;
	int nthreads;
	struct mbox *mbox;
};

int udp_registry_open(int nthreads, uint64_t seed, struct udp_registry **out)
{
	struct udp_registry *r;
	int err = -ENOMEM;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	r->seed = seed;
	r->nthreads = nthreads;
	r->nbuckets = INITIAL_BUCKETS;
	r->buckets = calloc(r->nbuckets, sizeof(*r->buckets));
	r->mbox = calloc(nthreads, sizeof(*r->mbox));
	if (!r->buckets || !r->mbox)
		goto fail;
	for (int i = 0; i < nthreads; i++)
		r->mbox[i].efd = -1;
	for (int i = 0; i < nthreads; i++) {
		r->mbox[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (r->mbox[i].efd < 0) {
			err = -errno;
			goto fail;
		}
	}
	*out = r;
	return 0;
fail:
	udp_registry_close(r);
	return err;
}

void udp_registry_close(struct udp_registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->buckets && i < r->nbuckets; i++) {
		for (struct reg_entry *e = r->buckets[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	for (int i = 0; r->mbox && i < r->nthreads; i++) {
		if (r->mbox[i].efd >= 0)
			close(r->mbox[i].efd);
		free(r->mbox[i].items);
	}
	free(r->mbox);
	free(r->buckets);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static struct reg_entry **slot(struct udp_registry *r, const struct udp_ep *c)
{
	struct reg_entry **pp = &r->buckets[udp_ep_hash(c, r->seed) & (r->nbuckets - 1)];

	while (*pp && !udp_ep_eq(&(*pp)->client, c))
		pp = &(*pp)->next;
	return pp; /* the entry, or the NULL at the end of its chain */
}

/* Double the table once it holds more entries than buckets; failure only costs speed. */
static void grow(struct udp_registry *r)
{
	size_t n = r->nbuckets * 2;
	struct reg_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < r->nbuckets; i++) {
		for (struct reg_entry *e = r->buckets[i], *next; e; e = next) {
			size_t h = udp_ep_hash(&e->client, r->seed) & (n - 1);

			next = e->next;
			e->next = b[h];
			b[h] = e;
		}
	}
	free(r->buckets);
	r->buckets = b;
	r->nbuckets = n;
}

static void efd_signal(int efd)
{
	uint64_t one = 1;
	ssize_t n = write(efd, &one, sizeof(one));

	(void)n; /* EAGAIN: the counter is saturated, so it is readable anyway */
}

static void efd_drain(int efd)
{
	uint64_t v;
	ssize_t n = read(efd, &v, sizeof(v));

	(void)n; /* EAGAIN: nothing signalled since the last drain */
}

/* Queue client in thread's mailbox and wake it. Called with the lock held. */
static void post(struct udp_registry *r, int thread, const struct udp_ep *client)
{
	struct mbox *m = &r->mbox[thread];

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct udp_ep *items = realloc(m->items, cap * sizeof(*items));

		/* Out of memory: the old flow then just idles out; replies may go astray meanwhile. */
		if (!items)
			return;
		m->items = items;
		m->cap = cap;
	}
	m->items[m->n++] = *client;
	efd_signal(m->efd);
}

int udp_registry_claim(struct udp_registry *r, const struct udp_ep *client, const struct udp_ep *lb, bool move_ok,
		       int me, struct udp_ep *held_lb)
{
	struct reg_entry **pp, *e;
	int old = -1;

	pthread_mutex_lock(&r->lock);
	pp = slot(r, client);
	if (*pp) {
		if ((*pp)->owner != me) {
			*held_lb = (*pp)->lb;
			if (!move_ok && memcmp((*pp)->lb.addr, lb->addr, sizeof(lb->addr))) {
				old = -EACCES;
				goto out;
			}
			old = (*pp)->owner;
			(*pp)->owner = me;
			post(r, old, client);
		}
		(*pp)->lb = *lb;
		goto out;
	}
	e = malloc(sizeof(*e));
	if (!e) {
		old = -ENOMEM;
		goto out;
	}
	e->client = *client;
	e->lb = *lb;
	e->owner = me;
	e->next = NULL;
	*pp = e;
	if (++r->count > r->nbuckets)
		grow(r);
out:
	pthread_mutex_unlock(&r->lock);
	return old;
}

void udp_registry_release(struct udp_registry *r, const struct udp_ep *client, int me)
{
	struct reg_entry **pp, *e;

	pthread_mutex_lock(&r->lock);
	pp = slot(r, client);
	e = *pp;
	if (e && e->owner == me) {
		*pp = e->next;
		free(e);
		r->count--;
	}
	pthread_mutex_unlock(&r->lock);
}

bool udp_registry_holds(struct udp_registry *r, const struct udp_ep *client, int me)
{
	struct reg_entry *e;
	bool holds;

	pthread_mutex_lock(&r->lock);
	e = *slot(r, client);
	holds = e && e->owner == me;
	pthread_mutex_unlock(&r->lock);
	return holds;
}

int udp_registry_mbox_fd(struct udp_registry *r, int thread)
{
	return r->mbox[thread].efd;
}

size_t udp_registry_take(struct udp_registry *r, int thread, struct udp_ep *out, size_t max)
{
	struct mbox *m = &r->mbox[thread];
	size_t n;

	pthread_mutex_lock(&r->lock);
	efd_drain(m->efd);
	n = m->n < max ? m->n : max;
	if (n) { /* an empty mailbox may have no items array: memcpy from NULL is undefined (UBSan) */
		memcpy(out, m->items, n * sizeof(*out));
		memmove(m->items, m->items + n, (m->n - n) * sizeof(*out));
		m->n -= n;
	}
	if (m->n)
		efd_signal(m->efd); /* more than max waiting: stay readable for the next round */
	pthread_mutex_unlock(&r->lock);
	return n;
}
