// SPDX-License-Identifier: GPL-2.0
/*
 * udpgen echo: the upstream of UDP benchmarks. Every thread has its own
 * SO_REUSEPORT socket per address, receives batches with recvmmsg and
 * returns each datagram to its sender with sendmmsg. Bind 127.0.0.1 or ::1,
 * never the wildcard: an answer to a spoofed client must leave from a
 * loopback source to match the proxy's "from 127.0.0.1/8 iif lo" rule.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "udpgen.h"

#define BATCH 64
#define BUF_LEN 65536
#define SEND_WAIT_MS 10

struct echo_thread {
	pthread_t tid;
	const struct ug_config *cfg;
	int fds[UG_MAX_ADDRS];
	uint8_t *bufs;
};

/* Returns the n datagrams in msgs to their senders, waiting briefly when full. */
static void echo_back(int fd, struct mmsghdr *msgs, unsigned int n)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	unsigned int done = 0;
	int sent;

	while (done < n) {
		sent = sendmmsg(fd, msgs + done, n - done, MSG_DONTWAIT);
		if (sent > 0) {
			done += (unsigned int)sent;
			continue;
		}
		if (sent < 0 && errno != EAGAIN && errno != ENOBUFS && errno != EINTR) {
			done++; /* that datagram cannot be sent (no route): skip it */
			continue;
		}
		if (poll(&pfd, 1, SEND_WAIT_MS) <= 0)
			return;
	}
}

static void echo_drain(struct echo_thread *t, int fd)
{
	struct sockaddr_storage from[BATCH];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int n, i;

	for (;;) {
		for (i = 0; i < BATCH; i++) {
			iov[i].iov_base = t->bufs + (size_t)i * BUF_LEN;
			iov[i].iov_len = BUF_LEN;
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &from[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (i = 0; i < n; i++)
			iov[i].iov_len = msgs[i].msg_len;
		echo_back(fd, msgs, (unsigned int)n);
		if (n < BATCH)
			return;
	}
}

static void *echo_thread_main(void *arg)
{
	struct echo_thread *t = arg;
	struct epoll_event ev, events[UG_MAX_ADDRS];
	unsigned int i;
	int ep, n;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return NULL;
	for (i = 0; i < t->cfg->nlisten; i++) {
		ev.events = EPOLLIN;
		ev.data.fd = t->fds[i];
		epoll_ctl(ep, EPOLL_CTL_ADD, t->fds[i], &ev);
	}
	for (;;) {
		n = epoll_wait(ep, events, UG_MAX_ADDRS, -1);
		for (i = 0; n > 0 && i < (unsigned int)n; i++)
			echo_drain(t, events[i].data.fd);
	}
	return NULL;
}

int ug_echo_run(const struct ug_config *cfg)
{
	struct echo_thread *t;
	unsigned int i, j;
	char name[64];
	int fd;

	t = calloc(cfg->threads, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (i = 0; i < cfg->threads; i++) {
		t[i].cfg = cfg;
		t[i].bufs = malloc((size_t)BATCH * BUF_LEN);
		if (!t[i].bufs)
			return -ENOMEM;
		for (j = 0; j < cfg->nlisten; j++) {
			fd = ug_bound_socket(&cfg->listen[j]);
			if (fd < 0) {
				fprintf(stderr, "udpgen: %s: %s\n",
					addr_str(&cfg->listen[j], name, sizeof(name)), strerror(-fd));
				return fd;
			}
			t[i].fds[j] = fd;
		}
	}
	for (i = 0; i < cfg->threads; i++)
		if (pthread_create(&t[i].tid, NULL, echo_thread_main, &t[i]))
			return -EAGAIN;
	for (i = 0; i < cfg->threads; i++)
		pthread_join(t[i].tid, NULL);
	return 0;
}
