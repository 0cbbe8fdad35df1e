// SPDX-License-Identifier: GPL-2.0
#include <sys/socket.h>
#include "lib/sockbuf.h"

static void set_buf(int fd, int forced, int capped, int bytes)
{
	if (setsockopt(fd, SOL_SOCKET, forced, &bytes, sizeof(bytes)))
		setsockopt(fd, SOL_SOCKET, capped, &bytes, sizeof(bytes));
}

void mmp_sock_set_rcvbuf(int fd, int bytes)
{
	set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, bytes);
}

void mmp_sock_set_sndbuf(int fd, int bytes)
{
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, bytes);
}
