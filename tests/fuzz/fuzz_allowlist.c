// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the allowed-subnets file parser (user/proto/allowlist.c).
 * The input is a whole file: it is read through mmp_allowlist_read from a
 * memfd (the real getline path), and each of its lines is also parsed by
 * mmp_cidr_parse_line from an exact-size heap copy. Checks:
 *  - a line parses to 1 (a CIDR), 0 (blank or comment) or -EINVAL with a reason;
 *  - a CIDR is AF_INET/AF_INET6 with prefixlen <= 32/128, no host bits set,
 *    and no address bytes set past the family's size;
 *  - the file's count equals the lines that parse to 1, and it fails
 *    (-EINVAL) exactly when a line does, before the callback sees that line.
 * log.c is not linked: its libbpf hook is of no use here; mmp_log is a stub.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "proto/allowlist.h"
#include "lib/log.h"

int mmp_verbosity = MMP_LOG_ERR;

void mmp_log(enum mmp_log_level level, const char *fmt, ...)
{
	(void)level;
	(void)fmt;
}

#define CHECK(cond)                                                                   \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "fuzz_allowlist: line %u: %s\n", lineno, #cond); \
			abort();                                                      \
		}                                                                     \
	} while (0)

static void check_cidr(const struct mmp_cidr *c, unsigned int lineno)
{
	unsigned int max = c->family == AF_INET ? 32 : 128;

	CHECK(c->family == AF_INET || c->family == AF_INET6);
	CHECK(c->prefixlen <= max);
	for (unsigned int bit = c->prefixlen; bit < 128; bit++)
		CHECK(!(c->addr[bit / 8] & (0x80 >> (bit % 8))));
}

static int on_cidr(const struct mmp_cidr *c, unsigned int lineno, void *ctx)
{
	int *seen = ctx;

	check_cidr(c, lineno);
	(*seen)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int lineno = 0;
	int want = 0, seen = 0, got, fd;
	bool bad = false;
	char path[64];
	size_t start = 0;

	/* Line by line, as getline splits them (a NUL ends what the parser sees). */
	while (start < size && !bad) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t len = nl ? (size_t)(nl - (data + start)) + 1 : size - start;
		char *line = malloc(len + 1);
		const char *reason = NULL;
		struct mmp_cidr c;
		int ret;

		if (!line)
			abort();
		memcpy(line, data + start, len);
		line[len] = '\0';
		lineno++;
		ret = mmp_cidr_parse_line(line, &c, &reason);
		CHECK(ret == 1 || ret == 0 || ret == -EINVAL);
		if (ret == -EINVAL) {
			CHECK(reason != NULL);
			bad = true;
		}
		if (ret == 1) {
			check_cidr(&c, lineno);
			want++;
		}
		free(line);
		start += len;
	}

	fd = memfd_create("allowlist", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	got = mmp_allowlist_read(path, on_cidr, &seen);
	close(fd);
	lineno = 0;
	/* A NUL inside a line makes the two views differ: compare only NUL-free files. */
	if (memchr(data, '\0', size))
		return 0;
	if (bad)
		CHECK(got == -EINVAL && seen == want);
	else
		CHECK(got == want && seen == want);
	return 0;
}
