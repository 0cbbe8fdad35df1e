// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include "proto/udp_spp.h"

#define SPP_CLIENT_ADDR 2
#define SPP_PROXY_ADDR 18
#define SPP_CLIENT_PORT 34
#define SPP_PROXY_PORT 36

bool spp_has_magic(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == (SPP_MAGIC >> 8) && buf[1] == (SPP_MAGIC & 0xFF);
}

/* addr: 16 bytes as on the wire; port: 2 bytes big-endian (kept in network order). */
static void decode_addr(const uint8_t *addr, const uint8_t *port, struct sockaddr_storage *ss)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF };

	memset(ss, 0, sizeof(*ss));
	/* Bytes, not IN6_IS_ADDR_V4MAPPED: the header sits at any offset of a datagram (UBSan: misaligned). */
	if (!memcmp(addr, v4mapped, sizeof(v4mapped))) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, addr + 12, 4);
		memcpy(&sin->sin_port, port, 2);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, addr, 16);
		memcpy(&sin6->sin6_port, port, 2);
	}
}

int spp_decode(const uint8_t *buf, size_t len, struct spp_header *hdr)
{
	if (!spp_has_magic(buf, len))
		return -EBADMSG;
	if (len < SPP_HEADER_LEN)
		return -EMSGSIZE;
	decode_addr(buf + SPP_CLIENT_ADDR, buf + SPP_CLIENT_PORT, &hdr->client);
	decode_addr(buf + SPP_PROXY_ADDR, buf + SPP_PROXY_PORT, &hdr->proxy);
	return 0;
}

static int encode_addr(const struct sockaddr *sa, uint8_t *addr, uint8_t *port)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;

		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xFF;
		memcpy(addr + 12, &sin->sin_addr, 4);
		memcpy(port, &sin->sin_port, 2);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		memcpy(addr, &sin6->sin6_addr, 16);
		memcpy(port, &sin6->sin6_port, 2);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int spp_encode(const struct sockaddr *client, const struct sockaddr *proxy, uint8_t out[SPP_HEADER_LEN])
{
	int err;

	out[0] = SPP_MAGIC >> 8;
	out[1] = SPP_MAGIC & 0xFF;
	err = encode_addr(client, out + SPP_CLIENT_ADDR, out + SPP_CLIENT_PORT);
	if (!err)
		err = encode_addr(proxy, out + SPP_PROXY_ADDR, out + SPP_PROXY_PORT);
	return err;
}
