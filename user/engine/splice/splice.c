// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <stdlib.h>
#include "core/counters.h"
#include "core/lifecycle.h"
#include "core/loop.h"
#include "engine/engine.h"
#include "engine/splice/splice.h"
#include "engine/splice/splice_dir.h"
#include "engine/splice/splice_pipe_budget.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/sockaddr.h"

/* Rounds of read/write per event before yielding to other connections. */
#define PUMP_ROUNDS 8

/* The engine's per-connection context: 0 = client -> upstream, 1 = upstream -> client. */
struct mmp_splice_conn {
	struct mmp_splice_dir dir[2];
	bool fallback_reported; /* a direction copies without a pipe: counted and logged once per connection */
};

static struct mmp_splice_dir *dir_of(const struct mmp_conn *c, int i)
{
	return &((struct mmp_splice_conn *)c->ctx)->dir[i];
}

/* Closes only the pipes this engine opened: a context is born with every fd at -1. */
static void splice_release(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_splice_conn *s = c->ctx;

	if (!s)
		return;
	for (int i = 0; i < 2; i++) {
		if (s->dir[i].pipe_rd >= 0)
			close(s->dir[i].pipe_rd);
		if (s->dir[i].pipe_wr >= 0)
			close(s->dir[i].pipe_wr);
		mmp_pipe_budget_give(mmp_splice_pipe_budget(), s->dir[i].budget_pages);
		free(s->dir[i].copy_buf);
	}
	free(s);
	c->ctx = NULL;
}

static bool is_reset(int err)
{
	return err == ECONNRESET || err == EPIPE || err == ETIMEDOUT || err == EHOSTUNREACH ||
	       err == ENETUNREACH || err == ECONNABORTED;
}

/* Forward the FIN only once every byte of this direction is in dst's send queue. */
static enum mmp_pump_result forward_fin(struct mmp_splice_dir *d, int dst, bool last)
{
	if (!d->src_eof || d->in_pipe > 0 || d->dst_shut)
		return PUMP_OK;
	/*
	 * The other direction is done too: the connection closes right after
	 * this, and close() sends dst's FIN itself (its receive queue is empty,
	 * it sent us a FIN), so the shutdown() would be one syscall for nothing.
	 */
	if (!last && shutdown(dst, SHUT_WR) && errno != ENOTCONN)
		return mmp_splice_failed(d, PUMP_RESET_SRC);
	d->dst_shut = true;
	return PUMP_OK;
}

/*
 * Move what is available in one direction: copied until the flow proves
 * long or dst fills up, then spliced through the pipe. Returns PUMP_OK when
 * the direction is waiting (EAGAIN) or finished, or what went wrong. `last`:
 * the other direction has forwarded its FIN already.
 *
 * With d->relay_only a short splice ends the work without a call that would
 * only return EAGAIN: one into dst means dst is full (d->dst_full, which also
 * stops the reads, see interest()), one from src means src is drained (or the
 * pipe ran out of slots; level-triggered EPOLLIN comes back either way). On a
 * flat-out two-way stream those EAGAIN calls were 39% of all splices, and the
 * proxy used 1.6 times go-mmproxy's CPU for 0.75 of its throughput
 * (docs/DESIGN.md §3d).
 */
static enum mmp_pump_result pump(struct mmp_splice_dir *d, int src, int dst, bool last)
{
	enum mmp_pump_result r;
	bool src_drained = false;
	size_t cap;

	if (!mmp_splice_piped(d)) {
		r = mmp_splice_copy(d, src, dst);
		if (r != PUMP_OK || !mmp_splice_piped(d))
			return r == PUMP_OK ? forward_fin(d, dst, last) : r;
	}
	cap = d->cap;
	d->dst_full = false; /* woken: dst may have room again */
	for (int round = 0; round < PUMP_ROUNDS; round++) {
		ssize_t n;
		size_t want;

		if (d->in_pipe > 0) {
			n = splice(d->pipe_rd, NULL, dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN)
					return mmp_splice_failed(d, PUMP_RESET_SRC);
				if (!d->relay_only)
					return PUMP_OK; /* dst is full: wait for EPOLLOUT */
				n = 0;
			}
			d->in_pipe -= n;
			if (d->relay_only && d->in_pipe > 0) {
				d->dst_full = true; /* wait for EPOLLOUT */
				return PUMP_OK;
			}
		}
		if (d->src_eof || d->in_pipe >= cap || src_drained)
			break;
		want = cap - d->in_pipe;
		n = splice(src, NULL, d->pipe_wr, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EINTR)
				continue;
			return mmp_splice_failed(d, PUMP_RESET_DST);
		}
		if (n == 0)
			d->src_eof = true;
		d->in_pipe += n;
		if (n == 0 && d->in_pipe == 0)
			break;
		/* The next round writes what this one read, then stops. */
		src_drained = d->relay_only && (size_t)n < want;
	}
	return forward_fin(d, dst, last);
}

