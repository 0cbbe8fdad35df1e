/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-upstream: the upstream server of the integration tests.
 *
 *   mmpt-upstream -l ADDR:PORT [-l ADDR:PORT ...] [-m echo|xfer]
 *                 [--send SIZE] [--after-eof] [--seed N]
 *                 [--banner STRING] [--rst-word WORD]
 *                 [--pause-after SIZE --pause-ms MS] [--verify-seed N]
 *
 * For every accepted connection it prints "peer ADDR PORT", the result of
 * getpeername(): that is what the tests check, since mmproxy must connect
 * FROM the client's original address.
 *
 *   echo  (default) echoes everything; on the peer's EOF, flushes and closes.
 *         Never drops data when a write would block: reading pauses instead.
 *   xfer  sends SIZE bytes of the deterministic stream (seed 2 by default),
 *         at once or, with --after-eof, only after the peer's EOF; then
 *         shutdown(SHUT_WR); reads and hashes everything until EOF; prints
 *         "done ADDR PORT sent N SHA recv N SHA" and closes.
 *
 *   --banner STRING   (echo) written as soon as a connection is accepted,
 *                     before anything is read (an SMTP-style greeting such as
 *                     "220 ready\r\n"; C escapes as in mmpt-client).
 *   --rst-word WORD   (echo) a read that starts with WORD is not echoed: the
 *                     connection is closed with a reset (SO_LINGER {1, 0}).
 *   --pause-after SIZE --pause-ms MS
 *                     (xfer) once SIZE bytes were received on a connection,
 *                     stop reading it for MS ms, once; prints
 *                     "pause ADDR PORT recvd N" and "resume ADDR PORT recvd N".
 *   --verify-seed N   (xfer) compare what arrives with the client's stream
 *                     (mmpt-client's seed, 1 by default): the done line ends
 *                     with " verify ok" or " first_diff OFFSET from OFFSET"
 *                     (where the bytes found there come from in the stream:
 *                     before OFFSET means duplicated, after means lost).
 *
 * Prints "listening ADDR PORT" per socket once it listens. Output is line
 * buffered. Single-threaded epoll, so thousands of connections are fine.
 * Runs until killed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "mmpt_common.h"

#define MAX_LISTEN 8
#define MAX_BANNER 4096
#define ECHO_BUF (16 * 1024)

enum mode { MODE_ECHO, MODE_XFER };

struct conn {
	int fd;
	bool listener;
	struct sockaddr_storage peer;
	/* echo */
	uint8_t *buf;
	size_t off, len;
	bool eof;
	/* xfer */
	struct xfer *x;
	/* --pause-after: 0 not yet, 1 paused (in the paused list), 2 done */
	int pause_state;
	uint64_t resume_ms;
	struct conn *pnext;
};

static enum mode g_mode = MODE_ECHO;
static uint64_t g_send;
static bool g_after_eof;
static uint64_t g_seed = 2;
static int g_ep;
static uint8_t g_banner[MAX_BANNER];
static size_t g_banner_len;
static uint8_t g_rst_word[64];
static size_t g_rst_word_len;
static uint64_t g_pause_after, g_pause_ms;
static bool g_pause;
static bool g_verify;
static uint64_t g_verify_seed;
static struct conn *g_paused; /* connections not being read (--pause-after) */

static void usage(void)
{
	fprintf(stderr, "usage: mmpt-upstream -l ADDR:PORT [-l ...] [-m echo|xfer] [--send SIZE] "
			"[--after-eof] [--seed N] [--banner STRING] [--rst-word WORD] "
			"[--pause-after SIZE --pause-ms MS] [--verify-seed N]\n");
	exit(2);
}

static void conn_close(struct conn *c)
{
	if (c->pause_state == 1) {
		for (struct conn **pp = &g_paused; *pp; pp = &(*pp)->pnext) {
			if (*pp == c) {
				*pp = c->pnext;
				break;
			}
		}
	}
	epoll_ctl(g_ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->buf);
	free(c->x);
	free(c);
}

static void conn_rearm(struct conn *c, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = c };
	if (epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &e) < 0)
		die("epoll_ctl: %s", strerror(errno));
}

