/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The load-balancer side shared by mmpt-flood and mmpt-bidir: many
 * non-blocking connections to the proxy, connection i claiming in a
 * hand-made PROXY v2 header to come from NET(1 + i % H):(PORT + i / H).
 *
 * #included after mmpt_common.c (whose die, parse_addr and pp_build_v2 it
 * uses), static like it, so each tool stays one translation unit.
 */
#include <sys/resource.h>

/* The options both tools take, with the same defaults but --timeout's. */
struct claim_opts {
	const char *target; /* -c ADDR:PORT: the proxy */
	const char *dst; /* --dst ADDR:PORT: the header's destination */
	const char *net; /* --net: claimed addresses are NET1 .. NET<hosts> */
	int n; /* -n: connections in all */
	int hosts; /* --hosts H */
	int port_base; /* --port-base PORT */
	int timeout_s; /* --timeout SEC */
};

#define CLAIM_OPTS_INIT(timeout)                                                              \
	{ .net = "203.0.113.", .hosts = 200, .port_base = 30000, .timeout_s = (timeout) }

/* Takes option a (with its value v) if it is one of struct claim_opts'. */
static bool claim_opt(struct claim_opts *o, const char *a, const char *v)
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
static void claim_check_ports(const struct claim_opts *o)
{
	if (o->port_base + (o->n - 1) / o->hosts > 65535)
		die("port range overflows");
}

/* The client address connection i claims (NET may be IPv4 or IPv6). */
static void claimed_src(const struct claim_opts *o, int i, struct sockaddr_storage *ss)
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
static void need_nofile(rlim_t fds, int conns)
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
static int connect_start(const struct sockaddr_storage *ta, socklen_t tl, int *err)
{
	int fd = socket(ta->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket: %s", strerror(errno));
	*err = connect(fd, (const struct sockaddr *)ta, tl) < 0 && errno != EINPROGRESS ? errno : 0;
	return fd;
}

/* How the connect of a socket that polled writable ended: 0 or an errno. */
static int connect_result(int fd)
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
static bool send_claim(int fd, const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
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
