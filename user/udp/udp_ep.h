/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A UDP endpoint in one canonical form, used as a hash key: IPv4 and
 * IPv4-mapped IPv6 compare equal, so the same client reaching us through a
 * PROXY v2 INET header or an SPP header (always IPv6-sized) is one client.
 */
#ifndef MMP_UDP_EP_H
#define MMP_UDP_EP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include "mmp_udp.h"

struct udp_ep {
	uint8_t addr[16]; /* IPv6, or IPv4-mapped ::ffff:a.b.c.d */
	uint16_t port; /* network byte order */
	uint16_t family; /* AF_INET (addr is IPv4-mapped) or AF_INET6; 0: none */
};

/* sa: AF_INET or AF_INET6 (an IPv4-mapped one becomes AF_INET). Anything else: all zero. */
void udp_ep_from_sa(struct udp_ep *ep, const struct sockaddr *sa);
/* Back to a plain sockaddr: sockaddr_in for AF_INET. Returns its length, 0 for none. */
socklen_t udp_ep_to_sa(const struct udp_ep *ep, struct sockaddr_storage *ss);
void udp_ep_to_mmp(const struct udp_ep *ep, struct mmp_addr *a);
/* "1.2.3.4:5" / "[2001:db8::1]:5" into buf (MMP_ADDRSTRLEN); returns buf. */
const char *udp_ep_fmt(const struct udp_ep *ep, char *buf);

static inline bool udp_ep_eq(const struct udp_ep *a, const struct udp_ep *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* A keyed hash (seed from getrandom at start) of the whole endpoint. */
uint64_t udp_ep_hash(const struct udp_ep *ep, uint64_t seed);

#endif
