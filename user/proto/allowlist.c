// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/allowlist.h"
#include "proto/line_file.h"
#include "lib/log.h"

static void clear_host_bits(uint8_t *addr, unsigned int bytes, unsigned int prefixlen)
{
	for (unsigned int i = 0; i < bytes; i++) {
		unsigned int bit = i * 8;

		if (bit >= prefixlen)
			addr[i] = 0;
		else if (prefixlen - bit < 8)
			addr[i] &= (uint8_t)(0xff << (8 - (prefixlen - bit)));
	}
}

int mmp_cidr_parse_line(char *line, struct mmp_cidr *out, const char **reason)
{
	char *s = mmp_line_trim(line), *slash;
	unsigned int max;

	if (!*s)
		return 0;

	memset(out, 0, sizeof(*out));
	slash = strchr(s, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, s, out->addr) == 1) {
		out->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, s, out->addr) == 1) {
		out->family = AF_INET6;
		max = 128;
	} else {
		*reason = "not an IPv4 or IPv6 address (expected a CIDR such as 192.0.2.0/24 or 2001:db8::/32)";
		return -EINVAL;
	}
	out->prefixlen = max;
	if (slash) {
		char *end;
		long len;

		errno = 0;
		len = strtol(slash + 1, &end, 10);
		if (!isdigit((unsigned char)slash[1]) || *end || errno || len < 0 || len > (long)max) {
			*reason = max == 32 ? "prefix length must be 0 to 32" : "prefix length must be 0 to 128";
			return -EINVAL;
		}
		out->prefixlen = (unsigned int)len;
	}
	clear_host_bits(out->addr, max / 8, out->prefixlen);
	return 1;
}

struct cidr_reader {
	mmp_cidr_cb cb;
	void *ctx;
};

static int parse_cidr_line(char *line, unsigned int lineno, void *ctx, const char **reason)
{
	const struct cidr_reader *r = ctx;
	struct mmp_cidr cidr;
	int ret = mmp_cidr_parse_line(line, &cidr, reason);

	if (ret <= 0)
		return ret;
	ret = r->cb(&cidr, lineno, r->ctx);
	return ret ? ret : 1;
}

int mmp_allowlist_parse(const char *path, mmp_cidr_cb cb, void *ctx, char *why, size_t why_len)
{
	struct cidr_reader r = { cb, ctx };

	return mmp_line_file_read(path, "allowed-subnets", "-a", parse_cidr_line, &r, why, why_len);
}

int mmp_allowlist_read(const char *path, mmp_cidr_cb cb, void *ctx)
{
	char why[512];
	int n = mmp_allowlist_parse(path, cb, ctx, why, sizeof(why));

	if (n < 0 && why[0])
		pr_err("%s", why);
	return n;
}
