/* SPDX-License-Identifier: GPL-2.0 */
/* Command line: go-mmproxy's flags, mmproxy-rs's long options, our commands, each with its own options. */
#ifndef MMP_OPTIONS_H
#define MMP_OPTIONS_H

#include <stdio.h>
#include "lib/config.h"

/*
 * Parse argv into *cfg (defaults first). Returns 0, or -EINVAL after printing
 * a one-line error that names the bad option and the fix. An option that the
 * command does not take is such an error.
 */
int mmp_config_parse(int argc, char **argv, struct mmp_config *cfg);
/* The command's options; MMP_CMD_HELP: every command, and run's options. */
void mmp_usage(FILE *out, enum mmp_command cmd);

/*
 * The one option table: getopt's tables, --help, the defaults and each
 * command's set of options are all made from it (xdp-tools' params.h
 * style). The man page lists the same options.
 */
struct mmp_option {
	const char *name;
	int val; /* the short option, or an OPT_* (options.c) */
	const char *arg; /* NULL: takes no value */
	unsigned int commands; /* bits 1 << enum mmp_command */
	/*
	 * The default, as the option's value would be written: set_defaults
	 * parses it with the option's own parser, and test_config holds the
	 * help to it. NULL: none, or not a constant (--listeners: cores).
	 */
	const char *def;
	const char *help;
};

extern const struct mmp_option mmp_options[];
extern const size_t mmp_options_n;

#endif
