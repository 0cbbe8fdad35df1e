// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "handshake.h"
#include "listener_thread.h"
#include "log.h"
#include "policy.h"
#include "proxy_proto.h"
#include "sockaddr.h"
#include "sockmap.h"
#include "sockmap_wake.h"
#include "splice.h"
#include "tc_engine.h"
#include "worker.h"

#define ACCEPT_BATCH 64
#define EMFILE_BACKOFF_MS 100
#define MAX_EVENTS 256
/* How often connections waiting for the kernel to drain are re-checked. */
#define POLL_MS 1

/* epoll_data.ptr tags for the two non-connection fds. */
static char listen_tag, stop_tag;

uint64_t mmp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mmp_conn_list_push(struct mmp_conn_list *l, struct mmp_conn *c)
{
	c->next = NULL;
	c->prev = l->tail;
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	l->len++;
}

void mmp_conn_list_remove(struct mmp_conn_list *l, struct mmp_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		l->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		l->tail = c->prev;
	c->prev = c->next = NULL;
	l->len--;
}

int mmp_worker_watch(struct mmp_worker *w, struct mmp_endpoint *ep, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ep };
	int op;

	if (events == ep->events)
		return 0;
	if (!events)
		op = EPOLL_CTL_DEL;
	else
		op = ep->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(w->epfd, op, ep->fd, &ev)) {
		int err = -errno;

		pr_err("epoll_ctl on fd %d failed: %s", ep->fd, strerror(-err));
		return err;
	}
	ep->events = events;
	return 0;
}

void mmp_worker_poll_add(struct mmp_worker *w, struct mmp_conn *c)
{
	if (c->polling)
		return;
	c->polling = true;
	c->poll_prev = NULL;
	c->poll_next = w->poll_head;
	if (w->poll_head)
		w->poll_head->poll_prev = c;
	w->poll_head = c;
}

static void poll_remove(struct mmp_worker *w, struct mmp_conn *c)
{
	if (!c->polling)
		return;
	if (c->poll_prev)
		c->poll_prev->poll_next = c->poll_next;
	else
		w->poll_head = c->poll_next;
	if (c->poll_next)
		c->poll_next->poll_prev = c->poll_prev;
	c->polling = false;
	c->poll_prev = c->poll_next = NULL;
}

/*
 * Re-check every polled connection once; each re-adds itself if still
 * waiting. A check only ever closes the connection it checks, so the
 * detached rest of the list stays valid.
 */
static void run_polls(struct mmp_worker *w)
{
	struct mmp_conn *c = w->poll_head;

	w->poll_head = NULL;
	while (c) {
		struct mmp_conn *next = c->poll_next;

		c->polling = false;
		c->poll_prev = c->poll_next = NULL;
		if (c->tc_holding)
			mmp_tc_check(w, c);
		else if (c->tc_retry_ms)
			mmp_tc_retry(w, c);
		else if (c->state == CONN_SPLICING && c->engine == ENGINE_SOCKMAP)
			mmp_sockmap_poll(w, c);
		c = next;
	}
}

static struct mmp_conn_list *list_of(struct mmp_worker *w, struct mmp_conn *c)
{
	switch (c->state) {
	case CONN_HEADER:
		return &w->header_wait;
	case CONN_CONNECTING:
		return &w->connect_wait;
	case CONN_SPLICING:
		return &w->active;
	case CONN_DEAD:
		break;
	}
	return NULL;
}

