/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Builders for the headers a load balancer puts in front of a client's
 * bytes: PROXY protocol v1 and v2 (HAProxy doc/proxy-protocol.txt) and
 * Cloudflare's Simple Proxy Protocol (SPP) for UDP.
 */
#ifndef MMPB_PROXYHDR_H
#define MMPB_PROXYHDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define PROXYHDR_MAX 108 /* v1 is at most 107 bytes, v2 52, SPP 38 */

#define SPP_MAGIC 0x56ec
#define SPP_LEN 38

enum hdr_kind {
	HDR_NONE,
	HDR_V1,
	HDR_V2, /* v2 on every datagram for UDP */
	HDR_V2_FIRST, /* UDP only: v2 on the first datagram of a flow */
	HDR_SPP, /* UDP only */
};

/* "none", "v1", "v2", "v2-first", "spp" -> kind; -1 when unknown. */
int hdr_kind_parse(const char *s);
const char *hdr_kind_name(int kind);

/*
 * Each builder writes the header for a client src that connected to dst
 * into buf (at least PROXYHDR_MAX bytes) and returns its length. When the
 * families differ, IPv4 addresses are written as IPv4-mapped IPv6.
 */
size_t proxyhdr_v1(uint8_t *buf, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst);
size_t proxyhdr_v2(uint8_t *buf, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst, bool dgram);
size_t proxyhdr_spp(uint8_t *buf, const struct sockaddr_storage *src,
		    const struct sockaddr_storage *dst);

/* Length of the SPP header at the start of buf, or 0 when there is none. */
size_t spp_header_len(const uint8_t *buf, size_t len);

#endif
