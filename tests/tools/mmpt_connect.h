/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The load-balancer side shared by mmpt-flood and mmpt-bidir: many
 * non-blocking connections to the proxy, connection i claiming in a
 * hand-made PROXY v2 header to come from NET(1 + i % H):(PORT + i / H).
 *
 * Implemented in mmpt_connect.c (on top of mmpt_common.c's die, parse_addr
 * and pp_build_v2), compiled once and linked into both tools.
 */
#ifndef MMPT_CONNECT_H
#define MMPT_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>

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
bool claim_opt(struct claim_opts *o, const char *a, const char *v);

/* Call once n and hosts are known to be positive. */
void claim_check_ports(const struct claim_opts *o);

/* The client address connection i claims (NET may be IPv4 or IPv6). */
void claimed_src(const struct claim_opts *o, int i, struct sockaddr_storage *ss);

/* Dies unless RLIMIT_NOFILE leaves room for fds descriptors (for conns connections). */
void need_nofile(rlim_t fds, int conns);

/*
 * A non-blocking socket with its connect to ta under way. *err: 0, or
 * connect's errno when it failed at once (the socket is still returned).
 */
int connect_start(const struct sockaddr_storage *ta, socklen_t tl, int *err);

/* How the connect of a socket that polled writable ended: 0 or an errno. */
int connect_result(int fd);

/*
 * Sends the v2 header claiming src -> dst and then len bytes of data, in one
 * write. False, with errno set, unless all of it went out.
 */
bool send_claim(int fd, const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
		const void *data, size_t len);

#endif /* MMPT_CONNECT_H */