static uint32_t interest(const struct mmp_splice_dir *rd, const struct mmp_splice_dir *wr)
{
	uint32_t ev = 0;

	/*
	 * A direction whose dst is full (only ever with bytes in its pipe) waits
	 * for dst alone: src's bytes keep in src's queue. Without a pipe, bytes
	 * held in the copy buffer (in_pipe, never set on the first-bytes path)
	 * mean the same.
	 */
	if (!rd->src_eof && (mmp_splice_piped(rd) ? !rd->dst_full && rd->in_pipe < rd->cap : rd->in_pipe == 0))
		ev |= EPOLLIN;
	if (wr->in_pipe > 0)
		ev |= EPOLLOUT;
	if (ev)
		return ev;
	/*
	 * A socket with nothing to wait for still needs polling for errors (a
	 * reset: EPOLLERR and EPOLLHUP are always reported). Once its peer has
	 * sent its FIN, a level-triggered EPOLLRDHUP is ready on every
	 * epoll_wait, and the loop spun on it (a recv or splice returning EAGAIN
	 * from the other socket each time) until the other side's FIN came: 73
	 * syscalls per connection where 26 do (connrate, perf stat;
	 * docs/DESIGN.md §3d). So such a socket is watched edge-triggered. One
	 * whose pipe is full keeps the level-triggered EPOLLRDHUP it had: made
	 * edge-triggered too, t41's kill in HOLD found the maps empty (3 runs of
	 * 4; the cause was not found).
	 */
	return rd->src_eof ? EPOLLET : EPOLLRDHUP;
}

static bool finished(const struct mmp_conn *c)
{
	return dir_of(c, 0)->dst_shut && dir_of(c, 1)->dst_shut;
}

/*
 * A direction of c just fell back to copying (no usable pipe): count the
 * connection once (pipe_fallbacks in stats and metrics) and say why, with the
 * fix, at -v 1.
 */
static void report_fallback(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_splice_conn *s = c->ctx;
	char a[MMP_ADDRSTRLEN], why[256];
	int i = s->dir[0].no_pipe ? 0 : 1;

	if (s->fallback_reported || !(s->dir[0].no_pipe || s->dir[1].no_pipe))
		return;
	s->fallback_reported = true;
	mmp_count(loop->counters, MMP_TCP_CNT_pipe_fallbacks, 1);
	pr_conn("client %s: no splice pipe for the %s direction: %s", mmp_conn_client_name(c, a),
		i == 0 ? "client -> upstream" : "upstream -> client", mmp_splice_pipe_why(&s->dir[i], why, sizeof(why)));
}

/* Pump both directions, then close, reset, or re-arm epoll. */
static void step(struct mmp_loop *loop, struct mmp_conn *c)
{
	char a[MMP_ADDRSTRLEN];
	enum mmp_pump_result r0, r1;

	r0 = pump(dir_of(c, 0), c->client.fd, c->upstream.fd, dir_of(c, 1)->dst_shut);
	r1 = r0 == PUMP_OK ? pump(dir_of(c, 1), c->upstream.fd, c->client.fd, dir_of(c, 0)->dst_shut) : PUMP_OK;
	report_fallback(loop, c);
	if (r0 == PUMP_NO_PIPE || r1 == PUMP_NO_PIPE) {
		int err = r0 == PUMP_NO_PIPE ? dir_of(c, 0)->pipe_err : dir_of(c, 1)->pipe_err;

		/* No pipe (why: pipe_err) and no memory for the buffer that would have replaced it. */
		pr_err("client %s: closed: no splice pipe (%s) and out of memory for a copy buffer",
		       mmp_conn_client_name(c, a), strerror(-err));
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
		return;
	}
	if (r0 != PUMP_OK || r1 != PUMP_OK) {
		/* dir 0 runs client -> upstream, dir 1 upstream -> client. */
		bool reset_client = r0 == PUMP_RESET_SRC || r1 == PUMP_RESET_DST;
		int err = dir_of(c, r0 != PUMP_OK ? 0 : 1)->reset_errno;

		mmp_count(loop->counters, MMP_TCP_CNT_resets_forwarded, 1);
		pr_debug("client %s: %s reset (%s), forwarding the reset",
			 mmp_conn_client_name(c, a), reset_client ? "upstream" : "client", strerror(err));
		mmp_conn_close(loop, c, reset_client ? MMP_CLOSE_RESET_CLIENT : MMP_CLOSE_RESET_UPSTREAM);
		return;
	}
	if (finished(c)) {
		pr_debug("client %s: closed in both directions", mmp_conn_client_name(c, a));
		mmp_conn_close(loop, c, MMP_CLOSE_FIN);
		return;
	}
	if (mmp_loop_watch(loop, &c->client, interest(dir_of(c, 0), dir_of(c, 1))) ||
	    mmp_loop_watch(loop, &c->upstream, interest(dir_of(c, 1), dir_of(c, 0))))
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
}

