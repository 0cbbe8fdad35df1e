/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Cloudflare Simple Proxy Protocol (SPP): a fixed 38-byte header in front of
 * every UDP datagram, and of every reply (developers.cloudflare.com,
 * spectrum/reference/simple-proxy-protocol-header). Pure functions, no I/O.
 *
 *   offset  size  field (all big-endian)
 *        0     2  magic 0x56EC
 *        2    16  client address (IPv6, or IPv4-mapped ::ffff:a.b.c.d)
 *       18    16  proxy address, the same way
 *       34     2  client port
 *       36     2  proxy port
 *       38        payload
 */
#ifndef MMP_UDP_SPP_H
#define MMP_UDP_SPP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SPP_MAGIC 0x56EC
#define SPP_HEADER_LEN 38

struct spp_header {
	/* AF_INET for IPv4-mapped addresses, AF_INET6 otherwise. */
	struct sockaddr_storage client;
	struct sockaddr_storage proxy;
};

/* True when buf starts with the SPP magic (len >= 2). */
bool spp_has_magic(const uint8_t *buf, size_t len);

/*
 * Decode the header at the start of buf[0..len). Returns 0 with *hdr filled,
 * -EBADMSG when the magic is wrong, or -EMSGSIZE when len < SPP_HEADER_LEN.
 */
int spp_decode(const uint8_t *buf, size_t len, struct spp_header *hdr);

/*
 * Encode client and proxy (AF_INET or AF_INET6 each; IPv4 is written
 * IPv4-mapped) into out[SPP_HEADER_LEN]. Returns 0, or -EAFNOSUPPORT.
 */
int spp_encode(const struct sockaddr *client, const struct sockaddr *proxy, uint8_t out[SPP_HEADER_LEN]);

#endif
