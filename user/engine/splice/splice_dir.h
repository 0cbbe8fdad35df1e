/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One direction of a spliced connection, shared by the engine (splice.c) and
 * its first-bytes path (splice_copy.c). Private to engine/splice/.
 */
#ifndef MMP_SPLICE_DIR_H
#define MMP_SPLICE_DIR_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/* The first-bytes buffer (on the stack): at most what a default 64 KiB pipe takes in one write. */
#define MMP_SPLICE_COPY_BYTES (64 * 1024)
/*
 * TCP_NOTSENT_LOWAT on the destination of a piped direction: 4 MiB, the
 * default tcp_wmem maximum. 1 MiB cost twice the CPU per byte on stream50
 * (0.76 against 0.37 s/GB) and 256 KiB more again (docs/DESIGN.md §3d).
 */
#ifndef MMP_SPLICE_NOTSENT_LOWAT
#define MMP_SPLICE_NOTSENT_LOWAT (4 * 1024 * 1024)
#endif
/* A direction that moved this much without a full destination switches to its pipe (docs/DESIGN.md §3d). */
#define MMP_SPLICE_COPY_LIMIT (128 * 1024)

enum mmp_pump_result {
	PUMP_OK,
	PUMP_RESET_SRC, /* dst failed (reset/EPIPE): reset the source side */
	PUMP_RESET_DST, /* src was reset: reset the destination side */
	PUMP_NO_PIPE, /* neither a pipe nor a copy buffer could be had (out of memory): close both */
};

/* What failed when a direction could not get a usable pipe (splice_fallback.c names the cause). */
enum mmp_pipe_fail {
	PIPE_FAIL_NONE,
	PIPE_FAIL_CREATE, /* pipe2() failed */
	PIPE_FAIL_RESIZE, /* the pipe is smaller than MMP_SPLICE_COPY_BYTES and F_SETPIPE_SZ refused more */
};

/* One direction: bytes from src to dst, copied at first, then through a pipe. */
struct mmp_splice_dir {
	int pipe_rd, pipe_wr; /* -1 while not open (the first-bytes path) */
	int pipe_err; /* the negative errno of the pipe2 or F_SETPIPE_SZ that failed, for the log */
	enum mmp_pipe_fail pipe_fail; /* which of them, PIPE_FAIL_NONE while none did */
	size_t cap; /* the pipe's size, 0 while not open */
	long budget_pages; /* what growing the pipe took from the pipe budget, 0 if it did not grow */
	/*
	 * Bytes read from src not yet written to dst: in the pipe, or in
	 * copy_buf for a direction that copies for good (no_pipe).
	 */
	size_t in_pipe;
	/*
	 * A direction that could not get a usable pipe (the per-user pipe
	 * limits, no fds) copies through copy_buf (MMP_SPLICE_COPY_BYTES, from
	 * the heap) for the rest of its life instead of being cut
	 * (docs/DESIGN.md §3d, "Pipes refused"). NULL otherwise.
	 */
	char *copy_buf;
	size_t copy_off; /* the first byte of copy_buf not yet written to dst */
	bool no_pipe; /* copies through copy_buf for good */
	size_t copied; /* bytes moved by the first-bytes path */
	size_t skip; /* bytes still to drop from src first: the PROXY header the handshake left queued */
	bool src_eof; /* src sent FIN */
	bool dst_shut; /* FIN forwarded to dst after every byte */
	bool dst_full; /* the last splice into dst was short: wait for EPOLLOUT before reading src */
	/*
	 * No tc hand-off follows (--engine splice): short splices end a pass and
	 * dst's unsent bytes are capped (docs/DESIGN.md §3d). Flows the tc engine
	 * may take keep the drain it was measured with.
	 */
	bool relay_only;
	/*
	 * --lift-pipe-limits (with relay_only): the pipe is made and grown to
	 * MMP_SPLICE_PIPE_BYTES_LARGE with mmp_pipe_cap() raised, outside the
	 * budget, which the per-user limits it shares no longer bind.
	 */
	bool lift_limits;
	int reset_errno; /* the errno of the call that made a pump return PUMP_RESET_*, for the -v 2 line */
};

/* A pump's failed call: keep its errno for the log, and say which side to reset. */
static inline enum mmp_pump_result mmp_splice_failed(struct mmp_splice_dir *d, enum mmp_pump_result r)
{
	d->reset_errno = errno;
	return r;
}

static inline bool mmp_splice_piped(const struct mmp_splice_dir *d)
{
	return d->pipe_wr >= 0;
}

/*
 * Opens d's pipe and, with d->relay_only, grows it as far as the pipe budget
 * allows (splice_pipe_budget.h), or to 1 MiB with d->lift_limits, and caps
 * the unsent bytes dst's send queue holds (MMP_SPLICE_NOTSENT_LOWAT). A pipe that holds less than
 * MMP_SPLICE_COPY_BYTES (the per-user soft limit gives 8 KiB ones) is closed
 * again: the first-bytes path parks up to that much in one write. Returns 0,
 * or a negative errno with d->pipe_fail and d->pipe_err set.
 */
int mmp_splice_open_pipe(struct mmp_splice_dir *d, int dst);

/* With d->relay_only, caps the unsent bytes dst's send queue holds (MMP_SPLICE_NOTSENT_LOWAT). */
void mmp_splice_cap_unsent(const struct mmp_splice_dir *d, int dst);

/*
 * d could not get a usable pipe (d->pipe_fail, d->pipe_err): it copies
 * through a heap buffer from now on, dst's unsent bytes capped as a piped
 * direction's. Returns 0, or -ENOMEM (nothing changed).
 */
int mmp_splice_fall_back(struct mmp_splice_dir *d, int dst);

/*
 * A direction without a pipe (d->no_pipe): recv into d->copy_buf, send on;
 * what dst does not take waits there (d->in_pipe) for EPOLLOUT.
 */
enum mmp_pump_result mmp_splice_relay_copy(struct mmp_splice_dir *d, int src, int dst);

/* The log line's cause and fix for d's failed pipe: "per-user pipe buffer limit reached (...)...". */
const char *mmp_splice_pipe_why(const struct mmp_splice_dir *d, char *buf, size_t len);

/*
 * The first-bytes path: recv into a stack buffer, send on. Opens d's pipe and
 * leaves what dst did not take in it when dst is full, or once the direction
 * has moved MMP_SPLICE_COPY_LIMIT bytes; the caller then splices.
 */
enum mmp_pump_result mmp_splice_copy(struct mmp_splice_dir *d, int src, int dst);

#endif
