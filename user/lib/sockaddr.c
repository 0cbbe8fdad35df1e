// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mmp_maps.h"
#include "lib/sockaddr.h"

int mmp_parse_port(const char *s, uint16_t *port)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int mmp_parse_hostport(const char *s, struct sockaddr_storage *ss, const char **reason)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *hstart = s;
	size_t hlen;
	uint16_t port;

	memset(ss, 0, sizeof(*ss));
	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':') {
			*reason = "expected [IPv6]:PORT";
			return -EINVAL;
		}
		hstart = s + 1;
		hlen = close - hstart;
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon) {
			*reason = "missing :PORT";
			return -EINVAL;
		}
		hlen = colon - s;
	}
	if (hlen == 0 || hlen >= sizeof(host)) {
		*reason = "missing or overlong address";
		return -EINVAL;
	}
	memcpy(host, hstart, hlen);
	host[hlen] = '\0';
	if (mmp_parse_port(colon + 1, &port)) {
		*reason = "port must be a number from 0 to 65535";
		return -EINVAL;
	}

	if (*s != '[') {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
			*reason = "not an IPv4 address (write IPv6 as [addr]:port)";
			return -EINVAL;
		}
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1) {
			*reason = "not an IPv6 address";
			return -EINVAL;
		}
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
	}
	return 0;
}

const char *mmp_fmt_addr(const struct sockaddr *sa, char *buf)
{
	char ip[INET6_ADDRSTRLEN];

	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *sin = (const void *)sa;

		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(buf, MMP_ADDRSTRLEN, "%s:%u", ip, ntohs(sin->sin_port));
		break;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, MMP_ADDRSTRLEN, "[%s]:%u", ip, ntohs(sin6->sin6_port));
		break;
	}
	default:
		snprintf(buf, MMP_ADDRSTRLEN, "(unspec)");
	}
	return buf;
}

socklen_t mmp_sockaddr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

const char *mmp_fmt_map_addr(const struct mmp_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->family == AF_INET) {
		inet_ntop(AF_INET, a->addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, a->port);
	} else if (a->family == AF_INET6) {
		inet_ntop(AF_INET6, a->addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, a->port);
	} else {
		snprintf(buf, len, "-");
	}
	return buf;
}

bool mmp_is_loopback_addr(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

bool mmp_is_local_addr(const struct sockaddr_storage *ss)
{
	struct sockaddr_storage probe = *ss;
	int fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool local;

	if (fd < 0)
		return false;
	/* Binding port 0 of an address succeeds exactly when the address is ours. */
	if (probe.ss_family == AF_INET)
		((struct sockaddr_in *)&probe)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&probe)->sin6_port = 0;
	local = bind(fd, (struct sockaddr *)&probe, mmp_sockaddr_len((struct sockaddr *)&probe)) == 0;
	close(fd);
	return local;
}

void mmp_unmap_v4(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr))
		return;
	sin.sin_port = sin6->sin6_port;
	memcpy(&sin.sin_addr, &sin6->sin6_addr.s6_addr[12], 4);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &sin, sizeof(sin));
}
