// SPDX-License-Identifier: GPL-2.0
/*
 * fd hygiene of the splice engine (user/engine/splice/): a pipe2 failure
 * (pipes open lazily, when a full destination must park bytes or a flow
 * proves long) must close only the pipes that were opened, never fd 0 (another
 * connection's socket, once stdin is closed). Regression: after a sockmap
 * fallback, a union in struct mmp_conn left the pipe fds at 0; the engine's
 * context is now its own, born with every fd at -1, and a previous engine's
 * context pointer is never reused.
 * Linked with -Wl,--wrap=pipe2,--wrap=close,--wrap=mmp_conn_close (unit.mk).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "core/loop.h"
#include "engine/splice/splice.h"
#include "lib/config.h"

int __real_pipe2(int fds[2], int flags);
int __real_close(int fd);

static int pipe2_calls, pipe2_fail_at; /* fail the pipe2_fail_at-th call (1-based), 0: never */
static int closed[64], nclosed;
static bool conn_closed;

int __wrap_pipe2(int fds[2], int flags)
{
	if (++pipe2_calls == pipe2_fail_at) {
		errno = EMFILE;
		return -1;
	}
	return __real_pipe2(fds, flags);
}

int __wrap_close(int fd)
{
	if (nclosed < 64)
		closed[nclosed++] = fd;
	/* fds 0-2 are the test runner's: record, never close them. */
	return fd <= 2 ? 0 : __real_close(fd);
}

/* The loop's close, reduced to what it does to the engine's resources. */
void __wrap_mmp_conn_close(struct mmp_loop *loop, struct mmp_conn *c, bool reset_client, bool reset_upstream)
{
	conn_closed = true;
	mmp_splice_ops.release(loop, c);
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
		if (fcntl(fd, F_GETFD) >= 0)
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

/*
 * A connection whose destinations are full, so each direction with bytes to
 * move must park them in a pipe (the first-bytes path opens pipes lazily):
 * `dirs` directions have bytes waiting; the fail_at-th pipe2 fails.
 */
static void run_case(int fail_at, int dirs)
{
	static struct mmp_loop loop;
	/* --engine splice: the relay-only path, whose first pipe also sets TCP_NOTSENT_LOWAT (best effort on AF_UNIX). */
	static const struct mmp_config cfg = { .engine = MMP_ENGINE_SPLICE };
	struct mmp_conn c = { 0 };
	int cl[2], up[2], before;

	loop.cfg = &cfg;

	/* cl[1], up[0]: the proxy's two sockets; cl[0], up[1]: the load balancer and the upstream. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, cl), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, up), 0);
	fill(up[0]);
	fill(cl[1]);
	assert_int_equal(send(cl[0], "request", 7, 0), 7);
	if (dirs == 2)
		assert_int_equal(send(up[1], "response", 8, 0), 8);
	before = fd_count();
	pipe2_calls = 0;
	pipe2_fail_at = fail_at;
	nclosed = 0;
	conn_closed = false;
	c.client.fd = cl[1];
	c.upstream.fd = up[0];
	c.state = CONN_SPLICING;
	assert_int_equal(mmp_splice_ops.start(&loop, &c), 0);
	assert_true(conn_closed);
	for (int fd = 0; fd <= 2; fd++)
		if (was_closed(fd))
			fail_msg("pipe2 failure #%d: fd %d closed, which the splice engine never opened", fail_at, fd);
	assert_int_equal(fd_count(), before); /* the pipe that was opened is closed */
	assert_null(c.ctx); /* and the context freed */
	for (int i = 0; i < 2; i++) {
		__real_close(cl[i]);
		__real_close(up[i]);
	}
}

static void test_first_pipe_fails(void **state)
{
	run_case(1, 1);
}

static void test_second_pipe_fails(void **state)
{
	run_case(2, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_pipe_fails),
		cmocka_unit_test(test_second_pipe_fails),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
