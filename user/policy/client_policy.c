// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "policy/client_policy.h"

/* An address in one form: IPv4 (v4 set) or IPv6, IPv4-mapped IPv6 turned into IPv4. */
struct plain_addr {
	int family; /* AF_INET, AF_INET6 or 0: neither */
	uint32_t v4; /* host order */
	struct in6_addr v6;
	uint16_t port; /* host order */
};

static struct plain_addr plain(const struct sockaddr *sa)
{
	struct plain_addr p = { 0 };

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		p.family = AF_INET;
		p.v4 = ntohl(sin->sin_addr.s_addr);
		p.port = ntohs(sin->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		p.port = ntohs(sin6->sin6_port);
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			p.family = AF_INET;
			memcpy(&p.v4, &sin6->sin6_addr.s6_addr[12], 4);
			p.v4 = ntohl(p.v4);
		} else {
			p.family = AF_INET6;
			p.v6 = sin6->sin6_addr;
		}
	}
	return p;
}

static bool is_loopback(const struct plain_addr *p)
{
	if (p->family == AF_INET)
		return (p->v4 >> 24) == 127;
	return p->family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&p->v6);
}

/* p (IPv4 or IPv6) is one of local's addresses. */
static bool is_host_address(const struct plain_addr *p, const struct mmp_local_addrs *local)
{
	struct in6_addr a = { 0 };

	if (p->family == AF_INET) {
		uint32_t v4 = htonl(p->v4);

		a.s6_addr[10] = a.s6_addr[11] = 0xff;
		memcpy(&a.s6_addr[12], &v4, 4);
	} else if (p->family == AF_INET6) {
		a = p->v6;
	} else {
		return false;
	}
	return mmp_local_addrs_has(local, &a);
}

static bool same_endpoint(const struct plain_addr *a, const struct plain_addr *b)
{
	if (a->family != b->family || a->port != b->port)
		return false;
	if (a->family == AF_INET)
		return a->v4 == b->v4;
	return !memcmp(&a->v6, &b->v6, sizeof(a->v6));
}

enum mmp_client_verdict mmp_client_check(const struct sockaddr *client, const struct sockaddr *lb,
					 const struct sockaddr *upstream, const struct mmp_local_addrs *local)
{
	struct plain_addr c = plain(client), l = lb ? plain(lb) : (struct plain_addr){ 0 };

	if (!c.family)
		return MMP_CLIENT_FAMILY;
	if (!c.port)
		return MMP_CLIENT_PORT_ZERO;
	if (c.family == AF_INET) {
		if (c.v4 == INADDR_ANY)
			return MMP_CLIENT_UNSPECIFIED;
		if (c.v4 == INADDR_BROADCAST)
			return MMP_CLIENT_BROADCAST;
		if (IN_MULTICAST(c.v4))
			return MMP_CLIENT_MULTICAST;
	} else {
		if (IN6_IS_ADDR_UNSPECIFIED(&c.v6))
			return MMP_CLIENT_UNSPECIFIED;
		if (IN6_IS_ADDR_MULTICAST(&c.v6))
			return MMP_CLIENT_MULTICAST;
	}
	/*
	 * A load balancer on this host may proxy local clients; one elsewhere
	 * cannot have a client on our loopback: the header is forged.
	 */
	if (is_loopback(&c) && !is_loopback(&l))
		return MMP_CLIENT_LOOPBACK;
	/*
	 * The same for the host's other addresses: a load balancer on this host
	 * may proxy a client that connected from one of them; from elsewhere,
	 * the header would make the upstream see the host itself.
	 */
	if (local && is_host_address(&c, local) && !is_loopback(&l) && !is_host_address(&l, local))
		return MMP_CLIENT_HOST_ADDRESS;
	if (upstream) {
		struct plain_addr u = plain(upstream);

		/* bind() to the upstream's own ip:port would make a connection to itself. */
		if (same_endpoint(&c, &u))
			return MMP_CLIENT_UPSTREAM;
	}
	return MMP_CLIENT_OK;
}

static const char *const rules[MMP_CLIENT_VERDICT_MAX] = {
	[MMP_CLIENT_OK] = "ok",
	[MMP_CLIENT_FAMILY] = "family",
	[MMP_CLIENT_PORT_ZERO] = "port-zero",
	[MMP_CLIENT_UNSPECIFIED] = "unspecified",
	[MMP_CLIENT_BROADCAST] = "broadcast",
	[MMP_CLIENT_MULTICAST] = "multicast",
	[MMP_CLIENT_LOOPBACK] = "loopback",
	[MMP_CLIENT_UPSTREAM] = "upstream-address",
	[MMP_CLIENT_HOST_ADDRESS] = "host-address",
};

static const char *const whys[MMP_CLIENT_VERDICT_MAX] = {
	[MMP_CLIENT_OK] = "client address is usable",
	[MMP_CLIENT_FAMILY] = "client address family is not IPv4 or IPv6",
	[MMP_CLIENT_PORT_ZERO] = "client port is 0",
	[MMP_CLIENT_UNSPECIFIED] = "client address is unspecified (0.0.0.0 or ::)",
	[MMP_CLIENT_BROADCAST] = "client address is the broadcast address",
	[MMP_CLIENT_MULTICAST] = "client address is multicast",
	[MMP_CLIENT_LOOPBACK] = "client address is loopback but the load balancer is not on loopback",
	[MMP_CLIENT_UPSTREAM] = "client address is the upstream's own ip:port",
	[MMP_CLIENT_HOST_ADDRESS] = "client address is one of this host's own but the load balancer is not on this host",
};

const char *mmp_client_rule(enum mmp_client_verdict v)
{
	return (unsigned int)v < MMP_CLIENT_VERDICT_MAX ? rules[v] : "unknown";
}

const char *mmp_client_why(enum mmp_client_verdict v)
{
	return (unsigned int)v < MMP_CLIENT_VERDICT_MAX ? whys[v] : "client address refused";
}
