// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include "udp/udp_flow.h"

#define INITIAL_BUCKETS 1024

static bool in_lb_index(const struct udp_flow *f)
{
	return f->format != MMP_UDP_FMT_SPP;
}

static bool in_client_index(const struct udp_flow *f)
{
	return f->client.family != 0;
}

static struct udp_flow **lb_slot(const struct udp_flow_table *t, const struct udp_ep *lb)
{
	return &t->lb_buckets[udp_ep_hash(lb, t->seed) & (t->nbuckets - 1)];
}

static struct udp_flow **client_slot(const struct udp_flow_table *t, const struct udp_ep *c)
{
	/* A different seed per index: one bad key set cannot collide in both. */
	return &t->client_buckets[udp_ep_hash(c, ~t->seed) & (t->nbuckets - 1)];
}

int udp_ft_init(struct udp_flow_table *t, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->seed = seed;
	t->nbuckets = INITIAL_BUCKETS;
	t->lb_buckets = calloc(t->nbuckets, sizeof(*t->lb_buckets));
	t->client_buckets = calloc(t->nbuckets, sizeof(*t->client_buckets));
	if (!t->lb_buckets || !t->client_buckets) {
		udp_ft_free(t);
		return -ENOMEM;
	}
	return 0;
}

void udp_ft_free(struct udp_flow_table *t)
{
	free(t->lb_buckets);
	free(t->client_buckets);
	t->lb_buckets = t->client_buckets = NULL;
}

static void lb_link(struct udp_flow_table *t, struct udp_flow *f)
{
	struct udp_flow **slot = lb_slot(t, &f->lb);

	f->lb_next = *slot;
	*slot = f;
	f->in_lb = true;
}

static void lb_unlink(struct udp_flow_table *t, struct udp_flow *f)
{
	struct udp_flow **pp = lb_slot(t, &f->lb);

	if (!f->in_lb)
		return;
	while (*pp != f)
		pp = &(*pp)->lb_next;
	*pp = f->lb_next;
	f->lb_next = NULL;
	f->in_lb = false;
}

static void client_link(struct udp_flow_table *t, struct udp_flow *f)
{
	struct udp_flow **slot = client_slot(t, &f->client);

	f->client_next = *slot;
	*slot = f;
	f->in_client = true;
}

static void client_unlink(struct udp_flow_table *t, struct udp_flow *f)
{
	struct udp_flow **pp = client_slot(t, &f->client);

	if (!f->in_client)
		return;
	while (*pp != f)
		pp = &(*pp)->client_next;
	*pp = f->client_next;
	f->client_next = NULL;
	f->in_client = false;
}

/* Double both indexes once there are more flows than buckets. */
static int grow(struct udp_flow_table *t)
{
	size_t old_n = t->nbuckets;
	struct udp_flow **old_lb = t->lb_buckets, **old_client = t->client_buckets;
	struct udp_flow **lb, **client;

	lb = calloc(old_n * 2, sizeof(*lb));
	client = calloc(old_n * 2, sizeof(*client));
	if (!lb || !client) {
		free(lb);
		free(client);
		return -ENOMEM;
	}
	t->lb_buckets = lb;
	t->client_buckets = client;
	t->nbuckets = old_n * 2;
	for (size_t i = 0; i < old_n; i++) {
		for (struct udp_flow *f = old_lb[i], *next; f; f = next) {
			next = f->lb_next;
			lb_link(t, f);
		}
		for (struct udp_flow *f = old_client[i], *next; f; f = next) {
			next = f->client_next;
			client_link(t, f);
		}
	}
	free(old_lb);
	free(old_client);
	return 0;
}

static void idle_unlink(struct udp_flow_table *t, struct udp_flow *f)
{
	if (f->idle_prev)
		f->idle_prev->idle_next = f->idle_next;
	else
		t->idle_head = f->idle_next;
	if (f->idle_next)
		f->idle_next->idle_prev = f->idle_prev;
	else
		t->idle_tail = f->idle_prev;
	f->idle_prev = f->idle_next = NULL;
}