static void close_endpoint(struct mmp_endpoint *ep, bool reset)
{
	if (ep->fd < 0)
		return;
	if (reset) {
		/* SO_LINGER {1, 0}: close() sends RST instead of FIN. */
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(ep->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(ep->fd); /* also removes it from epoll */
	ep->fd = -1;
}

void mmp_conn_close(struct mmp_worker *w, struct mmp_conn *c, bool reset_client, bool reset_upstream)
{
	mmp_conn_list_remove(list_of(w, c), c);
	poll_remove(w, c);
	if (c->tc_holding)
		mmp_tc_abort(w, c, "the connection closed");
	else if (c->tc_retry_ms && !c->tc_attempts)
		atomic_fetch_add(&w->counters->tc_short, 1);
	if (c->state == CONN_SPLICING && c->engine == ENGINE_SOCKMAP)
		mmp_sockmap_release(w, c);
	else if (c->state == CONN_SPLICING)
		mmp_splice_release(c);
	close_endpoint(&c->client, reset_client);
	close_endpoint(&c->upstream, reset_upstream);
	atomic_fetch_sub(&w->counters->active, 1);
	c->state = CONN_DEAD;
	c->next = w->graveyard;
	w->graveyard = c;
}

static void bury_dead(struct mmp_worker *w)
{
	while (w->graveyard) {
		struct mmp_conn *c = w->graveyard;

		w->graveyard = c->next;
		free(c);
	}
}

static int make_listener(const struct mmp_config *cfg)
{
	const struct sockaddr *sa = (const struct sockaddr *)&cfg->listen;
	char addr[MMP_ADDRSTRLEN];
	int one = 1, fd, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		goto fail;
	if (bind(fd, sa, mmp_sockaddr_len(sa)) || listen(fd, 4096))
		goto fail;
	return fd;
fail:
	err = -errno;
	pr_err("failed to listen on %s: %s%s", mmp_fmt_addr(sa, addr), strerror(-err),
	       err == -EADDRINUSE ? " (another process holds the port: stop it or change -l)"
	       : err == -EADDRNOTAVAIL ? " (the address is not configured on this host: change -l)"
				       : "");
	close(fd);
	return err;
}

int mmp_worker_init(struct mmp_worker *w, int id, const struct mmp_config *cfg,
		    const struct mmp_policy *policy, struct mmp_sockmap *sockmap, struct mmp_tc *tc,
		    struct mmp_counters *counters)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int err;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->cfg = cfg;
	w->policy = policy;
	w->sockmap = sockmap;
	w->tc = tc;
	w->counters = counters;
	w->epfd = w->listen_fd = w->stop_fd = -1;

	w->peek_buf = malloc(PP_MAX_HEADER_LEN);
	if (!w->peek_buf)
		return -ENOMEM;
	err = mmp_listener_loop_open(&w->epfd, &w->stop_fd);
	if (err) {
		pr_err("failed to create epoll/eventfd: %s", strerror(-err));
		return err;
	}
	w->listen_fd = make_listener(cfg);
	if (w->listen_fd < 0)
		return w->listen_fd;

	ev.data.ptr = &listen_tag;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &ev))
		return -errno;
	ev.data.ptr = &stop_tag;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stop_fd, &ev))
		return -errno;
	if (sockmap)
		return mmp_sockmap_wake_open(sockmap, w, &w->sockmap_wake);
	return 0;
}

static void pause_accept(struct mmp_worker *w, int err)
{
	struct epoll_event ev = { 0 };

	/* Out of fds: stop polling the listener briefly instead of spinning or exiting. */
	pr_err("accept failed: %s; pausing new connections for %d ms (raise LimitNOFILE / ulimit -n)",
	       strerror(-err), EMFILE_BACKOFF_MS);
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->listen_fd, &ev);
	w->accept_resume_ms = mmp_now_ms() + EMFILE_BACKOFF_MS;
}

static void resume_accept(struct mmp_worker *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listen_tag };

	w->accept_resume_ms = 0;
	if (!w->stopping)
		epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &ev);
}

static void accept_batch(struct mmp_worker *w)
{
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int fd;

		fd = accept4(w->listen_fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = -errno;

			if (err == -EMFILE || err == -ENFILE || err == -ENOBUFS || err == -ENOMEM)
				pause_accept(w, err);
			else if (err != -EAGAIN && err != -EINTR && err != -ECONNABORTED)
				pr_conn("accept failed: %s", strerror(-err));
			return;
		}
		atomic_fetch_add(&w->counters->accepted, 1);
		mmp_handshake_accepted(w, fd, &peer);
	}
}

