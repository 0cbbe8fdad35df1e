// SPDX-License-Identifier: GPL-2.0
/*
 * The splice engine's first bytes: recv/send through a stack buffer, no pipe.
 * Most connections behind a load balancer are short; a pipe pair costs a flow
 * pipe2, F_SETPIPE_SZ, F_GETPIPE_SZ and two closes per direction, more than
 * copying a few KiB (docs/DESIGN.md §3d).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "engine/splice/splice_dir.h"

int mmp_splice_open_pipe(struct mmp_splice_dir *d, int dst)
{
	int p[2], sz, lowat = MMP_SPLICE_NOTSENT_LOWAT;

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC))
		return -errno;
	/*
	 * Best effort: a long flow's unsent bytes wait in src's queue and the
	 * pipe, not also megabytes of them in dst's send queue. Without it, 50
	 * two-way streams pushed TCP's memory past tcp_mem's pressure mark, which
	 * slows every socket on the host (docs/DESIGN.md §3d).
	 */
	if (d->relay_only)
		setsockopt(dst, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
	/* Best effort: a bigger pipe means fewer syscalls per byte on bulk flows. */
	fcntl(p[1], F_SETPIPE_SZ, MMP_SPLICE_PIPE_BYTES);
	sz = fcntl(p[1], F_GETPIPE_SZ);
	d->cap = sz > 0 ? (size_t)sz : 65536;
	d->pipe_rd = p[0];
	d->pipe_wr = p[1];
	return 0;
}

/* dst took only `sent` of n bytes: the rest waits in the pipe, which has room for all of it. */
static enum mmp_pump_result park_rest(struct mmp_splice_dir *d, int dst, const char *buf, size_t sent, size_t n)
{
	ssize_t w;
	int err = mmp_splice_open_pipe(d, dst);

	if (err) {
		d->pipe_err = err;
		return PUMP_NO_PIPE;
	}
	/* An empty pipe holds at least 64 KiB >= MMP_SPLICE_COPY_BYTES: the write is whole. */
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

	while (!d->src_eof && !mmp_splice_piped(d)) {
		size_t skip, len;
		ssize_t n, sent;

		if (d->copied >= MMP_SPLICE_COPY_LIMIT) {
			/* A long flow: splice from now on. Without a pipe it just keeps copying. */
			if (mmp_splice_open_pipe(d, dst) == 0)
				break;
		}
		n = recv(src, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EAGAIN)
				return PUMP_OK;
			if (errno == EINTR)
				continue;
			return PUMP_RESET_DST;
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
			return PUMP_RESET_SRC;
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