/* Echo: read only when the buffer is empty, so a slow reader throttles us. */
static void echo_event(struct conn *c, uint32_t ev)
{
	for (;;) {
		if (c->off < c->len) {
			ssize_t w = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
			if (w < 0 && errno == EAGAIN) {
				conn_rearm(c, EPOLLOUT);
				return;
			}
			if (w < 0) {
				conn_close(c);
				return;
			}
			c->off += (size_t)w;
			continue;
		}
		if (c->eof) {
			conn_close(c);
			return;
		}
		ssize_t r = recv(c->fd, c->buf, ECHO_BUF, 0);
		if (r < 0 && errno == EAGAIN) {
			conn_rearm(c, EPOLLIN | EPOLLRDHUP);
			return;
		}
		if (r < 0) { /* reset: nothing left to do */
			conn_close(c);
			return;
		}
		if (r == 0)
			c->eof = true;
		if (g_rst_word_len && (size_t)r >= g_rst_word_len &&
		    !memcmp(c->buf, g_rst_word, g_rst_word_len)) {
			struct linger lg = { .l_onoff = 1, .l_linger = 0 };
			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			conn_close(c);
			return;
		}
		c->off = 0;
		c->len = (size_t)r;
	}
	(void)ev;
}

/* Events the xfer side waits for; no EPOLLIN while paused. */
static uint32_t xfer_events(struct conn *c)
{
	struct xfer *x = c->x;
	return (x->peer_eof || c->pause_state == 1 ? 0 : EPOLLIN) | (xfer_wants_write(x) ? EPOLLOUT : 0);
}

/* --pause-after: stop reading once the threshold is reached (once). */
static void maybe_pause(struct conn *c)
{
	struct xfer *x = c->x;
	if (!g_pause || c->pause_state != 0 || x->recvd < g_pause_after || x->peer_eof)
		return;
	char a[128];
	c->pause_state = 1;
	x->read_limit = 0;
	c->resume_ms = now_ms() + g_pause_ms;
	c->pnext = g_paused;
	g_paused = c;
	printf("pause %s recvd %" PRIu64 "\n", fmt_addr(&c->peer, a, sizeof(a)), x->recvd);
}

