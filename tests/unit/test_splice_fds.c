// SPDX-License-Identifier: GPL-2.0
/*
 * The splice engine (user/engine/splice/) when a pipe cannot be had.
 *
 * fd hygiene: a pipe2 failure (pipes open lazily, when a full destination
 * must park bytes or a flow proves long) must close only the pipes that were
 * opened, never fd 0 (another connection's socket, once stdin is closed).
 * Regression: after a sockmap fallback, a union in struct mmp_conn left the
 * pipe fds at 0; the engine's context is now its own, born with every fd at
 * -1, and a previous engine's context pointer is never reused.
 *
 * No connection lost (issue 24): a pipe that cannot be created (EMFILE, or
 * ENFILE past fs.pipe-user-pages-hard) or resized (past
 * fs.pipe-user-pages-soft pipe2 gives 8 KiB and F_SETPIPE_SZ answers EPERM)
 * makes the direction copy through userspace: the connection stays open,
 * every byte arrives once the destination drains, the fallback is counted
 * (pipe_fallbacks) and logged once with its real cause. The old code closed
 * the connection ("failed to create a splice pipe: Resource temporarily
 * unavailable (raise the open-files limit)").
 *
 * Linked with -Wl,--wrap=pipe2,--wrap=close,--wrap=fcntl,--wrap=mmp_conn_close,
 * --wrap=mmp_loop_watch,--wrap=mmp_log (unit.mk).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "core/counters.h"
#include "core/loop.h"
#include "engine/splice/splice.h"
#include "engine/splice/splice_pipe_budget.h"
#include "lib/config.h"
#include "lib/log.h"

int __real_pipe2(int fds[2], int flags);
int __real_close(int fd);
int __real_fcntl(int fd, int cmd, ...);

/* How pipe2 misbehaves from its pipe2_fail_at-th call (1-based; 0: never). */
enum pipe_fault {
	FAULT_EMFILE, /* fails: the process's open-files limit */
	FAULT_ENFILE, /* fails: what fs.pipe-user-pages-hard gives (fs/pipe.c: create_pipe_files) */
	FAULT_SOFT, /* an 8 KiB pipe that F_SETPIPE_SZ will not grow: fs.pipe-user-pages-soft */
};

static int pipe2_calls, pipe2_fail_at;
static enum pipe_fault fault;
static int small_pipe = -1; /* the write end of the FAULT_SOFT pipe */
static int closed[64], nclosed;
static bool conn_closed;
static char logged[4][512];
static int nlogged;

int __wrap_pipe2(int fds[2], int flags)
{
	int r;

	if (++pipe2_calls < pipe2_fail_at || !pipe2_fail_at)
		return __real_pipe2(fds, flags);
	if (fault != FAULT_SOFT) {
		errno = fault == FAULT_EMFILE ? EMFILE : ENFILE;
		return -1;
	}
	r = __real_pipe2(fds, flags);
	/* Past the soft limit alloc_pipe_info() gives PIPE_MIN_DEF_BUFFERS (2 pages). */
	if (!r) {
		__real_fcntl(fds[1], F_SETPIPE_SZ, 2 * 4096);
		small_pipe = fds[1];
	}
	return r;
}

int __wrap_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	if (fd == small_pipe && cmd == F_SETPIPE_SZ) {
		errno = EPERM; /* pipe_set_size(): too_many_pipe_buffers_soft() */
		return -1;
	}
	return __real_fcntl(fd, cmd, arg);
}

int __wrap_close(int fd)
{
	if (nclosed < 64)
		closed[nclosed++] = fd;
	if (fd == small_pipe)
		small_pipe = -1;
	/* fds 0-2 are the test runner's: record, never close them. */
	return fd <= 2 ? 0 : __real_close(fd);
}

/* The loop's close, reduced to what it does to the engine's resources. */
void __wrap_mmp_conn_close(struct mmp_loop *loop, struct mmp_conn *c, unsigned int how)
{
	conn_closed = true;
	mmp_splice_ops.release(loop, c);
}

/* No epoll here: the test delivers the events itself. */
int __wrap_mmp_loop_watch(struct mmp_loop *loop, struct mmp_endpoint *ep, uint32_t events)
{
	return 0;
}

void __wrap_mmp_log(enum mmp_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (nlogged >= 4)
		return;
	va_start(ap, fmt);
	vsnprintf(logged[nlogged++], sizeof(logged[0]), fmt, ap);
	va_end(ap);
}

static bool was_closed(int fd)
{
	for (int i = 0; i < nclosed; i++)
		if (closed[i] == fd)
			return true;
	return false;
}

