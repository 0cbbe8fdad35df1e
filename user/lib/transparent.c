// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include "lib/sockaddr.h"
#include "lib/transparent.h"

static int set_transparent(int fd, int family)
{
	int one = 1;

	if (family == AF_INET6)
		return setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof(one));
	return setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof(one));
}

int mmp_spoof_bind(int fd, int family, const struct sockaddr *src, uint32_t mark, const char **what)
{
	int one = 1;

	if (mark) {
		*what = "SO_MARK";
		if (setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)))
			return -errno;
	}
	if (!src)
		return 0;
	*what = family == AF_INET6 ? "IPV6_TRANSPARENT" : "IP_TRANSPARENT";
	if (set_transparent(fd, family))
		return -errno;
	/* The client's ip:port may still be in TIME_WAIT from its previous connection. */
	*what = "SO_REUSEADDR";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		return -errno;
	*what = "bind";
	return bind(fd, src, mmp_sockaddr_len(src)) ? -errno : 0;
}

int mmp_upstream_connect(const struct sockaddr *src, const struct sockaddr *target, uint32_t mark, int maxseg,
			 const char **what)
{
	int one = 1;
	int fd, err;

	*what = "socket";
	fd = socket(target->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;

	*what = "TCP_NODELAY";
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		goto fail;
	/*
	 * No TCP_SYNCNT: --connect-timeout (the loop's connect deadline) already
	 * bounds a dead upstream, one setsockopt fewer per connection.
	 */
	if (maxseg) {
		*what = "TCP_MAXSEG";
		if (setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &maxseg, sizeof(maxseg)))
			goto fail;
	}
	if (mmp_spoof_bind(fd, target->sa_family, src, mark, what))
		goto fail;
	*what = "connect";
	if (connect(fd, target, mmp_sockaddr_len(target)) && errno != EINPROGRESS)
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

const char *mmp_upstream_hint(const char *what, int err)
{
	/* IP_TRANSPARENT does not lift the privileged-port check: a client port below 1024 needs its own capability. */
	if (!strcmp(what, "bind") && err == -EACCES)
		return " (the client's port is below 1024: run as root or grant CAP_NET_BIND_SERVICE)";
	if (err == -EPERM || err == -EACCES)
		return " (run as root or grant CAP_NET_ADMIN)";
	if (!strcmp(what, "bind") && err == -EADDRINUSE)
		return " (the client's ip:port is already in use on this host: is the client on this host, or a"
		       " second proxy binding it?)";
	if (!strcmp(what, "bind") && err == -EADDRNOTAVAIL)
		return " (transparent bind refused: check IP_TRANSPARENT support)";
	if (!strcmp(what, "connect") || !strcmp(what, "SO_ERROR")) {
		if (err == -ECONNREFUSED)
			return " (is the upstream running and listening?)";
		if (err == -ETIMEDOUT || err == -EHOSTUNREACH || err == -ENETUNREACH)
			return " (check the routing: mmproxy-bpf check, mmproxy-bpf setup-routing)";
	}
	return "";
}
