// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include "core/clock.h"
#include "core/lifecycle.h"
#include "core/counters.h"
#include "core/listener_thread.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "listen/activated.h"
#include "listen/port_steer.h"
#include "proto/proxy_proto.h"
#include "steer/reply_steer.h"
#include "steer/reply_steer.h"
#include "tcp/handshake.h"
#include "tcp/idle.h"
#include "tcp/pending.h"
#include "tcp/worker.h"

#define ACCEPT_BATCH 64
#define EMFILE_BACKOFF_MS 100
#define ENGINE_TICK_MS 1000

/*
 * Under the tc engine (auto too), an upstream beyond loopback takes the load
 * balancer's segments as they come, out of its own interface (docs/DESIGN.md
 * §14, "The tc engine across two interfaces"): they must fit its MTU, so the
 * listener advertises no larger MSS (a tunnel's MTU is below the uplink's; lo
 * sends 64 KiB). An IPv6 listener may take IPv4 load balancers too: the
 * smaller of both. 0, or -errno.
 */
static int clamp_mss_to_upstream(int fd, int family, const struct mmp_config *cfg)
{
	int v4 = mmp_steer_path_mss(AF_INET), v6 = family == AF_INET6 ? mmp_steer_path_mss(AF_INET6) : 0;
	int mss = v4 && (!v6 || v4 < v6) ? v4 : v6;

	if (cfg->engine != MMP_ENGINE_TC && cfg->engine != MMP_ENGINE_AUTO)
		return 0;
	if (mss && setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss)))
		return -errno;
	return 0;
}

static int make_listener(const struct sockaddr_storage *where, const struct mmp_config *cfg)
{
	const struct sockaddr *sa = (const struct sockaddr *)where;
	char addr[MMP_ADDRSTRLEN];
	int one = 1, fd, err;

	/* Socket activation: the manager's socket, which outlives us (docs/DESIGN.md §15). */
	if (mmp_activated()) {
		fd = mmp_activated_listener(where);
		if (fd >= 0 && (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
				mmp_tcp_keepalive_set(fd, cfg) || clamp_mss_to_upstream(fd, sa->sa_family, cfg))) {
			err = -errno;
			close(fd);
			return err;
		}
		return fd;
	}
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) || mmp_tcp_keepalive_set(fd, cfg) ||
	    clamp_mss_to_upstream(fd, sa->sa_family, cfg))
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

static void pause_accept(struct mmp_worker *w, int err)
{
	/* Out of fds: stop polling the listener briefly instead of spinning or exiting. */
	pr_err("accept failed: %s; pausing new connections for %d ms (raise LimitNOFILE / ulimit -n)",
	       strerror(-err), EMFILE_BACKOFF_MS);
	for (int i = 0; i < w->n_listens; i++)
		mmp_loop_del(&w->loop, w->listens[i].fd);
	mmp_loop_timer_arm(&w->loop, &w->accept_resume, mmp_now_ms() + EMFILE_BACKOFF_MS);
}

static void on_accept(struct mmp_loop *loop, struct mmp_handler *h, uint32_t events);

static void resume_accept(struct mmp_loop *loop, struct mmp_timer *t)
{
	struct mmp_worker *w = mmp_worker_of(loop);

	for (int i = 0; i < w->n_listens && !loop->stopping; i++)
		mmp_loop_add(loop, w->listens[i].fd, &w->listens[i].handler, EPOLLIN);
}

static void on_accept(struct mmp_loop *loop, struct mmp_handler *h, uint32_t events)
{
	struct mmp_worker *w = mmp_worker_of(loop);
	struct mmp_listen_sock *ls = (struct mmp_listen_sock *)h;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int fd;

		fd = accept4(ls->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = -errno;

			if (err == -EMFILE || err == -ENFILE || err == -ENOBUFS || err == -ENOMEM)
				pause_accept(w, err);
			else if (err != -EAGAIN && err != -EINTR && err != -ECONNABORTED)
				pr_conn("accept failed: %s", strerror(-err));
			return;
		}
		mmp_count(loop->counters, MMP_TCP_CNT_accepted, 1);
		mmp_handshake_accepted(w, fd, &peer);
	}
}

/* A connection's socket is ready: the handshake's until connected, then its engine's. */
static void on_conn_event(struct mmp_loop *loop, struct mmp_endpoint *ep, uint32_t events)
{
	struct mmp_conn *c = ep->conn;

	if (c->state == CONN_SPLICING)
		mmp_engine_event(loop, c, ep, events);
	else
		mmp_handshake_event(mmp_worker_of(loop), c, ep, events);
}

static void on_conn_state(struct mmp_loop *loop, struct mmp_conn *c, enum mmp_conn_state old)
{
	mmp_pending_state_changed(mmp_worker_of(loop), c, old);
}

static void on_deadline(struct mmp_loop *loop, struct mmp_conn *c)
{
	mmp_handshake_timeout(mmp_worker_of(loop), c);
}

/* The engines' state, then the reply tuple (it lingers, docs/DESIGN.md §14). */
static void on_conn_release(struct mmp_loop *loop, struct mmp_conn *c)
{
	mmp_engine_release(loop, c);
	if (c->steer_owner)
		mmp_steer_release(IPPROTO_TCP, (const struct sockaddr *)&c->src_addr,
				  (const struct sockaddr *)c->target, c->steer_owner);
	c->steer_owner = 0;
}

static void on_log_tick(struct mmp_loop *loop, struct mmp_timer *t)
{
	struct mmp_worker *w = mmp_worker_of(loop);

	mmp_tcp_log_tick(&w->log, mmp_now_ns());
	mmp_loop_timer_arm(loop, t, mmp_now_ms() + 1000);
}

