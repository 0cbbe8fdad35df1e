// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "lib/sockbuf.h"
#include "lib/sockinfo.h"
#include "udp/udp_sock.h"
#include "lib/transparent.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SO_RCVMARK
#define SO_RCVMARK 75
#endif

/* Room for a burst from many load balancers before the relay thread runs. */
#define LISTEN_BUF_BYTES (8 << 20)
/*
 * An upstream answering a burst faster than the relay thread comes round
 * overflowed the 208 KiB default (about 200 small datagrams) in tests. This
 * is a cap, not an allocation: idle flows cost nothing.
 */
#define UPSTREAM_RCVBUF_BYTES (1 << 20)

static bool is_wildcard(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static void grow_buffers(int fd, int bytes)
{
	mmp_sock_set_rcvbuf(fd, bytes);
	mmp_sock_set_sndbuf(fd, bytes);
}

static int listen_socket(const struct sockaddr *addr, bool fast, bool origdst, bool *wildcard)
{
	char a[MMP_ADDRSTRLEN];
	const char *what;
	int one = 1, fd, err;

	*wildcard = is_wildcard(addr);
	what = "socket";
	fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto fail_nofd;
	}
	what = "SO_REUSEADDR/SO_REUSEPORT";
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		goto fail;
	if (*wildcard || fast) {
		what = "IP_PKTINFO";
		/* On a dual-stack [::] socket IPV6_RECVPKTINFO also reports IPv4 (mapped) destinations. */
		if (addr->sa_family == AF_INET ? setsockopt(fd, SOL_IP, IP_PKTINFO, &one, sizeof(one))
					       : setsockopt(fd, SOL_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)))
			goto fail;
	}
	if (fast) {
		what = "SO_RCVMARK";
		if (setsockopt(fd, SOL_SOCKET, SO_RCVMARK, &one, sizeof(one)))
			goto fail;
	} else {
		/* Coalesced datagrams from one load balancer ip:port arrive as one read; optional. */
		setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	}
	if (origdst) {
		/*
		 * Unlike PKTINFO, the IPv6 option does not cover IPv4 datagrams on a
		 * dual-stack [::] socket: those report IP_ORIGDSTADDR, asked for with
		 * the IPv4 option, which such a socket takes too.
		 */
		what = "IP_RECVORIGDSTADDR";
		if (setsockopt(fd, SOL_IP, IP_RECVORIGDSTADDR, &one, sizeof(one)) && addr->sa_family == AF_INET)
			goto fail;
		what = "IPV6_RECVORIGDSTADDR";
		if (addr->sa_family == AF_INET6 && setsockopt(fd, SOL_IPV6, IPV6_RECVORIGDSTADDR, &one, sizeof(one)))
			goto fail;
	}
	grow_buffers(fd, LISTEN_BUF_BYTES);
	what = "bind";
	if (bind(fd, addr, mmp_sockaddr_len(addr)))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
fail_nofd:
	pr_err("failed to listen on udp %s: %s failed: %s%s", mmp_fmt_addr(addr, a), what, strerror(-err),
	       err == -EADDRINUSE ? " (another process holds the port without SO_REUSEPORT: stop it or change -l)"
	       : err == -EADDRNOTAVAIL ? " (the address is not configured on this host: change -l)"
				       : "");
	return err;
}

int udp_listen_socket(const struct sockaddr *addr, bool fast, bool *wildcard)
{
	return listen_socket(addr, fast, false, wildcard);
}

int udp_listen_socket_multiport(const struct sockaddr *addr, bool fast, bool *wildcard)
{
	return listen_socket(addr, fast, true, wildcard);
}

int udp_reply_socket(const struct sockaddr *addr)
{
	char a[MMP_ADDRSTRLEN];
	int one = 1, fd, err;

	fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) || bind(fd, addr, mmp_sockaddr_len(addr))) {
		err = -errno;
		close(fd);
		pr_conn("udp: failed to open the reply socket of %s: %s (its replies leave from the first port of -l)",
			mmp_fmt_addr(addr, a), strerror(-err));
		return err;
	}
	grow_buffers(fd, LISTEN_BUF_BYTES);
	return fd;
}

int udp_upstream_socket(const struct sockaddr *src, const struct sockaddr *target, uint32_t mark, bool rcvmark,
			uint64_t *cookie, const char **what)
{
	int one = 1, fd, err;

	*what = "socket";
	fd = socket(target->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (mmp_spoof_bind(fd, target->sa_family, src, mark, what))
		goto fail;
	/* Replies the upstream sends with UDP_SEGMENT stay one read; optional. */
	setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	mmp_sock_set_rcvbuf(fd, UPSTREAM_RCVBUF_BYTES);
	*what = "SO_RCVMARK";
	if (rcvmark && setsockopt(fd, SOL_SOCKET, SO_RCVMARK, &one, sizeof(one)))
		goto fail;
	*what = "connect";
	if (connect(fd, target, mmp_sockaddr_len(target)))
		goto fail;
	*what = "SO_COOKIE";
	if (mmp_sock_cookie(fd, cookie)) /* errno stays set for the unwind */
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}
