/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One direction of a spliced connection, shared by the engine (splice.c) and
 * its first-bytes path (splice_copy.c). Private to engine/splice/.
 */
#ifndef MMP_SPLICE_DIR_H
#define MMP_SPLICE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes a pipe may hold; F_SETPIPE_SZ raises it from 64 KiB when allowed. */
#define MMP_SPLICE_PIPE_BYTES (256 * 1024)
/* The first-bytes buffer (on the stack): at most what a default 64 KiB pipe takes in one write. */
#define MMP_SPLICE_COPY_BYTES (64 * 1024)
/* TCP_NOTSENT_LOWAT on the destination of a piped direction: 1 MiB beat 256 KiB on stream50 CPU and bulk upload. */
#ifndef MMP_SPLICE_NOTSENT_LOWAT
#define MMP_SPLICE_NOTSENT_LOWAT (1024 * 1024)
#endif
/* A direction that moved this much without a full destination switches to its pipe (docs/DESIGN.md §3d). */
#define MMP_SPLICE_COPY_LIMIT (128 * 1024)

enum mmp_pump_result {
	PUMP_OK,
	PUMP_RESET_SRC, /* dst failed (reset/EPIPE): reset the source side */
	PUMP_RESET_DST, /* src was reset: reset the destination side */
	PUMP_NO_PIPE, /* a pipe was needed and could not be created: close both */
};

/* One direction: bytes from src to dst, copied at first, then through a pipe. */
struct mmp_splice_dir {
	int pipe_rd, pipe_wr; /* -1 while not open (the first-bytes path) */
	int pipe_err; /* the negative errno of a failed pipe2, for the log */
	size_t cap; /* the pipe's size, 0 while not open */
	size_t in_pipe; /* bytes read from src not yet written to dst */
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
};

static inline bool mmp_splice_piped(const struct mmp_splice_dir *d)
{
	return d->pipe_wr >= 0;
}

/*
 * Opens d's pipe (sized MMP_SPLICE_PIPE_BYTES when allowed) and, with
 * d->relay_only, caps the unsent bytes dst's send queue holds
 * (MMP_SPLICE_NOTSENT_LOWAT). Returns 0 or a negative errno.
 */
int mmp_splice_open_pipe(struct mmp_splice_dir *d, int dst);

/*
 * The first-bytes path: recv into a stack buffer, send on. Opens d's pipe and
 * leaves what dst did not take in it when dst is full, or once the direction
 * has moved MMP_SPLICE_COPY_LIMIT bytes; the caller then splices.
 */
enum mmp_pump_result mmp_splice_copy(struct mmp_splice_dir *d, int src, int dst);

#endif
