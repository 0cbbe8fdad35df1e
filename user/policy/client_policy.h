/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Client address policy: may the proxy bind to and connect as the client a
 * PROXY v1/v2 or SPP header names? A header is only as trustworthy as its
 * sender, and the proxy binds any address with IP_TRANSPARENT, so addresses
 * that no real client can have are refused (docs/DESIGN.md, "Client
 * address policy"). Pure functions, no I/O; TCP and UDP share them.
 */
#ifndef MMP_CLIENT_POLICY_H
#define MMP_CLIENT_POLICY_H

#include <sys/socket.h>
#include "policy/local_addrs.h"

/* The rule a client address breaks; MMP_CLIENT_OK when it breaks none. */
enum mmp_client_verdict {
	MMP_CLIENT_OK = 0,
	MMP_CLIENT_FAMILY, /* neither IPv4 nor IPv6 */
	MMP_CLIENT_PORT_ZERO, /* bind() would pick a random port */
	MMP_CLIENT_UNSPECIFIED, /* 0.0.0.0, :: */
	MMP_CLIENT_BROADCAST, /* 255.255.255.255 */
	MMP_CLIENT_MULTICAST, /* 224.0.0.0/4, ff00::/8 */
	MMP_CLIENT_LOOPBACK, /* 127.0.0.0/8, ::1, from a load balancer that is not on loopback */
	MMP_CLIENT_UPSTREAM, /* the upstream's own ip:port */
	MMP_CLIENT_HOST_ADDRESS, /* one of this host's addresses, from a load balancer that is not on this host */
	MMP_CLIENT_VERDICT_MAX,
};

/*
 * Judge client (from the header) for a connection or datagram that came
 * from load balancer lb (the accepted socket's peer, the datagram's source)
 * and goes to upstream. IPv4-mapped IPv6 forms of any of the three are
 * judged as the IPv4 address they carry. local is this host's addresses
 * (mmp_local_addrs_current()). lb, upstream and local may be NULL (their
 * rules are then skipped: a NULL lb counts as not on this host).
 */
enum mmp_client_verdict mmp_client_check(const struct sockaddr *client, const struct sockaddr *lb,
					 const struct sockaddr *upstream, const struct mmp_local_addrs *local);

/* A short name of v's rule for counters and tests, e.g. "loopback". */
const char *mmp_client_rule(enum mmp_client_verdict v);

/* One sentence for the log line: why the address is refused (no trailing period). */
const char *mmp_client_why(enum mmp_client_verdict v);

#endif
