// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/allowlist.h"
#include "lib/log.h"

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

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
	char *hash = strchr(line, '#');
	char *s, *slash;
	unsigned int max;

	if (hash)
		*hash = '\0';
	s = trim(line);
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

int mmp_allowlist_parse(const char *path, mmp_cidr_cb cb, void *ctx, char *why, size_t why_len)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned int lineno = 0;
	int count = 0, err = 0;
	FILE *f;

	why[0] = '\0';
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		snprintf(why, why_len, "failed to open allowed-subnets file %s: %s (check the -a path)", path,
			 strerror(-err));
		return err;
	}
	while (getline(&line, &cap, f) != -1) {
		struct mmp_cidr cidr;
		const char *reason;
		int ret;

		lineno++;
		ret = mmp_cidr_parse_line(line, &cidr, &reason);
		if (ret < 0) {
			snprintf(why, why_len, "%s:%u: %s", path, lineno, reason);
			err = ret;
			goto out;
		}
		if (ret == 0)
			continue;
		err = cb(&cidr, lineno, ctx);
		if (err) {
			if (!why[0])
				snprintf(why, why_len, "%s:%u: %s", path, lineno, strerror(-err));
			goto out;
		}
		count++;
	}
	if (ferror(f)) {
		err = -EIO;
		snprintf(why, why_len, "failed to read allowed-subnets file %s: %s", path, strerror(EIO));
	}
out:
	free(line);
	fclose(f);
	return err ? err : count;
}

int mmp_allowlist_read(const char *path, mmp_cidr_cb cb, void *ctx)
{
	char why[512];
	int n = mmp_allowlist_parse(path, cb, ctx, why, sizeof(why));

	if (n < 0 && why[0])
		pr_err("%s", why);
	return n;
}
