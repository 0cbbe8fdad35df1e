// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "log.h"
#include "sockaddr.h"
#include "splice.h"
#include "worker.h"

/* Bytes a pipe may hold; F_SETPIPE_SZ raises it from 64 KiB when allowed. */
#define PIPE_BYTES (256 * 1024)
/* Rounds of read/write per event before yielding to other connections. */
#define PUMP_ROUNDS 8

enum pump_result {
	PUMP_OK,
	PUMP_RESET_SRC, /* dst failed (reset/EPIPE): reset the source side */
	PUMP_RESET_DST, /* src was reset: reset the destination side */
};

static int open_pipe(struct mmp_splice_dir *d)
{
	int p[2], sz;

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
		return -errno;
	/* Best effort: a bigger pipe means fewer syscalls per byte on bulk flows. */
	fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES);
	sz = fcntl(p[1], F_GETPIPE_SZ);
	d->cap = sz > 0 ? (size_t)sz : 65536;
	d->pipe_rd = p[0];
	d->pipe_wr = p[1];
	return 0;
}

void mmp_splice_release(struct mmp_conn *c)
{
	for (int i = 0; i < 2; i++) {
		struct mmp_splice_dir *d = &c->dir[i];

		if (d->pipe_rd >= 0)
			close(d->pipe_rd);
		if (d->pipe_wr >= 0)
			close(d->pipe_wr);
		d->pipe_rd = d->pipe_wr = -1;
	}
}

static bool is_reset(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT || err == EHOSTUNREACH ||
	       err == ENETUNREACH || err == ECONNABORTED;
}

/*
 * Move what is available in one direction. Returns PUMP_OK when the
 * direction is waiting (EAGAIN) or finished, or which side to reset.
 */
static enum pump_result pump(struct mmp_splice_dir *d, int src, int dst)
{
	size_t cap = d->cap;

	for (int round = 0; round < PUMP_ROUNDS; round++) {
		ssize_t n;

		if (d->in_pipe > 0) {
			n = splice(d->pipe_rd, NULL, dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0) {
				if (errno == EAGAIN)
					return PUMP_OK; /* dst is full: wait for EPOLLOUT */
				if (errno == EINTR)
					continue;
				return PUMP_RESET_SRC;
			}
			d->in_pipe -= n;
		}
		if (d->src_eof || d->in_pipe >= cap)
			break;
		n = splice(src, NULL, d->pipe_wr, NULL, cap - d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EINTR)
				continue;
			return PUMP_RESET_DST;
		}
		if (n == 0)
			d->src_eof = true;
		d->in_pipe += n;
		if (n == 0 && d->in_pipe == 0)
			break;
	}
	/* Forward the FIN only once every byte of this direction is in dst's send queue. */
	if (d->src_eof && d->in_pipe == 0 && !d->dst_shut) {
		if (shutdown(dst, SHUT_WR) && errno != ENOTCONN)
			return PUMP_RESET_SRC;
		d->dst_shut = true;
	}
	return PUMP_OK;
}

static uint32_t interest(const struct mmp_splice_dir *rd, const struct mmp_splice_dir *wr)
{
	uint32_t ev = 0;

	if (!rd->src_eof && rd->in_pipe < rd->cap)
		ev |= EPOLLIN;
	if (wr->in_pipe > 0)
		ev |= EPOLLOUT;
	/* A socket with nothing to wait for still needs polling for errors (reset). */
	return ev ? ev : EPOLLRDHUP;
}

static bool finished(const struct mmp_conn *c)
{
	return c->dir[0].dst_shut && c->dir[1].dst_shut;
}

/* Pump both directions, then close, reset, or re-arm epoll. */
static void step(struct mmp_worker *w, struct mmp_conn *c)
{
	char a[MMP_ADDRSTRLEN];
	enum pump_result r0, r1;

	r0 = pump(&c->dir[0], c->client.fd, c->upstream.fd);
	r1 = r0 == PUMP_OK ? pump(&c->dir[1], c->upstream.fd, c->client.fd) : PUMP_OK;
	if (r0 != PUMP_OK || r1 != PUMP_OK) {
		/* dir 0 runs client -> upstream, dir 1 upstream -> client. */
		bool reset_client = r0 == PUMP_RESET_SRC || r1 == PUMP_RESET_DST;

		atomic_fetch_add(&w->counters->resets_forwarded, 1);
		pr_debug("client %s: %s reset, forwarding the reset",
			 mmp_fmt_addr((const void *)(c->src_addr.ss_family ? &c->src_addr : &c->lb_addr), a),
			 reset_client ? "upstream" : "client");
		mmp_conn_close(w, c, reset_client, !reset_client);
		return;
	}
	if (finished(c)) {
		pr_debug("client %s: closed in both directions",
			 mmp_fmt_addr((const void *)(c->src_addr.ss_family ? &c->src_addr : &c->lb_addr), a));
		mmp_conn_close(w, c, false, false);
		return;
	}
	if (mmp_worker_watch(w, &c->client, interest(&c->dir[0], &c->dir[1])) ||
	    mmp_worker_watch(w, &c->upstream, interest(&c->dir[1], &c->dir[0])))
		mmp_conn_close(w, c, true, true);
}

void mmp_splice_start(struct mmp_worker *w, struct mmp_conn *c)
{
	int err;

	/*
	 * dir[] shares its memory with the sockmap engine's state (conn.h): after
	 * a sockmap fallback it holds that engine's bytes, not -1. Pipe fds are -1
	 * whenever not open, so that release closes only what open_pipe opened.
	 */
	for (int i = 0; i < 2; i++)
		c->dir[i] = (struct mmp_splice_dir){ .pipe_rd = -1, .pipe_wr = -1 };
	err = open_pipe(&c->dir[0]);
	if (!err)
		err = open_pipe(&c->dir[1]);
	if (err) {
		pr_err("failed to create splice pipes: %s (raise the open-files limit)", strerror(-err));
		mmp_conn_close(w, c, true, true);
		return;
	}
	/* Bytes that came with the header are already queued: move them now. */
	step(w, c);
}

void mmp_splice_event(struct mmp_worker *w, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events)
{
	if (events & EPOLLERR) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err && is_reset(err)) {
			bool from_client = ep == &c->client;

			atomic_fetch_add(&w->counters->resets_forwarded, 1);
			pr_debug("%s reset (%s), forwarding the reset", from_client ? "client" : "upstream",
				 strerror(err));
			mmp_conn_close(w, c, !from_client, from_client);
			return;
		}
	}
	step(w, c);
}