static int fd_count(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		if (__real_fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

/* Fills fd's send buffer (and its peer's receive buffer) until a write would block. */
static void fill(int fd)
{
	static char junk[4096];

	while (send(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
		;
}

/* Reads what fd has (the fill's zeros, then the message) into out; returns the bytes that were not zero. */
static size_t drain(int fd, char *out, size_t len)
{
	char buf[65536];
	size_t got = 0;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] && got < len)
				out[got++] = buf[i];
	return got;
}

/*
 * Each direction's message: more than the 8 KiB a pipe past the soft limit
 * holds (the old code's short write into it cut the connection), never a zero
 * byte (drain() skips the fill's zeros).
 */
#define MSG_BYTES 20000
static char request[MSG_BYTES], response[MSG_BYTES];

static void make_messages(void)
{
	for (int i = 0; i < MSG_BYTES; i++) {
		request[i] = 'a' + i % 26;
		response[i] = 'A' + i % 23;
	}
}

struct pipe_case {
	int fail_at; /* the pipe2 call that misbehaves (1-based) */
	enum pipe_fault fault;
	int dirs; /* directions with bytes waiting (1: client -> upstream only) */
	const char *cause; /* what the -v 1 line must name */
};

/*
 * A connection whose destinations are full, so each direction with bytes to
 * move must park them (the first-bytes path opens pipes lazily): the
 * fail_at-th pipe misbehaves as `fault`. The connection must stay open, copy
 * that direction through userspace and deliver every byte once its
 * destination drains; nothing leaks when it is released.
 */
static void run_case(const struct pipe_case *pc)
{
	static struct mmp_loop loop;
	static struct mmp_counters counters;
	/* --engine splice: the relay-only path, whose first pipe also sets TCP_NOTSENT_LOWAT (best effort on AF_UNIX). */
	static const struct mmp_config cfg = { .engine = MMP_ENGINE_SPLICE };
	struct mmp_conn c = { 0 };
	int cl[2], up[2], before;
	static char got[MSG_BYTES + 1];
	size_t n;

	loop.cfg = &cfg;
	loop.counters = &counters;
	memset(&counters, 0, sizeof(counters));
	mmp_verbosity = 1;
	make_messages();

	/* cl[1], up[0]: the proxy's two sockets; cl[0], up[1]: the load balancer and the upstream. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, cl), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, up), 0);
	fill(up[0]);
	fill(cl[1]);
	assert_int_equal(send(cl[0], request, MSG_BYTES, 0), MSG_BYTES);
	if (pc->dirs == 2)
		assert_int_equal(send(up[1], response, MSG_BYTES, 0), MSG_BYTES);
	before = fd_count();
	pipe2_calls = 0;
	pipe2_fail_at = pc->fail_at;
	fault = pc->fault;
	nclosed = 0;
	nlogged = 0;
	conn_closed = false;
	c.client.fd = cl[1];
	c.upstream.fd = up[0];
	c.state = CONN_SPLICING;
	assert_int_equal(mmp_splice_ops.start(&loop, &c), 0);
	if (conn_closed)
		fail_msg("pipe fault #%d: the connection was closed (%s) instead of copying without a pipe",
			 pc->fail_at, nlogged ? logged[0] : "nothing logged");
	for (int fd = 0; fd <= 2; fd++)
		if (was_closed(fd))
			fail_msg("pipe fault #%d: fd %d closed, which the splice engine never opened", pc->fail_at, fd);

	/* Counted once per connection, logged once with the real cause and the fix. */
	assert_int_equal(mmp_counter(&counters, MMP_TCP_CNT_pipe_fallbacks), 1);
	assert_int_equal(nlogged, 1);
	if (getenv("SHOW_LOG"))
		print_message("logged: %s\n", logged[0]);
	if (!strstr(logged[0], pc->cause) || !strstr(logged[0], "copying this flow through userspace"))
		fail_msg("the log line does not name '%s': %s", pc->cause, logged[0]);

	/* The destinations drain: every byte arrives, in order, once. */
	n = drain(up[1], got, sizeof(got));
	mmp_splice_ops.event(&loop, &c, &c.upstream, EPOLLOUT);
	n += drain(up[1], got + n, sizeof(got) - n);
	assert_int_equal(n, MSG_BYTES);
	assert_memory_equal(got, request, MSG_BYTES);
	if (pc->dirs == 2) {
		n = drain(cl[0], got, sizeof(got));
		mmp_splice_ops.event(&loop, &c, &c.client, EPOLLOUT);
		n += drain(cl[0], got + n, sizeof(got) - n);
		assert_int_equal(n, MSG_BYTES);
		assert_memory_equal(got, response, MSG_BYTES);
	}
	/* Still the one fallback: a later step reports nothing new. */
	assert_int_equal(mmp_counter(&counters, MMP_TCP_CNT_pipe_fallbacks), 1);
	assert_false(conn_closed);
	/* The pipe before the faulty one grew, and took from the pipe budget; the faulty one took nothing. */
	assert_int_equal(atomic_load(&mmp_splice_pipe_budget()->held),
			 pc->fail_at > 1 ? mmp_splice_pipe_budget()->pipe_pages : 0);

	mmp_splice_ops.release(&loop, &c);
	assert_int_equal(fd_count(), before); /* every pipe that was opened is closed */
	assert_null(c.ctx); /* and the context (and its copy buffers) freed */
	assert_int_equal(atomic_load(&mmp_splice_pipe_budget()->held), 0); /* and its pages given back */
	for (int i = 0; i < 2; i++) {
		__real_close(cl[i]);
		__real_close(up[i]);
	}
}

static void test_first_pipe_emfile(void **state)
{
	run_case(&(struct pipe_case){ 1, FAULT_EMFILE, 1, "raise the open-files limit" });
}

static void test_second_pipe_emfile(void **state)
{
	run_case(&(struct pipe_case){ 2, FAULT_EMFILE, 2, "raise the open-files limit" });
}

static void test_pipe_user_pages_hard(void **state)
{
	run_case(&(struct pipe_case){ 1, FAULT_ENFILE, 2, "fs.pipe-user-pages-hard" });
}

static void test_pipe_user_pages_soft(void **state)
{
	run_case(&(struct pipe_case){ 1, FAULT_SOFT, 1, "per-user pipe buffer limit reached (fs.pipe-user-pages-soft" });
}

static void test_pipe_user_pages_soft_second(void **state)
{
	run_case(&(struct pipe_case){ 2, FAULT_SOFT, 2, "fs.pipe-user-pages-soft" });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_pipe_emfile),
		cmocka_unit_test(test_second_pipe_emfile),
		cmocka_unit_test(test_pipe_user_pages_hard),
		cmocka_unit_test(test_pipe_user_pages_soft),
		cmocka_unit_test(test_pipe_user_pages_soft_second),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
