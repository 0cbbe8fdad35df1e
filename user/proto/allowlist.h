/* SPDX-License-Identifier: GPL-2.0 */
/* The allowed-subnets file: one CIDR per line, '#' comments, blank lines. */
#ifndef MMP_ALLOWLIST_H
#define MMP_ALLOWLIST_H

#include <stddef.h>
#include <stdint.h>

struct mmp_cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order; host bits cleared */
	unsigned int prefixlen;
};

/*
 * Parse one line (modified in place). Returns 1 with *out filled, 0 for a
 * blank or comment-only line, or -EINVAL with *reason set.
 * A bare address means a single host (/32 or /128).
 */
int mmp_cidr_parse_line(char *line, struct mmp_cidr *out, const char **reason);

typedef int (*mmp_cidr_cb)(const struct mmp_cidr *cidr, unsigned int lineno, void *ctx);

/*
 * Read every line of path, calling cb for each CIDR. On the first invalid line
 * prints "path:line: reason" and returns -EINVAL; a callback error is
 * returned as is. Returns the number of CIDRs read on success.
 */
int mmp_allowlist_read(const char *path, mmp_cidr_cb cb, void *ctx);

/*
 * The same without logging: on failure the one-line message ("path:line:
 * reason", or the open/read error) is written to why instead, so that a
 * caller (a reload) can say what happens next on the same line.
 */
int mmp_allowlist_parse(const char *path, mmp_cidr_cb cb, void *ctx, char *why, size_t why_len);

#endif
