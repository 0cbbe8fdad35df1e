// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include "core/clock.h"
#include "core/listener_thread.h"
#include "core/loop.h"
#include "lib/log.h"

#define MAX_EVENTS 256
/* How often connections waiting for the kernel to drain are re-checked. */
#define POLL_MS 1

/* The stop eventfd's handler: its only job is to end mmp_loop_run. */
static void on_stop(struct mmp_loop *loop, struct mmp_handler *h, uint32_t events)
{
	loop->stopping = true;
}

static struct mmp_handler stop_handler = { .on_event = on_stop };

static void on_endpoint(struct mmp_loop *loop, struct mmp_handler *h, uint32_t events)
{
	struct mmp_endpoint *ep = (struct mmp_endpoint *)h;

	if (ep->conn->state != CONN_DEAD) /* closed by an earlier event of this batch */
		loop->on_conn_event(loop, ep, events);
}

int mmp_loop_open(struct mmp_loop *loop, int id, const struct mmp_config *cfg, struct mmp_counters *counters)
{
	int err;

	memset(loop, 0, sizeof(*loop));
	loop->id = id;
	loop->cfg = cfg;
	loop->counters = counters;
	err = mmp_listener_loop_open(&loop->epfd, &loop->stop_fd);
	if (err) {
		pr_err("failed to create epoll/eventfd: %s", strerror(-err));
		return err;
	}
	return mmp_loop_add(loop, loop->stop_fd, &stop_handler, EPOLLIN);
}

int mmp_loop_add(struct mmp_loop *loop, int fd, struct mmp_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = -errno;

		pr_err("epoll_ctl on fd %d failed: %s", fd, strerror(-err));
		return err;
	}
	return 0;
}

void mmp_loop_del(struct mmp_loop *loop, int fd)
{
	struct epoll_event ev = { 0 };

	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, &ev);
}

int mmp_loop_watch(struct mmp_loop *loop, struct mmp_endpoint *ep, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = &ep->h };
	int op;

	if (events == ep->events)
		return 0;
	ep->h.on_event = on_endpoint;
	if (!events)
		op = EPOLL_CTL_DEL;
	else
		op = ep->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(loop->epfd, op, ep->fd, &ev)) {
		int err = -errno;

		pr_err("epoll_ctl on fd %d failed: %s", ep->fd, strerror(-err));
		return err;
	}
	ep->events = events;
	return 0;
}

void mmp_loop_poll_add(struct mmp_loop *loop, struct mmp_conn *c)
{
	if (c->polling)
		return;
	c->polling = true;
	c->poll_prev = NULL;
	c->poll_next = loop->poll_head;
	if (loop->poll_head)
		loop->poll_head->poll_prev = c;
	loop->poll_head = c;
}

void mmp_loop_poll_remove(struct mmp_loop *loop, struct mmp_conn *c)
{
	if (!c->polling)
		return;
	if (c->poll_prev)
		c->poll_prev->poll_next = c->poll_next;
	else
		loop->poll_head = c->poll_next;
	if (c->poll_next)
		c->poll_next->poll_prev = c->poll_prev;
	c->polling = false;
	c->poll_prev = c->poll_next = NULL;
}

/*
 * Give every polled connection its turn once; each re-adds itself if still
 * waiting. A turn only ever closes the connection it is for, so the
 * detached rest of the list stays valid.
 */
static void run_polls(struct mmp_loop *loop)
{
	struct mmp_conn *c = loop->poll_head;

	loop->poll_head = NULL;
	while (c) {
		struct mmp_conn *next = c->poll_next;

		c->polling = false;
		c->poll_prev = c->poll_next = NULL;
		if (c->state != CONN_DEAD && loop->on_conn_poll)
			loop->on_conn_poll(loop, c);
		c = next;
	}
}

int mmp_loop_timer_arm(struct mmp_loop *loop, struct mmp_timer *t, uint64_t at_ms)
{
	int free_slot = -1;

	t->at_ms = at_ms;
	for (int i = 0; i < MMP_LOOP_TIMERS; i++) {
		if (loop->timers[i] == t)
			return 0;
		if (!loop->timers[i] && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0)
		return -ENOSPC;
	loop->timers[free_slot] = t;
	return 0;
}

static void run_timers(struct mmp_loop *loop, uint64_t now)
{
	for (int i = 0; i < MMP_LOOP_TIMERS; i++) {
		struct mmp_timer *t = loop->timers[i];

		if (!t || !t->at_ms || t->at_ms > now)
			continue;
		t->at_ms = 0; /* one-shot: fn re-arms it */
		t->fn(loop, t);
	}
}

struct mmp_conn_list *mmp_loop_list_of(struct mmp_loop *loop, struct mmp_conn *c)
{
	switch (c->state) {
	case CONN_HEADER:
		return &loop->header_wait;
	case CONN_CONNECTING:
		return &loop->connect_wait;
	case CONN_SPLICING:
		return &loop->active;
	case CONN_DEAD:
		break;
	}
	return NULL;
}

void mmp_loop_set_state(struct mmp_loop *loop, struct mmp_conn *c, enum mmp_conn_state state)
{
	enum mmp_conn_state old = c->state;

	mmp_conn_list_remove(mmp_loop_list_of(loop, c), c);
	c->state = state;
	mmp_conn_list_push(mmp_loop_list_of(loop, c), c);
	if (loop->on_conn_state)
		loop->on_conn_state(loop, c, old);
}

static void expire(struct mmp_loop *loop, struct mmp_conn_list *l, uint64_t now)
{
	while (l->head && l->head->deadline_ms <= now)
		loop->on_deadline(loop, l->head);
}

static void bury_dead(struct mmp_loop *loop)
{
	while (loop->graveyard) {
		struct mmp_conn *c = loop->graveyard;

		loop->graveyard = c->next;
		free(c);
	}
}

static int next_timeout(struct mmp_loop *loop, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	if (loop->header_wait.head)
		next = loop->header_wait.head->deadline_ms;
	if (loop->connect_wait.head && loop->connect_wait.head->deadline_ms < next)
		next = loop->connect_wait.head->deadline_ms;
	if (loop->poll_head && loop->next_poll_ms < next)
		next = loop->next_poll_ms;
	for (int i = 0; i < MMP_LOOP_TIMERS; i++)
		if (loop->timers[i] && loop->timers[i]->at_ms && loop->timers[i]->at_ms < next)
			next = loop->timers[i]->at_ms;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)(next - now);
}

void mmp_loop_run(struct mmp_loop *loop)
{
	struct epoll_event evs[MAX_EVENTS];

	while (!loop->stopping) {
		uint64_t now = mmp_now_ms();
		int n = epoll_wait(loop->epfd, evs, MAX_EVENTS, next_timeout(loop, now));

		if (n < 0 && errno != EINTR) {
			pr_err("epoll_wait failed: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			struct mmp_handler *h = evs[i].data.ptr;

			h->on_event(loop, h, evs[i].events);
		}
		now = mmp_now_ms();
		expire(loop, &loop->header_wait, now);
		expire(loop, &loop->connect_wait, now);
		if (loop->poll_head && now >= loop->next_poll_ms) {
			loop->next_poll_ms = now + POLL_MS;
			run_polls(loop);
		}
		run_timers(loop, now);
		bury_dead(loop);
	}
}

void mmp_loop_close(struct mmp_loop *loop)
{
	int no_listener = -1;

	bury_dead(loop);
	mmp_listener_fds_close(&no_listener, &loop->stop_fd, &loop->epfd);
}
