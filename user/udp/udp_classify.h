/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a datagram from a load balancer is, under --udp-header: a header that
 * starts a flow (or continues it), plain payload for the load balancer's
 * current flow, or something to drop and why. Pure function, no I/O.
 */
#ifndef MMP_UDP_CLASSIFY_H
#define MMP_UDP_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "lib/config.h"
#include "mmp_udp.h"
#include "proto/proxy_proto.h"

enum udp_kind {
	UDP_K_V2, /* PROXY v2 PROXY/DGRAM header: the flow of .client */
	UDP_K_LOCAL, /* PROXY v2 LOCAL (health check): forwarded from our own address */
	UDP_K_SPP, /* Cloudflare SPP header: the flow of .client */
	UDP_K_PAYLOAD, /* no header: belongs to the load balancer ip:port's flow */
	UDP_K_DROP, /* .drop says which counter, .why says why */
};

struct udp_dgram_info {
	enum udp_kind kind;
	enum mmp_udp_counter drop; /* UDP_K_DROP: one of the drop_* counters */
	const char *why; /* UDP_K_DROP: static text for the log line */
	size_t hdr_len; /* bytes before the payload */
	/* V2 and SPP: the client (AF_INET also for IPv4-mapped) and the address it reached. */
	struct sockaddr_storage client;
	struct sockaddr_storage proxy;
	/* V2: the header's TLVs (pointers into the datagram) for --allowed-endpoints */
	struct pp_tlvs tlv;
	/* PAYLOAD: the whole datagram is a prefix of the v2 signature (a truncated header?) */
	bool sig_prefix;
};

/*
 * Classify buf[0..len) under mode. lb_has_v2_flow: the sender's ip:port
 * already has a PROXY v2 flow; in auto mode its datagrams are then never
 * read as SPP (a 2-byte magic is too weak to tell SPP from the payload of a
 * flow that started with PROXY v2).
 */
void udp_classify(enum mmp_udp_header mode, const uint8_t *buf, size_t len, bool lb_has_v2_flow,
		  struct udp_dgram_info *out);

/*
 * 0 when a flow can bind to the client address; -EINVAL (port 0,
 * unspecified, multicast, broadcast) or -EAFNOSUPPORT with *why naming it.
 */
int udp_client_check(const struct sockaddr *sa, const char **why);

#endif