/* Expire the oldest entries of a deadline list. */
static void expire(struct mmp_worker *w, struct mmp_conn_list *l, uint64_t now)
{
	while (l->head && l->head->deadline_ms <= now)
		mmp_handshake_timeout(w, l->head);
}

static int next_timeout(struct mmp_worker *w, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	if (w->header_wait.head)
		next = w->header_wait.head->deadline_ms;
	if (w->connect_wait.head && w->connect_wait.head->deadline_ms < next)
		next = w->connect_wait.head->deadline_ms;
	if (w->accept_resume_ms && w->accept_resume_ms < next)
		next = w->accept_resume_ms;
	if (w->poll_head && w->next_poll_ms < next)
		next = w->next_poll_ms;
	if (w->tc && w->id == 0 && w->next_gc_ms < next)
		next = w->next_gc_ms;
	if (mmp_tcp_log_pending(&w->log) && now + 1000 < next)
		next = now + 1000; /* the "suppressed" summary is due within a second */
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)(next - now);
}

static void dispatch(struct mmp_worker *w, struct mmp_endpoint *ep, uint32_t events)
{
	struct mmp_conn *c = ep->conn;

	switch (c->state) {
	case CONN_HEADER:
	case CONN_CONNECTING:
		mmp_handshake_event(w, c, ep, events);
		break;
	case CONN_SPLICING:
		if (c->engine == ENGINE_SOCKMAP)
			mmp_sockmap_event(w, c, ep, events);
		else
			mmp_splice_event(w, c, ep, events);
		/* A hand-off in progress re-checks as soon as the drain moves. */
		if (c->tc_holding && c->state == CONN_SPLICING)
			mmp_tc_check(w, c);
		break;
	case CONN_DEAD:
		break; /* closed by an earlier event of this batch */
	}
}

static void *worker_main(void *arg)
{
	struct mmp_worker *w = arg;
	struct epoll_event evs[MAX_EVENTS];

	while (!w->stopping) {
		uint64_t now = mmp_now_ms();
		int n = epoll_wait(w->epfd, evs, MAX_EVENTS, next_timeout(w, now));

		if (n < 0 && errno != EINTR) {
			pr_err("epoll_wait failed: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;

			if (ptr == &stop_tag)
				w->stopping = true;
			else if (ptr == &listen_tag)
				accept_batch(w);
			else if (w->sockmap_wake && ptr == w->sockmap_wake)
				mmp_sockmap_wake_run(w->sockmap_wake);
			else
				dispatch(w, ptr, evs[i].events);
		}
		now = mmp_now_ms();
		expire(w, &w->header_wait, now);
		expire(w, &w->connect_wait, now);
		if (w->accept_resume_ms && w->accept_resume_ms <= now)
			resume_accept(w);
		if (w->poll_head && now >= w->next_poll_ms) {
			w->next_poll_ms = now + POLL_MS;
			run_polls(w);
		}
		bury_dead(w);
		mmp_tcp_log_tick(&w->log, now * 1000000);
		if (w->tc && w->id == 0 && now >= w->next_gc_ms) {
			w->next_gc_ms = now + 1000;
			mmp_tc_gc(w->tc);
		}
	}
	return NULL;
}

int mmp_worker_start(struct mmp_worker *w)
{
	return mmp_listener_thread_start(&w->thread, worker_main, w, "listener", w->id);
}

static void close_all(struct mmp_worker *w, struct mmp_conn_list *l)
{
	while (l->head)
		mmp_conn_close(w, l->head, false, false);
}

void mmp_worker_stop(struct mmp_worker *w)
{
	mmp_listener_thread_stop(&w->thread, w->stop_fd, "listener", w->id);
	close_all(w, &w->header_wait);
	close_all(w, &w->connect_wait);
	close_all(w, &w->active);
	bury_dead(w);
	mmp_sockmap_wake_close(w->sockmap_wake);
	w->sockmap_wake = NULL;
	mmp_listener_fds_close(&w->listen_fd, &w->stop_fd, &w->epfd);
	free(w->peek_buf);
	w->peek_buf = NULL;
}
