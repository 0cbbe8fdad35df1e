// SPDX-License-Identifier: GPL-2.0
/*
 * upstream: the server behind the proxy in benchmarks. Modes:
 *   echo    returns every byte; when a write would block, the rest is kept
 *           and reading pauses until EPOLLOUT, so nothing is ever dropped;
 *   sink    discards what arrives (recv with MSG_TRUNC: no copy);
 *   source  sends the bench pattern from offset 0 as fast as the peer
 *           takes it, and discards what arrives.
 * Each thread has its own SO_REUSEPORT listener per address and its own
 * edge-triggered epoll loop. Runs until SIGINT or SIGTERM.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "addr.h"
#include "pattern.h"

#define MAX_ADDRS 8
#define BUF_LEN (256 * 1024)
#define MAX_EVENTS 256
#define SINK_LEN (1 << 30)

enum up_mode {
	UP_ECHO,
	UP_SINK,
	UP_SOURCE,
};

struct up_config {
	enum up_mode mode;
	struct sockaddr_storage addrs[MAX_ADDRS];
	unsigned int naddrs;
	unsigned int threads;
};

struct up_conn {
	int fd;
	bool listener;
	uint8_t *pend; /* echo: bytes read but not yet written back */
	size_t pend_len, pend_off;
	uint64_t tx_off; /* source: pattern offset */
};

struct up_thread {
	pthread_t tid;
	const struct up_config *cfg;
	int ep;
	uint8_t *buf;
};

static void conn_free(struct up_conn *c)
{
	close(c->fd);
	free(c->pend);
	free(c);
}

/* Writes back the pending echo bytes. Returns 1 when some remain, 0, -1. */
static int echo_flush(struct up_conn *c)
{
	ssize_t n;

	while (c->pend_off < c->pend_len) {
		n = send(c->fd, c->pend + c->pend_off, c->pend_len - c->pend_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				return 1;
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->pend_off += (size_t)n;
	}
	free(c->pend);
	c->pend = NULL;
	c->pend_len = c->pend_off = 0;
	return 0;
}

/* Echo what is queued. Returns 0, or -1 when the connection is done. */
static int do_echo(struct up_thread *t, struct up_conn *c, bool drain)
{
	ssize_t n, w;
	int rc;

	for (;;) {
		rc = echo_flush(c);
		if (rc)
			return rc > 0 ? 0 : -1; /* resume on EPOLLOUT */
		n = recv(c->fd, t->buf, BUF_LEN, 0);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		w = send(c->fd, t->buf, (size_t)n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -1;
			w = 0;
		}
		if (w < n) {
			c->pend_len = (size_t)(n - w);
			c->pend = malloc(c->pend_len);
			if (!c->pend)
				return -1;
			memcpy(c->pend, t->buf + w, c->pend_len);
			continue; /* try once more; EAGAIN parks us until EPOLLOUT */
		}
		if (n < BUF_LEN && !drain)
			return 0;
	}
}

/* Discards what is queued. Returns 0, or -1 when the connection is done. */
static int do_sink(struct up_conn *c)
{
	ssize_t n;

	for (;;) {
		n = recv(c->fd, NULL, SINK_LEN, MSG_TRUNC);
		if (n > 0)
			continue;
		if (n == 0)
			return -1;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN ? 0 : -1;
	}
}

/* Sends the pattern until the socket is full. Returns 0 or -1. */
static int do_source(struct up_conn *c)
{
	ssize_t n;

	for (;;) {
		n = send(c->fd, pattern_at(c->tx_off), PATTERN_PERIOD, MSG_NOSIGNAL);
		if (n > 0) {
			c->tx_off += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 0 : -1;
	}
}

static void accept_all(struct up_thread *t, struct up_conn *l)
{
	struct epoll_event ev;
	struct up_conn *c;
	int fd, one = 1;

	for (;;) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return; /* EAGAIN, or out of descriptors: retried on the next edge */
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		ev.data.ptr = c;
		if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev)) {
			conn_free(c);
			continue;
		}
		/* Data may already be queued: the EPOLLIN edge is reported anyway. */
	}
}