static void idle_append(struct udp_flow_table *t, struct udp_flow *f)
{
	f->idle_next = NULL;
	f->idle_prev = t->idle_tail;
	if (t->idle_tail)
		t->idle_tail->idle_next = f;
	else
		t->idle_head = f;
	t->idle_tail = f;
}

/* Link f after `after`, or at the head when after is NULL. */
static void idle_insert_after(struct udp_flow_table *t, struct udp_flow *after, struct udp_flow *f)
{
	f->idle_prev = after;
	f->idle_next = after ? after->idle_next : t->idle_head;
	if (f->idle_next)
		f->idle_next->idle_prev = f;
	else
		t->idle_tail = f;
	if (after)
		after->idle_next = f;
	else
		t->idle_head = f;
}

int udp_ft_add(struct udp_flow_table *t, struct udp_flow *f)
{
	if (t->count >= t->nbuckets && grow(t))
		return -ENOMEM;
	f->in_lb = f->in_client = false;
	if (in_lb_index(f))
		lb_link(t, f);
	if (in_client_index(f))
		client_link(t, f);
	idle_append(t, f);
	t->count++;
	return 0;
}

void udp_ft_remove(struct udp_flow_table *t, struct udp_flow *f)
{
	lb_unlink(t, f);
	client_unlink(t, f);
	idle_unlink(t, f);
	t->count--;
}

struct udp_flow *udp_ft_by_lb(const struct udp_flow_table *t, const struct udp_ep *lb)
{
	for (struct udp_flow *f = *lb_slot(t, lb); f; f = f->lb_next)
		if (udp_ep_eq(&f->lb, lb))
			return f;
	return NULL;
}

struct udp_flow *udp_ft_by_client(const struct udp_flow_table *t, const struct udp_ep *client)
{
	for (struct udp_flow *f = *client_slot(t, client); f; f = f->client_next)
		if (udp_ep_eq(&f->client, client))
			return f;
	return NULL;
}

void udp_ft_move(struct udp_flow_table *t, struct udp_flow *f, const struct udp_ep *lb, uint8_t format)
{
	lb_unlink(t, f);
	f->lb = *lb;
	f->format = format;
	if (in_lb_index(f))
		lb_link(t, f);
}

void udp_ft_touch(struct udp_flow_table *t, struct udp_flow *f, uint64_t now_ns)
{
	f->last_ns = now_ns;
	if (t->idle_tail != f) {
		idle_unlink(t, f);
		idle_append(t, f);
	}
}

void udp_ft_touch_at(struct udp_flow_table *t, struct udp_flow *f, uint64_t ts_ns)
{
	struct udp_flow *after;

	if (ts_ns <= f->last_ns)
		return;
	idle_unlink(t, f);
	f->last_ns = ts_ns;
	for (after = t->idle_tail; after && after->last_ns > ts_ns; after = after->idle_prev)
		;
	idle_insert_after(t, after, f);
}

static int touch_cmp_newest_first(const void *a, const void *b)
{
	uint64_t x = ((const struct udp_ft_touch *)a)->ts_ns, y = ((const struct udp_ft_touch *)b)->ts_ns;

	return x < y ? 1 : x > y ? -1 : 0;
}

void udp_ft_touch_batch(struct udp_flow_table *t, struct udp_ft_touch *v, size_t k)
{
	struct udp_flow *after;
	size_t n = 0;

	/* Take the moving flows out; the rest of the list stays in order. */
	for (size_t i = 0; i < k; i++) {
		if (v[i].ts_ns <= v[i].f->last_ns)
			continue;
		idle_unlink(t, v[i].f);
		v[i].f->last_ns = v[i].ts_ns;
		v[n++] = v[i];
	}
	qsort(v, n, sizeof(*v), touch_cmp_newest_first);
	/*
	 * Merge them back, newest first, from the newest end: the walk only ever
	 * moves towards the head, so the whole merge visits each flow once.
	 */
	after = t->idle_tail;
	for (size_t i = 0; i < n; i++) {
		struct udp_flow *f = v[i].f;

		while (after && after->last_ns > f->last_ns)
			after = after->idle_prev;
		idle_insert_after(t, after, f);
	}
}
