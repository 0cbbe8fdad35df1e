// SPDX-License-Identifier: GPL-2.0
#include <netinet/in.h>
#include "lib/sockaddr.h"
#include "udp/udp_ep.h"

void udp_ep_from_sa(struct udp_ep *ep, const struct sockaddr *sa)
{
	memset(ep, 0, sizeof(*ep));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		ep->addr[10] = ep->addr[11] = 0xFF;
		memcpy(ep->addr + 12, &sin->sin_addr, 4);
		ep->port = sin->sin_port;
		ep->family = AF_INET;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		memcpy(ep->addr, &sin6->sin6_addr, 16);
		ep->port = sin6->sin6_port;
		ep->family = IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) ? AF_INET : AF_INET6;
	}
}

socklen_t udp_ep_to_sa(const struct udp_ep *ep, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ep->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, ep->addr + 12, 4);
		sin->sin_port = ep->port;
		return sizeof(*sin);
	}
	if (ep->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, ep->addr, 16);
		sin6->sin6_port = ep->port;
		return sizeof(*sin6);
	}
	return 0;
}

void udp_ep_to_mmp(const struct udp_ep *ep, struct mmp_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = ep->family;
	a->port = ntohs(ep->port);
	if (ep->family == AF_INET)
		memcpy(a->addr, ep->addr + 12, 4);
	else if (ep->family == AF_INET6)
		memcpy(a->addr, ep->addr, 16);
}

const char *udp_ep_fmt(const struct udp_ep *ep, char *buf)
{
	struct sockaddr_storage ss;

	udp_ep_to_sa(ep, &ss);
	return mmp_fmt_addr((const struct sockaddr *)&ss, buf);
}

/* splitmix64's finalizer: every input bit reaches every output bit. */
static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t udp_ep_hash(const struct udp_ep *ep, uint64_t seed)
{
	uint64_t a, b;

	memcpy(&a, ep->addr, 8);
	memcpy(&b, ep->addr + 8, 8);
	return mix(mix(mix(seed ^ a) ^ b) ^ ((uint64_t)ep->port << 16 | ep->family));
}
