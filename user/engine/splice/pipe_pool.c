// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "engine/splice/pipe_pool.h"

/* Bytes a pipe may hold; F_SETPIPE_SZ raises it from 64 KiB when allowed. */
#define PIPE_BYTES (256 * 1024)

int mmp_pipe_get(struct mmp_pipe_pool *pool, struct mmp_pipe *p)
{
	int fds[2], sz;

	if (pool && pool->n > 0) {
		*p = pool->spare[--pool->n];
		return 0;
	}
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		return -errno;
	/* Best effort: a bigger pipe means fewer syscalls per byte on bulk flows. */
	fcntl(fds[1], F_SETPIPE_SZ, PIPE_BYTES);
	sz = fcntl(fds[1], F_GETPIPE_SZ);
	p->cap = sz > 0 ? (size_t)sz : 65536;
	p->rd = fds[0];
	p->wr = fds[1];
	return 0;
}

void mmp_pipe_put(struct mmp_pipe_pool *pool, struct mmp_pipe *p, bool empty)
{
	if (p->rd < 0)
		return;
	/* A pipe with bytes in it would hand them to the next connection: never kept. */
	if (pool && empty && pool->n < MMP_PIPE_POOL_MAX) {
		pool->spare[pool->n++] = *p;
	} else {
		close(p->rd);
		close(p->wr);
	}
	p->rd = p->wr = -1;
}

void mmp_pipe_pool_drain(struct mmp_pipe_pool *pool)
{
	while (pool && pool->n > 0) {
		struct mmp_pipe *p = &pool->spare[--pool->n];

		close(p->rd);
		close(p->wr);
	}
}