static void conn_event(struct up_thread *t, struct up_conn *c, uint32_t events)
{
	bool drain = events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
	int rc = 0;

	if (c->listener) {
		accept_all(t, c);
		return;
	}
	switch (t->cfg->mode) {
	case UP_ECHO:
		rc = do_echo(t, c, drain);
		break;
	case UP_SINK:
		rc = do_sink(c);
		break;
	case UP_SOURCE:
		if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			rc = do_sink(c);
		if (!rc && (events & EPOLLOUT))
			rc = do_source(c);
		break;
	}
	if (rc < 0)
		conn_free(c); /* close() also removes it from the epoll set */
}

static int listen_on(struct up_thread *t, const struct sockaddr_storage *ss)
{
	struct epoll_event ev;
	struct up_conn *l;
	int fd, one = 1;
	char name[64];

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, addr_len(ss)) || listen(fd, 4096)) {
		fprintf(stderr, "upstream: %s: %s\n", addr_str(ss, name, sizeof(name)),
			strerror(errno));
		close(fd);
		return -1;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return -1;
	}
	l->fd = fd;
	l->listener = true;
	ev.events = EPOLLIN | EPOLLET;
	ev.data.ptr = l;
	return epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void *thread_main(void *arg)
{
	struct up_thread *t = arg;
	struct epoll_event events[MAX_EVENTS];
	int n, i;

	for (;;) {
		n = epoll_wait(t->ep, events, MAX_EVENTS, -1);
		for (i = 0; i < n; i++)
			conn_event(t, events[i].data.ptr, events[i].events);
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: upstream [-m echo|sink|source] [--threads N] -l ADDR:PORT [-l ADDR:PORT ...]\n"
		   "  -m, --mode MODE     echo (default), sink, source\n"
		   "  -l, --listen ADDR   127.0.0.1:9000 or [::1]:9000 (repeatable)\n"
		   "      --threads N     worker threads, each with its own listeners [online CPUs]\n");
}

static void on_signal(int sig)
{
	_exit(sig == SIGTERM || sig == SIGINT ? 0 : 1);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "listen", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct up_config cfg = { .mode = UP_ECHO };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct up_thread *t;
	struct rlimit rl;
	unsigned int i, j;
	int opt;

	cfg.threads = cpus > 0 ? (unsigned int)cpus : 1;
	while ((opt = getopt_long(argc, argv, "m:l:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "echo"))
				cfg.mode = UP_ECHO;
			else if (!strcmp(optarg, "sink"))
				cfg.mode = UP_SINK;
			else if (!strcmp(optarg, "source"))
				cfg.mode = UP_SOURCE;
			else
				goto bad;
			break;
		case 'l':
			if (cfg.naddrs == MAX_ADDRS || addr_parse(optarg, &cfg.addrs[cfg.naddrs]))
				goto bad;
			cfg.naddrs++;
			break;
		case 't':
			cfg.threads = (unsigned int)atoi(optarg);
			if (cfg.threads < 1 || cfg.threads > 256)
				goto bad;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!cfg.naddrs || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	pattern_init();

	t = calloc(cfg.threads, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < cfg.threads; i++) {
		t[i].cfg = &cfg;
		t[i].ep = epoll_create1(EPOLL_CLOEXEC);
		t[i].buf = malloc(BUF_LEN);
		if (t[i].ep < 0 || !t[i].buf)
			return 1;
		for (j = 0; j < cfg.naddrs; j++)
			if (listen_on(&t[i], &cfg.addrs[j]))
				return 1;
	}
	for (i = 0; i < cfg.threads; i++) {
		if (pthread_create(&t[i].tid, NULL, thread_main, &t[i])) {
			fprintf(stderr, "upstream: pthread_create failed\n");
			return 1;
		}
	}
	for (i = 0; i < cfg.threads; i++)
		pthread_join(t[i].tid, NULL);
	return 0;
bad:
	fprintf(stderr, "upstream: bad value '%s'\n", optarg);
	usage(stderr);
	return 2;
}