static int splice_start(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_splice_conn *s = calloc(1, sizeof(*s));

	if (!s) {
		pr_err("out of memory for a spliced connection");
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
		return 0;
	}
	s->dir[0].pipe_rd = s->dir[0].pipe_wr = s->dir[1].pipe_rd = s->dir[1].pipe_wr = -1;
	/*
	 * Only where no tc hand-off follows: the hand-off's drain (HOLD) was
	 * measured with the pump as it was, and t10's PAWS drops, seen with and
	 * without these rules, left an A/B there inconclusive (docs/DESIGN.md §3d).
	 */
	s->dir[0].relay_only = s->dir[1].relay_only = loop->cfg->engine == MMP_ENGINE_SPLICE;
	s->dir[0].lift_limits = s->dir[1].lift_limits = loop->cfg->lift_pipe_limits; /* --engine splice only (options.c) */
	c->ctx = s;
	/* No pipes yet: a direction opens its own once it needs one (splice_copy.c). */
	if (!c->header_consumed) {
		/* The handshake left the PROXY header queued: the first read drops it (docs/DESIGN.md §3d). */
		s->dir[0].skip = c->header_len;
		c->header_consumed = true;
	}
	/* Bytes that came with the header are already queued: move them now. */
	step(loop, c);
	return 0;
}

static void splice_event(struct mmp_loop *loop, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events)
{
	if (events & EPOLLERR) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err && is_reset(err)) {
			bool from_client = ep == &c->client;

			mmp_count(loop->counters, MMP_TCP_CNT_resets_forwarded, 1);
			pr_debug("%s reset (%s), forwarding the reset", from_client ? "client" : "upstream",
				 strerror(err));
			mmp_conn_close(loop, c, from_client ? MMP_CLOSE_RESET_UPSTREAM : MMP_CLOSE_RESET_CLIENT);
			return;
		}
	}
	step(loop, c);
}

static void splice_drain_state(const struct mmp_conn *c, struct mmp_drain *d)
{
	d->buffered[0] = dir_of(c, 0)->in_pipe;
	d->buffered[1] = dir_of(c, 1)->in_pipe;
	d->fin_seen = dir_of(c, 0)->src_eof || dir_of(c, 1)->src_eof;
}

/*
 * A hand-off carries what this engine holds across (docs/DESIGN.md §3b):
 * read up to len bytes of direction i out of its pipe or copy buffer, in
 * order. Returns how many, or a negative errno.
 */
static ssize_t splice_take_buffered(struct mmp_conn *c, int i, void *buf, size_t len)
{
	struct mmp_splice_dir *d = dir_of(c, i);
	size_t want = len < d->in_pipe ? len : d->in_pipe, got = 0;

	if (d->no_pipe) {
		memcpy(buf, d->copy_buf + d->copy_off, want);
		d->copy_off += want;
		d->in_pipe -= want;
		return (ssize_t)want;
	}
	while (got < want) {
		ssize_t n = read(d->pipe_rd, (char *)buf + got, want - got);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
		d->in_pipe -= (size_t)n;
	}
	return (ssize_t)got;
}

const struct mmp_engine_ops mmp_splice_ops = {
	.name = "splice",
	.start = splice_start,
	.event = splice_event,
	.release = splice_release,
	.drain_state = splice_drain_state,
	.take_buffered = splice_take_buffered,
};
