// SPDX-License-Identifier: GPL-2.0
/* PROXY v1/v2 and SPP header builders: see proxyhdr.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "proxyhdr.h"

static const uint8_t v2_sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
				    0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };

static const char *const kind_names[] = {
	[HDR_NONE] = "none", [HDR_V1] = "v1", [HDR_V2] = "v2",
	[HDR_V2_FIRST] = "v2-first", [HDR_SPP] = "spp",
};

int hdr_kind_parse(const char *s)
{
	unsigned int i;

	for (i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (!strcmp(s, kind_names[i]))
			return (int)i;
	return -1;
}

const char *hdr_kind_name(int kind)
{
	if (kind < 0 || kind >= (int)(sizeof(kind_names) / sizeof(kind_names[0])))
		return "?";
	return kind_names[kind];
}

/* Copies src and dst, mapping both to IPv6 when their families differ. */
static void same_family(const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
			struct sockaddr_storage *s, struct sockaddr_storage *d)
{
	if (src->ss_family == dst->ss_family) {
		memcpy(s, src, sizeof(*s));
		memcpy(d, dst, sizeof(*d));
		return;
	}
	addr_to_v6(src, s);
	addr_to_v6(dst, d);
}

size_t proxyhdr_v1(uint8_t *buf, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst)
{
	char sip[INET6_ADDRSTRLEN], dip[INET6_ADDRSTRLEN];
	struct sockaddr_storage s, d;
	int n;

	same_family(src, dst, &s, &d);
	n = snprintf((char *)buf, PROXYHDR_MAX, "PROXY %s %s %s %u %u\r\n",
		     s.ss_family == AF_INET6 ? "TCP6" : "TCP4",
		     addr_ip_str(&s, sip, sizeof(sip)), addr_ip_str(&d, dip, sizeof(dip)),
		     addr_port(&s), addr_port(&d));
	return n > 0 ? (size_t)n : 0;
}

/* Writes the family-specific address block; returns its length. */
static size_t put_addrs(uint8_t *p, const struct sockaddr_storage *s,
			const struct sockaddr_storage *d)
{
	uint16_t sp = htons(addr_port(s)), dp = htons(addr_port(d));
	size_t alen;

	if (s->ss_family == AF_INET6) {
		alen = 16;
		memcpy(p, &((const struct sockaddr_in6 *)s)->sin6_addr, alen);
		memcpy(p + alen, &((const struct sockaddr_in6 *)d)->sin6_addr, alen);
	} else {
		alen = 4;
		memcpy(p, &((const struct sockaddr_in *)s)->sin_addr, alen);
		memcpy(p + alen, &((const struct sockaddr_in *)d)->sin_addr, alen);
	}
	memcpy(p + 2 * alen, &sp, 2);
	memcpy(p + 2 * alen + 2, &dp, 2);
	return 2 * alen + 4;
}

size_t proxyhdr_v2(uint8_t *buf, const struct sockaddr_storage *src,
		   const struct sockaddr_storage *dst, bool dgram)
{
	struct sockaddr_storage s, d;
	uint16_t len;
	size_t n;

	same_family(src, dst, &s, &d);
	memcpy(buf, v2_sig, sizeof(v2_sig));
	buf[12] = 0x21; /* version 2, PROXY */
	/* family (INET 1, INET6 2) in the high nibble, STREAM 1 / DGRAM 2 low */
	buf[13] = (uint8_t)(((s.ss_family == AF_INET6) ? 0x20 : 0x10) | (dgram ? 0x2 : 0x1));
	n = put_addrs(buf + 16, &s, &d);
	len = htons((uint16_t)n);
	memcpy(buf + 14, &len, 2);
	return 16 + n;
}

size_t proxyhdr_spp(uint8_t *buf, const struct sockaddr_storage *src,
		    const struct sockaddr_storage *dst)
{
	struct sockaddr_storage s, d;
	uint16_t v;

	addr_to_v6(src, &s);
	addr_to_v6(dst, &d);
	v = htons(SPP_MAGIC);
	memcpy(buf, &v, 2);
	memcpy(buf + 2, &((struct sockaddr_in6 *)&s)->sin6_addr, 16);
	memcpy(buf + 18, &((struct sockaddr_in6 *)&d)->sin6_addr, 16);
	v = htons(addr_port(&s));
	memcpy(buf + 34, &v, 2);
	v = htons(addr_port(&d));
	memcpy(buf + 36, &v, 2);
	return SPP_LEN;
}

size_t spp_header_len(const uint8_t *buf, size_t len)
{
	if (len >= SPP_LEN && buf[0] == (SPP_MAGIC >> 8) && buf[1] == (SPP_MAGIC & 0xff))
		return SPP_LEN;
	return 0;
}
