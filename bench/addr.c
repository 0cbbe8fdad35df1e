// SPDX-License-Identifier: GPL-2.0
/* Socket address helpers: see addr.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int addr_parse(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon;
	uint16_t port;
	size_t n;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		colon = strstr(s, "]:");
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - s - 1);
		if (n >= sizeof(host))
			return -EINVAL;
		memcpy(host, s + 1, n);
		host[n] = '\0';
		if (parse_port(colon + 2, &port))
			return -EINVAL;
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -EINVAL;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return 0;
	}
	colon = strrchr(s, ':');
	if (!colon)
		return -EINVAL;
	n = (size_t)(colon - s);
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	if (parse_port(colon + 1, &port))
		return -EINVAL;
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -EINVAL;
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	return 0;
}

int cidr_parse(const char *s, struct cidr *c)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	unsigned long prefix;
	unsigned int bits, i;
	char *end;
	size_t n;

	memset(c, 0, sizeof(*c));
	if (!slash)
		return -EINVAL;
	n = (size_t)(slash - s);
	if (n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = '\0';
	prefix = strtoul(slash + 1, &end, 10);
	if (*end || end == slash + 1)
		return -EINVAL;
	if (inet_pton(AF_INET, host, c->base) == 1) {
		c->family = AF_INET;
		bits = 32;
	} else if (inet_pton(AF_INET6, host, c->base) == 1) {
		c->family = AF_INET6;
		bits = 128;
	} else {
		return -EINVAL;
	}
	if (prefix > bits)
		return -EINVAL;
	c->prefix = (unsigned int)prefix;
	for (i = c->prefix; i < bits; i++)
		c->base[i / 8] &= (uint8_t)~(0x80u >> (i % 8));
	if (bits - c->prefix >= 32)
		c->hosts = 1ull << 32;
	else
		c->hosts = 1ull << (bits - c->prefix);
	/* Skip the network address; for IPv4 also the broadcast address. */
	if (c->hosts > 2) {
		c->hosts -= c->family == AF_INET ? 2 : 1;
		c->first = 1;
	}
	return 0;
}

void cidr_client(const struct cidr *c, uint64_t index, struct sockaddr_storage *out)
{
	uint64_t host = (index / CLIENT_PORTS) % c->hosts;
	uint16_t port = (uint16_t)(CLIENT_PORT_FIRST + index % CLIENT_PORTS);
	uint8_t addr[16];
	unsigned int len = c->family == AF_INET ? 4 : 16;
	int i;

	host += c->first;
	memcpy(addr, c->base, len);
	for (i = (int)len - 1; i >= 0 && host; i--) {
		host += addr[i];
		addr[i] = (uint8_t)host;
		host >>= 8;
	}
	memset(out, 0, sizeof(*out));
	if (c->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)out;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, addr, 4);
		sin->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, addr, 16);
		sin6->sin6_port = htons(port);
	}
}

void cidr_host(const struct cidr *c, uint64_t n, struct sockaddr_storage *out)
{
	cidr_client(c, (n % c->hosts) * CLIENT_PORTS, out);
	if (out->ss_family == AF_INET6)
		((struct sockaddr_in6 *)out)->sin6_port = 0;
	else
		((struct sockaddr_in *)out)->sin_port = 0;
}

socklen_t addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

uint16_t addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

const char *addr_ip_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	const void *a;

	if (ss->ss_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
	else
		a = &((const struct sockaddr_in *)ss)->sin_addr;
	if (!inet_ntop(ss->ss_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

const char *addr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	addr_ip_str(ss, ip, sizeof(ip));
	if (ss->ss_family == AF_INET6)
		snprintf(buf, len, "[%s]:%u", ip, addr_port(ss));
	else
		snprintf(buf, len, "%s:%u", ip, addr_port(ss));
	return buf;
}

void addr_to_v6(const struct sockaddr_storage *in, struct sockaddr_storage *out)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)in;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;

	if (in->ss_family == AF_INET6) {
		if (in != out)
			memcpy(out, in, sizeof(struct sockaddr_in6));
		return;
	}
	{
		struct sockaddr_in tmp = *sin;

		memset(out, 0, sizeof(*out));
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = tmp.sin_port;
		sin6->sin6_addr.s6_addr[10] = 0xff;
		sin6->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&sin6->sin6_addr.s6_addr[12], &tmp.sin_addr, 4);
	}
}
