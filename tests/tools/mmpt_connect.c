/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The load-balancer side shared by mmpt-flood and mmpt-bidir: see
 * mmpt_connect.h. Compiled once and linked into both tools.
 */
#include "mmpt_connect.h"
#include "mmpt_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

/* Takes option a (with its value v) if it is one of struct claim_opts'. */
bool claim_opt(struct claim_opts *o, const char *a, const char *v)
{
	if (!strcmp(a, "-c"))
		o->target = v;
	else if (!strcmp(a, "-n"))
		o->n = atoi(v);
	else if (!strcmp(a, "--dst"))
		o->dst = v;
	else if (!strcmp(a, "--net"))
		o->net = v;
	else if (!strcmp(a, "--hosts"))
		o->hosts = atoi(v);
	else if (!strcmp(a, "--port-base"))
		o->port_base = atoi(v);
	else if (!strcmp(a, "--timeout"))
		o->timeout_s = atoi(v);
	else
		return false;
	return true;
}

/* Call once n and hosts are known to be positive. */
void claim_check_ports(const struct claim_opts *o)
{
	if (o->port_base + (o->n - 1) / o->hosts > 65535)
		die("port range overflows");
}

/* The client address connection i claims (NET may be IPv4 or IPv6). */
void claimed_src(const struct claim_opts *o, int i, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + 8];
	snprintf(host, sizeof(host), "%s%d", o->net, 1 + i % o->hosts);
	parse_addr(host, ss, false);
	uint16_t port = htons((uint16_t)(o->port_base + i / o->hosts));
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = port;
}

/* Dies unless RLIMIT_NOFILE leaves room for fds descriptors (for conns connections). */
void need_nofile(rlim_t fds, int conns)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < fds + 64)
		die("ulimit -n %lu is too low for %d connections", (unsigned long)rl.rlim_cur, conns);
}

/*
 * A non-blocking socket with its connect to ta under way. *err: 0, or
 * connect's errno when it failed at once (the socket is still returned).
 */
int connect_start(const struct sockaddr_storage *ta, socklen_t tl, int *err)
{
	int fd = socket(ta->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	*err = connect(fd, (const struct sockaddr *)ta, tl) < 0 && errno != EINPROGRESS ? errno : 0;
	return fd;
}

/* How the connect of a socket that polled writable ended: 0 or an errno. */
int connect_result(int fd)
{
	int err = 0;
	socklen_t el = sizeof(err);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	return err;
}

/*
 * Sends the v2 header claiming src -> dst and then len bytes of data, in one
 * write. False, with errno set, unless all of it went out.
 */
bool send_claim(int fd, const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
		const void *data, size_t len)
{
	uint8_t buf[128];
	size_t hl = pp_build_v2(buf, sizeof(buf), src, dst);
	if (len > sizeof(buf) - hl)
		die("%zu bytes after the header do not fit", len);
	if (len)
		memcpy(buf + hl, data, len);
	return send(fd, buf, hl + len, MSG_NOSIGNAL) == (ssize_t)(hl + len);
}
