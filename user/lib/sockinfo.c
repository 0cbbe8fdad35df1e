// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "lib/sockinfo.h"

int mmp_sock_cookie(int fd, uint64_t *cookie)
{
	socklen_t len = sizeof(*cookie);

	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &len) ? -errno : 0;
}

int mmp_tcp_info(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len) ? -errno : 0;
}