static void on_engine_tick(struct mmp_loop *loop, struct mmp_timer *t)
{
	struct mmp_worker *w = mmp_worker_of(loop);

	mmp_engines_tick(&w->engines);
	mmp_loop_timer_arm(loop, t, mmp_now_ms() + ENGINE_TICK_MS);
}

/*
 * The listening socket(s) of this thread: -l's port; with a range, the
 * first port steered by sk_lookup, or every port (docs/DESIGN.md §8).
 */
static int open_listeners(struct mmp_worker *w, const struct mmp_config *cfg, const struct mmp_port_steer *steer)
{
	int n = mmp_port_steer_sockets(cfg, steer), err;

	w->listens = calloc(n, sizeof(*w->listens));
	if (!w->listens)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage addr;

		mmp_port_steer_addr(cfg, i, &addr);
		w->listens[i].fd = make_listener(&addr, cfg);
		if (w->listens[i].fd < 0)
			return w->listens[i].fd;
		w->n_listens = i + 1; /* opened, so mmp_worker_stop closes it */
		w->listens[i].handler.on_event = on_accept;
		/* Activated, every thread polls the one socket: wake one of them per connection, not all. */
		err = mmp_loop_add(&w->loop, w->listens[i].fd, &w->listens[i].handler,
				   EPOLLIN | (mmp_activated() ? EPOLLEXCLUSIVE : 0));
		if (!err)
			err = mmp_port_steer_add(steer, w->loop.id, i, w->listens[i].fd);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Taken over (docs/DESIGN.md §15): the listeners close in their own thread,
 * so no accept runs on a closed fd. With net.ipv4.tcp_migrate_req the
 * kernel moves what their queues hold to the successor's listeners of the
 * same SO_REUSEPORT group; a port range's sockets leave the sk_lookup map
 * as they close.
 */
static void on_drain(struct mmp_loop *loop, struct mmp_handler *h, uint32_t events)
{
	struct mmp_worker *w = mmp_worker_of(loop);

	mmp_loop_del(loop, w->drain_fd);
	for (int i = 0; i < w->n_listens; i++) {
		mmp_loop_del(loop, w->listens[i].fd);
		close(w->listens[i].fd);
	}
	w->n_listens = 0;
	atomic_store(&w->listeners_closed, true);
}

void mmp_worker_drain(struct mmp_worker *w)
{
	uint64_t one = 1;

	if (w->drain_fd >= 0 && write(w->drain_fd, &one, sizeof(one)) != sizeof(one))
		pr_err("failed to wake listener thread %d: %s", w->loop.id, strerror(errno));
}

int mmp_worker_init(struct mmp_worker *w, int id, const struct mmp_config *cfg, const struct mmp_policy *policy,
		    const struct mmp_port_steer *steer, const struct mmp_engines *engines,
		    struct mmp_counters *counters)
{
	int err;

	memset(w, 0, sizeof(*w));
	w->drain_fd = -1;
	err = mmp_loop_open(&w->loop, id, cfg, counters);
	if (err)
		return err;
	w->drain_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->drain_fd < 0)
		return -errno;
	w->drain.on_event = on_drain;
	err = mmp_loop_add(&w->loop, w->drain_fd, &w->drain, EPOLLIN);
	if (err)
		return err;
	w->policy = policy;
	w->loop.on_conn_event = on_conn_event;
	w->loop.on_deadline = on_deadline;
	w->loop.on_conn_poll = mmp_engine_poll;
	w->loop.on_conn_release = on_conn_release;
	w->loop.on_conn_state = on_conn_state;
	w->peek_buf = malloc(PP_MAX_HEADER_LEN);
	if (!w->peek_buf)
		return -ENOMEM;
	err = open_listeners(w, cfg, steer);
	if (err)
		return err;
	w->accept_resume.fn = resume_accept;
	w->engine_tick.fn = on_engine_tick;
	w->log_tick.fn = on_log_tick;
	mmp_loop_timer_arm(&w->loop, &w->log_tick, mmp_now_ms() + 1000);
	mmp_tcp_idle_start(&w->loop, &w->idle_sweep);
	err = mmp_engines_worker_open(&w->engines, engines, &w->loop);
	w->engines_open = true; /* partly open is closed the same way */
	if (err)
		return err;
	/* One loop does the engines' periodic work (tc: collect finished flows). */
	if (id == 0)
		mmp_loop_timer_arm(&w->loop, &w->engine_tick, mmp_now_ms() + ENGINE_TICK_MS);
	return 0;
}

static void *worker_main(void *arg)
{
	struct mmp_worker *w = arg;

	mmp_loop_run(&w->loop);
	return NULL;
}

int mmp_worker_start(struct mmp_worker *w)
{
	return mmp_listener_thread_start(&w->thread, worker_main, w, "listener", w->loop.id);
}

void mmp_worker_stop(struct mmp_worker *w)
{
	mmp_listener_thread_stop(&w->thread, w->loop.stop_fd, "listener", w->loop.id);
	for (int i = 0; i < w->n_listens; i++)
		close(w->listens[i].fd);
	free(w->listens);
	w->listens = NULL;
	w->n_listens = 0;
	if (w->drain_fd >= 0)
		close(w->drain_fd);
	w->drain_fd = -1;
	/* Connections first: their release may use the engines' loop state (sockmap's index). */
	mmp_conn_close_all(&w->loop);
	mmp_loop_close(&w->loop);
	if (w->engines_open)
		mmp_engines_worker_close(&w->engines, &w->loop);
	w->engines_open = false;
	free(w->peek_buf);
	w->peek_buf = NULL;
}
