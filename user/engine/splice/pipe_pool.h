/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A listener loop's spare splice pipes. A connection needs two pipes, and
 * making them (pipe2, F_SETPIPE_SZ, F_GETPIPE_SZ, then two closes each) was
 * a quarter of the syscalls a short connection costs (docs/benchmarks.md,
 * "Field loads": 10 of 41); an emptied pipe is kept for the next one instead.
 */
#ifndef MMP_PIPE_POOL_H
#define MMP_PIPE_POOL_H

#include <stdbool.h>
#include <stddef.h>

/* Spare pipes kept per loop: 2 per connection, for bursts of short connections. */
#define MMP_PIPE_POOL_MAX 128

struct mmp_pipe {
	int rd, wr; /* -1 while not open */
	size_t cap; /* the pipe's size in bytes */
};

struct mmp_pipe_pool {
	int n;
	struct mmp_pipe spare[MMP_PIPE_POOL_MAX];
};

/* A pipe from pool (NULL: none) or a new one. Returns 0 or a negative errno; *p untouched on failure. */
int mmp_pipe_get(struct mmp_pipe_pool *pool, struct mmp_pipe *p);
/*
 * Give p back: kept in pool when it holds no byte (empty) and there is room,
 * closed otherwise. p is set to -1 either way.
 */
void mmp_pipe_put(struct mmp_pipe_pool *pool, struct mmp_pipe *p, bool empty);
/* Close every spare pipe. */
void mmp_pipe_pool_drain(struct mmp_pipe_pool *pool);

#endif
