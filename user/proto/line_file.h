/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one reader of the line files: the allowed-subnets file (-a) and the
 * allowed-endpoints file (--allowed-endpoints). One item per line, '#'
 * comments and blank lines allowed; each format parses its own lines.
 */
#ifndef MMP_LINE_FILE_H
#define MMP_LINE_FILE_H

#include <stddef.h>

/* Cut a '#' comment and the blanks around what is left; returns the trimmed start. */
char *mmp_line_trim(char *line);

/*
 * A line's parser: returns 1 for an item, 0 for a blank or comment-only
 * line, or a negative errno with *reason set to "cause (fix)" text (left
 * NULL: the errno's text is used).
 */
typedef int (*mmp_line_parse_cb)(char *line, unsigned int lineno, void *ctx, const char **reason);

/*
 * Read every line of path through parse. Returns the number of items, or
 * the first negative errno with why set to one line: "path:line: reason",
 * or the open or read failure naming the file as `what` ("allowed-subnets")
 * and the option that gave it ("-a"). Pure: nothing is logged.
 */
int mmp_line_file_read(const char *path, const char *what, const char *option, mmp_line_parse_cb parse, void *ctx,
		       char *why, size_t why_len);

#endif
