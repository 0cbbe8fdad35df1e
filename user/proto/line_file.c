// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/line_file.h"

char *mmp_line_trim(char *line)
{
	char *end, *hash = strchr(line, '#');

	if (hash)
		*hash = '\0';
	while (isspace((unsigned char)*line))
		line++;
	end = line + strlen(line);
	while (end > line && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return line;
}

int mmp_line_file_read(const char *path, const char *what, const char *option, mmp_line_parse_cb parse, void *ctx,
		       char *why, size_t why_len)
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
		snprintf(why, why_len, "failed to open %s file %s: %s (check the %s path)", what, path, strerror(-err),
			 option);
		return err;
	}
	while (getline(&line, &cap, f) != -1) {
		const char *reason = NULL;
		int ret;

		lineno++;
		ret = parse(line, lineno, ctx, &reason);
		if (ret < 0) {
			snprintf(why, why_len, "%s:%u: %s", path, lineno, reason ? reason : strerror(-ret));
			err = ret;
			goto out;
		}
		count += ret > 0;
	}
	if (ferror(f)) {
		err = -EIO;
		snprintf(why, why_len, "failed to read %s file %s: %s", what, path, strerror(EIO));
	}
out:
	free(line);
	fclose(f);
	return err ? err : count;
}
