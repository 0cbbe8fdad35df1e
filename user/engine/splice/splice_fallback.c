// SPDX-License-Identifier: GPL-2.0
/*
 * The splice engine without a pipe: a direction that could not get a usable
 * one copies through a heap buffer for the rest of its life. At 1,000 streams
 * the per-user pipe limits (fs.pipe-user-pages-soft/-hard; they bind the
 * proxy, which drops CAP_SYS_RESOURCE and CAP_SYS_ADMIN after set-up) were
 * reached, and connections were cut (docs/DESIGN.md §3d, "Pipes refused").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "engine/splice/splice_dir.h"
#include "lib/sysctl.h"

/* Rounds of recv/send per event before yielding, as the spliced path's. */
#define RELAY_ROUNDS 8

void mmp_splice_cap_unsent(const struct mmp_splice_dir *d, int dst)
{
	int lowat = MMP_SPLICE_NOTSENT_LOWAT;

	/*
	 * Best effort: a long flow's unsent bytes wait in src's queue and the
	 * pipe (or copy buffer), not also many megabytes of them in dst's send
	 * queue where tcp_wmem was raised. Lower caps woke the loop for smaller
	 * batches: 1 MiB cost twice the CPU per byte (docs/DESIGN.md §3d).
	 */
	if (d->relay_only)
		setsockopt(dst, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof(lowat));
}

int mmp_splice_fall_back(struct mmp_splice_dir *d, int dst)
{
	/* The first-bytes path's bytes are not lost: any it could not send are handed in by the caller. */
	d->copy_buf = malloc(MMP_SPLICE_COPY_BYTES);
	if (!d->copy_buf)
		return -ENOMEM;
	d->no_pipe = true;
	d->copy_off = 0;
	/* A long flow still: its dst's unsent bytes are capped as a piped flow's are. */
	mmp_splice_cap_unsent(d, dst);
	return 0;
}

/* Write what copy_buf holds. PUMP_OK: all of it went, or dst is full (d->in_pipe > 0: wait for EPOLLOUT). */
static enum mmp_pump_result flush(struct mmp_splice_dir *d, int dst)
{
	while (d->in_pipe > 0) {
		ssize_t n = send(dst, d->copy_buf + d->copy_off, d->in_pipe, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? PUMP_OK : mmp_splice_failed(d, PUMP_RESET_SRC);
		}
		d->copy_off += n;
		d->in_pipe -= n;
	}
	return PUMP_OK;
}

enum mmp_pump_result mmp_splice_relay_copy(struct mmp_splice_dir *d, int src, int dst)
{
	for (int round = 0; round < RELAY_ROUNDS; round++) {
		enum mmp_pump_result r = flush(d, dst);
		size_t skip;
		ssize_t n;

		if (r != PUMP_OK || d->in_pipe > 0 || d->src_eof)
			return r;
		n = recv(src, d->copy_buf, MMP_SPLICE_COPY_BYTES, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? PUMP_OK : mmp_splice_failed(d, PUMP_RESET_DST);
		}
		if (n == 0) {
			d->src_eof = true;
			return PUMP_OK;
		}
		d->copied += n;
		/* The PROXY header, if any of it is still queued: dropped, never sent on. */
		skip = d->skip < (size_t)n ? d->skip : (size_t)n;
		d->skip -= skip;
		d->copy_off = skip;
		d->in_pipe = n - skip;
		r = flush(d, dst);
		/* A short read drained src: level-triggered EPOLLIN comes back with more (as splice_copy.c). */
		if (r != PUMP_OK || n < MMP_SPLICE_COPY_BYTES)
			return r;
	}
	return PUMP_OK;
}

/*
 * pipe2() answers ENFILE both when the system's file table is full
 * (fs.file-max) and when the user's pipe pages passed fs.pipe-user-pages-hard
 * (fs/pipe.c: create_pipe_files() turns any failed alloc_pipe_info() into
 * -ENFILE): the file table, read from fs.file-nr, tells them apart.
 */
static bool file_table_full(void)
{
	FILE *f = fopen("/proc/sys/fs/file-nr", "re");
	unsigned long used = 0, free_ = 0, max = 0;
	bool full = true; /* unreadable: name both causes */

	if (!f)
		return full;
	if (fscanf(f, "%lu %lu %lu", &used, &free_, &max) == 3)
		full = used + 64 >= max;
	fclose(f);
	return full;
}

const char *mmp_splice_pipe_why(const struct mmp_splice_dir *d, char *buf, size_t len)
{
	const char *tail = "copying this flow through userspace";
	int err = -d->pipe_err;

	long max_size = mmp_sysctl_read("/proc/sys/fs/pipe-max-size");

	if (d->pipe_fail == PIPE_FAIL_RESIZE && max_size >= 0 && max_size < MMP_SPLICE_COPY_BYTES) {
		/* An unprivileged pipe never grows past pipe-max-size, and is created no bigger. */
		snprintf(buf, len, "fs.pipe-max-size (%ld bytes) is below the %d a pipe needs here: %s; raise the sysctl",
			 max_size, MMP_SPLICE_COPY_BYTES, tail);
	} else if (d->pipe_fail == PIPE_FAIL_RESIZE || (d->pipe_fail == PIPE_FAIL_CREATE && err == EPERM)) {
		/* Past the soft limit a new pipe gets 2 pages and F_SETPIPE_SZ answers EPERM (man 7 pipe). */
		snprintf(buf, len, "per-user pipe buffer limit reached (fs.pipe-user-pages-soft = %ld pages): %s; raise the sysctl",
			 mmp_sysctl_read("/proc/sys/fs/pipe-user-pages-soft"), tail);
	} else if (err == ENFILE && !file_table_full()) {
		snprintf(buf, len, "per-user pipe buffer limit reached (fs.pipe-user-pages-hard = %ld pages): %s; raise the sysctl",
			 mmp_sysctl_read("/proc/sys/fs/pipe-user-pages-hard"), tail);
	} else if (err == ENFILE) {
		snprintf(buf, len, "%s (the system's open-files limit fs.file-max, or fs.pipe-user-pages-hard): %s; raise the one reached",
			 strerror(err), tail);
	} else if (err == EMFILE) {
		snprintf(buf, len, "%s: %s; raise the open-files limit (ulimit -n, LimitNOFILE=)", strerror(err), tail);
	} else {
		snprintf(buf, len, "%s: %s", strerror(err), tail);
	}
	return buf;
}
