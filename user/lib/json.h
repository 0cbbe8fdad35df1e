/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal streaming JSON writer (objects, numbers, strings, null) for
 * `stats --json`: it tracks commas and escapes strings, nothing more.
 */
#ifndef MMP_JSON_H
#define MMP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MMP_JSON_DEPTH 8

struct mmp_json {
	FILE *out;
	int depth;
	bool first[MMP_JSON_DEPTH]; /* no member written yet at this depth */
};

void mmp_json_init(struct mmp_json *j, FILE *out);
/* key is NULL for the top-level object. */
void mmp_json_begin(struct mmp_json *j, const char *key);
void mmp_json_end(struct mmp_json *j);
void mmp_json_u64(struct mmp_json *j, const char *key, uint64_t v);
void mmp_json_str(struct mmp_json *j, const char *key, const char *v);
void mmp_json_null(struct mmp_json *j, const char *key);

#endif
