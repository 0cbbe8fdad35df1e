// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <search.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/log.h"
#include "mmp_maps.h"
#include "engine/sockmap/sockmap_wake.h"
#include "core/loop.h"
#include "engine/engine.h"
#include "engine/sockmap/sockmap_conn.h"

struct mmp_sockmap_wake {
	struct mmp_handler h; /* the ring's readiness, on the loop's epoll */
	struct mmp_loop *loop;
	struct mmp_engine *engine; /* this loop's sockmap engine: which connections are ours */
	void (*on_flow)(struct mmp_loop *loop, struct mmp_conn *c); /* the engine's re-check of one flow */
	int ring_fd;
	int wake_fd; /* mmp_wake, to remove our ring on close */
	int lost_fd; /* mmp_wake_lost */
	struct ring_buffer *rb;
	void *flows; /* tsearch tree of &ctx->cookie[0], ordered by value */
	uint64_t lost_seen;
};

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static struct mmp_conn *conn_of_key(const uint64_t *key)
{
	return ((const struct mmp_sockmap_conn *)((const char *)key - offsetof(struct mmp_sockmap_conn, cookie)))->conn;
}

/* One notification: the key of a flow that started holding bytes back. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct mmp_sockmap_wake *wk = ctx;
	uint64_t key;
	void *node;

	if (size < sizeof(key))
		return 0;
	memcpy(&key, data, sizeof(key));
	/* Absent: the connection closed after the verdict wrote this. */
	node = tfind(&key, &wk->flows, cmp_key);
	if (node)
		wk->on_flow(wk->loop, conn_of_key(*(uint64_t **)node));
	return 0;
}

static void run(struct mmp_sockmap_wake *wk);

static void on_ring(struct mmp_loop *loop, struct mmp_handler *h, uint32_t events)
{
	run((struct mmp_sockmap_wake *)h);
}

int mmp_sockmap_wake_open(struct mmp_engine *e, struct mmp_loop *loop, const struct mmp_sockmap_wake_maps *maps,
			  struct mmp_sockmap_wake **out)
{
	struct mmp_sockmap_wake *wk;
	__u32 slot = (__u32)loop->id;
	int err;

	wk = calloc(1, sizeof(*wk));
	if (!wk)
		return -ENOMEM;
	wk->h.on_event = on_ring;
	wk->loop = loop;
	wk->engine = e;
	wk->ring_fd = -1;
	wk->on_flow = maps->on_flow;
	wk->wake_fd = maps->wake_fd;
	wk->lost_fd = maps->lost_fd;
	wk->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "mmp_wake_ring", 0, 0, MMP_WAKE_RING_BYTES, NULL);
	if (wk->ring_fd < 0) {
		err = -errno;
		pr_err("sockmap engine: failed to create worker %d's notification ring: %s", loop->id, strerror(-err));
		goto fail;
	}
	if (bpf_map_update_elem(wk->wake_fd, &slot, &wk->ring_fd, BPF_ANY)) {
		err = -errno;
		pr_err("sockmap engine: failed to install worker %d's notification ring: %s", loop->id, strerror(-err));
		goto fail;
	}
	wk->rb = ring_buffer__new(wk->ring_fd, on_record, wk, NULL);
	if (!wk->rb) {
		err = -errno;
		pr_err("sockmap engine: failed to map worker %d's notification ring: %s", loop->id, strerror(-err));
		goto fail;
	}
	err = mmp_loop_add(loop, wk->ring_fd, &wk->h, EPOLLIN);
	if (err)
		goto fail;
	*out = wk;
	return 0;
fail:
	mmp_sockmap_wake_close(wk);
	return err;
}

void mmp_sockmap_wake_close(struct mmp_sockmap_wake *wk)
{
	__u32 slot;

	if (!wk)
		return;
	ring_buffer__free(wk->rb);
	if (wk->ring_fd >= 0) {
		slot = (__u32)wk->loop->id;
		bpf_map_delete_elem(wk->wake_fd, &slot);
		close(wk->ring_fd);
	}
	free(wk);
}

int mmp_sockmap_wake_add(struct mmp_sockmap_wake *wk, struct mmp_sockmap_conn *s)
{
	return tsearch(&s->cookie[0], &wk->flows, cmp_key) ? 0 : -ENOMEM;
}

void mmp_sockmap_wake_remove(struct mmp_sockmap_wake *wk, struct mmp_sockmap_conn *s)
{
	void *node = tfind(&s->cookie[0], &wk->flows, cmp_key);

	/* Only our own entry: a failed add must not remove another connection's. */
	if (node && *(uint64_t **)node == &s->cookie[0])
		tdelete(&s->cookie[0], &wk->flows, cmp_key);
}

/* Re-check every sockmap connection of the worker: notifications were lost. */
static void check_all(struct mmp_sockmap_wake *wk)
{
	struct mmp_loop *loop = wk->loop;
	struct mmp_conn *c = loop->active.head;

	while (c) {
		/* A check closes at most the connection it checks. */
		struct mmp_conn *next = c->next;

		if (c->engine == wk->engine && c->ctx)
			wk->on_flow(loop, c);
		c = next;
	}
}

/* The ring is readable: re-check each notified connection, or all of them if notifications were lost. */
static void run(struct mmp_sockmap_wake *wk)
{
	__u32 slot = (__u32)wk->loop->id;
	uint64_t lost = 0;
	int n;

	n = ring_buffer__consume(wk->rb);
	if (n < 0) {
		pr_err("sockmap engine: reading worker %d's notification ring failed: %s", wk->loop->id, strerror(-n));
		check_all(wk);
	}
	/* Read after the records: a loss is counted before a record that is still unread. */
	if (bpf_map_lookup_elem(wk->lost_fd, &slot, &lost) || lost == wk->lost_seen)
		return;
	pr_debug("sockmap: %lu pause notifications lost (ring full), re-checking every flow",
		 (unsigned long)(lost - wk->lost_seen));
	wk->lost_seen = lost;
	check_all(wk);
}
