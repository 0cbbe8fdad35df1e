// SPDX-License-Identifier: GPL-2.0
/*
 * The splice engine's first bytes: recv/send through a stack buffer, no pipe.
 * Most connections behind a load balancer are short; a pipe pair costs a flow
 * pipe2, F_SETPIPE_SZ, F_GETPIPE_SZ and two closes per direction, more than
 * copying a few KiB (docs/DESIGN.md §3d).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "engine/splice/splice_dir.h"
#include "engine/splice/splice_pipe_budget.h"
#include "lib/privileges.h"

/*
 * --lift-pipe-limits: CAP_SYS_RESOURCE (or CAP_SYS_ADMIN, mmp_pipe_cap) is
 * effective in this thread while the pipe is made and grown, so neither
 * per-user pipe limit applies (fs/pipe.c checks them only then), and the
 * pipe takes nothing from the budget.
 */
static bool lift_limits(const struct mmp_splice_dir *d)
{
	return d->lift_limits && d->relay_only && !mmp_privilege_raise(mmp_pipe_cap());
}

int mmp_splice_open_pipe(struct mmp_splice_dir *d, int dst)
{
	struct mmp_pipe_budget *budget = mmp_splice_pipe_budget();
	bool lifted = lift_limits(d);
	int p[2], sz, resize_err = 0;
	long pages = 0;

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC)) {
		d->pipe_fail = PIPE_FAIL_CREATE;
		d->pipe_err = -errno;
		if (lifted)
			mmp_privilege_lower(mmp_pipe_cap());
		return d->pipe_err;
	}
	/*
	 * Best effort: a bigger pipe means fewer syscalls and larger sends per
	 * byte on bulk flows, as far as the pipe budget allows (its file says
	 * why it is shared). Refused (EPERM) past fs.pipe-user-pages-soft, where
	 * pipe2 also gave only 2 pages. Only with --engine splice: a flow the tc
	 * engine may take keeps the default 64 KiB, since its hand-off must
	 * drain the pipe (docs/DESIGN.md §3b, "Bounded queues").
	 */
	if (lifted)
		resize_err = fcntl(p[1], F_SETPIPE_SZ, MMP_SPLICE_PIPE_BYTES_LARGE) < 0 ? -errno : 0;
	else if (d->relay_only)
		pages = mmp_pipe_budget_take(budget);
	if (pages && fcntl(p[1], F_SETPIPE_SZ, pages * mmp_pipe_page_size()) < 0) {
		resize_err = -errno;
		mmp_pipe_budget_give(budget, pages);
		pages = 0;
	}
	if (lifted)
		mmp_privilege_lower(mmp_pipe_cap());
	sz = fcntl(p[1], F_GETPIPE_SZ);
	/*
	 * Too small to park what one first-bytes read took (park_rest writes it
	 * whole, or the connection would lose it): such a pipe is no use. At
	 * 1,000 streams the 8 KiB pipes cut connections ("Resource temporarily
	 * unavailable" from the short write; docs/DESIGN.md §3d, "Pipes refused").
	 */
	if (sz < MMP_SPLICE_COPY_BYTES) {
		close(p[0]);
		close(p[1]); /* a pipe that grew is large enough: this one took nothing from the budget */
		d->pipe_fail = PIPE_FAIL_RESIZE;
		d->pipe_err = resize_err ? resize_err : -EPERM;
		return d->pipe_err;
	}
	mmp_splice_cap_unsent(d, dst);
	d->cap = (size_t)sz;
	d->budget_pages = pages;
	d->pipe_rd = p[0];
	d->pipe_wr = p[1];
	return 0;
}

/*
 * dst took only `sent` of n bytes: the rest waits in the pipe, which has room
 * for all of it, or, when no usable pipe can be had, in the buffer the
 * direction copies through from now on.
 */
static enum mmp_pump_result park_rest(struct mmp_splice_dir *d, int dst, const char *buf, size_t sent, size_t n)
{
	ssize_t w;

	if (mmp_splice_open_pipe(d, dst)) {
		if (mmp_splice_fall_back(d, dst))
			return PUMP_NO_PIPE; /* pipe_err still says why there is no pipe */
		memcpy(d->copy_buf, buf + sent, n - sent);
		d->in_pipe = n - sent;
		return PUMP_OK; /* dst is full: wait for EPOLLOUT */
	}
	/* An open pipe holds at least MMP_SPLICE_COPY_BYTES (mmp_splice_open_pipe): the write is whole. */
	w = write(d->pipe_wr, buf + sent, n - sent);
	if (w != (ssize_t)(n - sent)) {
		d->pipe_err = w < 0 ? -errno : -EAGAIN;
		return PUMP_NO_PIPE;
	}
	d->in_pipe = n - sent;
	d->dst_full = d->relay_only;
	return PUMP_OK;
}

enum mmp_pump_result mmp_splice_copy(struct mmp_splice_dir *d, int src, int dst)
{
	char buf[MMP_SPLICE_COPY_BYTES];

	if (d->no_pipe)
		return mmp_splice_relay_copy(d, src, dst);
	while (!d->src_eof && !mmp_splice_piped(d)) {
		size_t skip, len;
		ssize_t n, sent;

		if (d->copied >= MMP_SPLICE_COPY_LIMIT) {
			/* A long flow: splice from now on, or, without a usable pipe, copy for good. */
			if (mmp_splice_open_pipe(d, dst) == 0)
				break;
			if (mmp_splice_fall_back(d, dst))
				return PUMP_NO_PIPE;
			return mmp_splice_relay_copy(d, src, dst);
		}
		n = recv(src, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EAGAIN)
				return PUMP_OK;
			if (errno == EINTR)
				continue;
			return mmp_splice_failed(d, PUMP_RESET_DST);
		}
		if (n == 0) {
			d->src_eof = true;
			break;
		}
		d->copied += n;
		/* The PROXY header comes first on the client's socket: dropped, never sent on. */
		skip = d->skip < (size_t)n ? d->skip : (size_t)n;
		d->skip -= skip;
		len = n - skip;
		sent = 0;
		while (len > 0 && (sent = send(dst, buf + skip, len, MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		if (sent < 0 && errno != EAGAIN)
			return mmp_splice_failed(d, PUMP_RESET_SRC);
		if (sent < 0)
			sent = 0;
		if ((size_t)sent < len)
			return park_rest(d, dst, buf + skip, sent, len); /* dst is full: wait for EPOLLOUT */
		/*
		 * A short read drained the socket: epoll is level-triggered here, so
		 * more bytes or the FIN wake us again; asking now would only get EAGAIN.
		 */
		if (n < (ssize_t)sizeof(buf))
			return PUMP_OK;
	}
	return PUMP_OK;
}
