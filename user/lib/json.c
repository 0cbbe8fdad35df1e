// SPDX-License-Identifier: GPL-2.0
#include "lib/json.h"

void mmp_json_init(struct mmp_json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->first[0] = true;
}

static void put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void member(struct mmp_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	if (key) {
		put_string(j->out, key);
		fputc(':', j->out);
	}
}

void mmp_json_begin(struct mmp_json *j, const char *key)
{
	member(j, key);
	fputc('{', j->out);
	if (j->depth + 1 < MMP_JSON_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

void mmp_json_end(struct mmp_json *j)
{
	fputc('}', j->out);
	if (j->depth > 0)
		j->depth--;
	if (j->depth == 0)
		fputc('\n', j->out);
}

void mmp_json_u64(struct mmp_json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void mmp_json_str(struct mmp_json *j, const char *key, const char *v)
{
	member(j, key);
	put_string(j->out, v);
}

void mmp_json_null(struct mmp_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->out);
}
