// SPDX-License-Identifier: GPL-2.0
/* Starting and stopping a listener worker's thread: see listener_thread.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "core/listener_thread.h"
#include "lib/log.h"

int mmp_listener_thread_start(pthread_t *thread, void *(*loop)(void *), void *arg, const char *kind,
			      int id)
{
	int err = pthread_create(thread, NULL, loop, arg);

	if (err) {
		*thread = 0; /* pthread_create leaves it undefined on failure */
		pr_err("failed to start %s thread %d: %s", kind, id, strerror(err));
	}
	return -err;
}

void mmp_listener_thread_stop(pthread_t *thread, int stop_fd, const char *kind, int id)
{
	uint64_t one = 1;

	if (!*thread)
		return;
	if (write(stop_fd, &one, sizeof(one)) != sizeof(one))
		pr_err("failed to wake %s thread %d: %s", kind, id, strerror(errno));
	pthread_join(*thread, NULL);
	*thread = 0;
}

int mmp_listener_loop_open(int *epfd, int *stop_fd)
{
	*epfd = epoll_create1(EPOLL_CLOEXEC);
	*stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return *epfd < 0 || *stop_fd < 0 ? -errno : 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void mmp_listener_fds_close(int *listen_fd, int *stop_fd, int *epfd)
{
	close_fd(listen_fd);
	close_fd(stop_fd);
	close_fd(epfd);
}