static void xfer_event(struct conn *c, uint32_t ev)
{
	struct xfer *x = c->x;
	maybe_pause(c);
	if (c->pause_state != 1 && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		xfer_readable(x);
	maybe_pause(c);
	xfer_writable(x);
	if (ev & EPOLLERR && !x->failed) {
		int err = 0;
		socklen_t l = sizeof(err);
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
		if (err) {
			x->failed = true;
			x->err = err;
		}
	}
	if (xfer_done(x)) {
		char a[128], rep[300];
		xfer_report(x, rep, sizeof(rep));
		printf("done %s %s\n", fmt_addr(&c->peer, a, sizeof(a)), rep);
		conn_close(c);
		return;
	}
	conn_rearm(c, xfer_events(c));
}

/* Resume the paused connections whose time has come; returns the epoll timeout. */
static int resume_due(void)
{
	uint64_t now = now_ms(), next = UINT64_MAX;
	struct conn **pp = &g_paused;
	while (*pp) {
		struct conn *c = *pp;
		if (c->resume_ms > now) {
			if (c->resume_ms < next)
				next = c->resume_ms;
			pp = &c->pnext;
			continue;
		}
		*pp = c->pnext;
		c->pause_state = 2;
		char a[128];
		printf("resume %s recvd %" PRIu64 "\n", fmt_addr(&c->peer, a, sizeof(a)), c->x->recvd);
		/* Read what piled up; level-triggered epoll reports the rest. */
		xfer_event(c, EPOLLIN);
	}
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

static void accept_all(struct conn *l)
{
	for (;;) {
		struct sockaddr_storage peer;
		socklen_t pl = sizeof(peer);
		int fd = accept4(l->fd, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR)
				fprintf(stderr, "mmpt-upstream: accept: %s\n", strerror(errno));
			return;
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (!c)
			die("out of memory");
		c->fd = fd;
		/* getpeername() explicitly: it is the value under test. */
		pl = sizeof(c->peer);
		getpeername(fd, (struct sockaddr *)&c->peer, &pl);
		char a[128];
		printf("peer %s\n", fmt_addr(&c->peer, a, sizeof(a)));
		struct epoll_event e = { .data.ptr = c };
		if (g_mode == MODE_ECHO) {
			c->buf = malloc(ECHO_BUF);
			if (!c->buf)
				die("out of memory");
			e.events = EPOLLIN | EPOLLRDHUP;
			if (g_banner_len) {
				/* The greeting goes out first, as pending echo output. */
				memcpy(c->buf, g_banner, g_banner_len);
				c->off = 0;
				c->len = g_banner_len;
			}
		} else {
			c->x = malloc(sizeof(*c->x));
			if (!c->x)
				die("out of memory");
			xfer_init(c->x, fd, g_send, g_after_eof, g_seed);
			if (g_pause)
				c->x->read_limit = g_pause_after; /* pause exactly there */
			if (g_verify)
				xfer_verify(c->x, g_verify_seed);
			e.events = EPOLLIN | (xfer_wants_write(c->x) ? EPOLLOUT : 0);
		}
		if (epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &e) < 0)
			die("epoll_ctl: %s", strerror(errno));
		if (g_mode == MODE_ECHO && g_banner_len)
			echo_event(c, 0); /* send the banner now, before any read */
	}
}

int main(int argc, char **argv)
{
	const char *laddrs[MAX_LISTEN];
	int nl = 0;

	tool_start("mmpt-upstream");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-l") && v && nl < MAX_LISTEN) {
			laddrs[nl++] = v;
			i++;
		} else if (!strcmp(a, "-m") && v) {
			if (!strcmp(v, "echo"))
				g_mode = MODE_ECHO;
			else if (!strcmp(v, "xfer"))
				g_mode = MODE_XFER;
			else
				usage();
			i++;
		} else if (!strcmp(a, "--send") && v) {
			g_send = parse_size(v);
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			g_seed = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--after-eof")) {
			g_after_eof = true;
		} else if (!strcmp(a, "--banner") && v) {
			g_banner_len = unescape(v, g_banner, sizeof(g_banner));
			i++;
		} else if (!strcmp(a, "--rst-word") && v) {
			g_rst_word_len = unescape(v, g_rst_word, sizeof(g_rst_word));
			i++;
		} else if (!strcmp(a, "--pause-after") && v) {
			g_pause_after = parse_size(v);
			g_pause = true;
			i++;
		} else if (!strcmp(a, "--verify-seed") && v) {
			g_verify = true;
			g_verify_seed = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--pause-ms") && v) {
			g_pause_ms = strtoull(v, NULL, 0);
			i++;
		} else {
			usage();
		}
	}
	if (!nl || g_banner_len > ECHO_BUF)
		usage();

	g_ep = epoll_create1(EPOLL_CLOEXEC);
	if (g_ep < 0)
		die("epoll_create1: %s", strerror(errno));
	for (int i = 0; i < nl; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = parse_addr(laddrs[i], &ss, true);
		int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int one = 1;
		if (fd < 0)
			die("socket: %s", strerror(errno));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
			die("bind %s: %s", laddrs[i], strerror(errno));
		if (listen(fd, 4096) < 0)
			die("listen: %s", strerror(errno));
		struct conn *l = calloc(1, sizeof(*l));
		l->fd = fd;
		l->listener = true;
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = l };
		if (epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &e) < 0)
			die("epoll_ctl: %s", strerror(errno));
		char a[128];
		printf("listening %s\n", fmt_addr(&ss, a, sizeof(a)));
	}

	struct epoll_event evs[256];
	for (;;) {
		int n = epoll_wait(g_ep, evs, 256, resume_due());
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait: %s", strerror(errno));
		}
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c->listener)
				accept_all(c);
			else if (g_mode == MODE_ECHO)
				echo_event(c, evs[i].events);
			else
				xfer_event(c, evs[i].events);
		}
	}
}
