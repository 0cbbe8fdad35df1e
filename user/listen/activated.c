// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "listen/activated.h"
#ifdef MMP_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#define FIRST_FD 3 /* SD_LISTEN_FDS_START */

static int passed = -1; /* how many; -1: not looked at yet */

/* sd_listen_fds(1) where libsystemd is built in, else the same protocol read by hand. */
static int listen_fds(void)
{
#ifdef MMP_HAVE_LIBSYSTEMD
	int n = sd_listen_fds(1);

	return n > 0 ? n : 0;
#else
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int n = fds ? atoi(fds) : 0;

	if (!pid || atoi(pid) != (int)getpid() || n <= 0)
		n = 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	for (int i = 0; i < n; i++)
		fcntl(FIRST_FD + i, F_SETFD, FD_CLOEXEC);
	return n;
#endif
}

bool mmp_activated(void)
{
	if (passed < 0)
		passed = listen_fds();
	return passed > 0;
}

static bool listening_tcp(int fd)
{
	int type = 0, on = 0;
	socklen_t len = sizeof(type), len2 = sizeof(on);

	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) && type == SOCK_STREAM &&
	       !getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len2) && on;
}

static bool same_sockaddr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;

		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;

	return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
}

int mmp_activated_listener(const struct sockaddr_storage *where)
{
	char want[MMP_ADDRSTRLEN], got[MMP_ADDRSTRLEN * 4] = "";
	size_t off = 0;

	for (int i = 0; mmp_activated() && i < passed; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = FIRST_FD + i, dup_fd;
		char a[MMP_ADDRSTRLEN];

		if (!listening_tcp(fd) || getsockname(fd, (struct sockaddr *)&ss, &len))
			continue;
		if (same_sockaddr(&ss, where)) {
			/* A dup per listener thread: each closes its own; the socket stays the manager's. */
			dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, FIRST_FD + passed);
			if (dup_fd < 0)
				return -errno;
			fcntl(dup_fd, F_SETFL, fcntl(dup_fd, F_GETFL) | O_NONBLOCK);
			return dup_fd;
		}
		if (off < sizeof(got) - MMP_ADDRSTRLEN - 2)
			off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s", off ? ", " : "",
						mmp_fmt_addr((const struct sockaddr *)&ss, a));
	}
	pr_err("socket activation: no TCP listening socket passed is bound to %s (passed: %s): make the .socket unit's ListenStream= the address and first port of -l",
	       mmp_fmt_addr((const struct sockaddr *)where, want), *got ? got : "none");
	return -ENOENT;
}
