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

#endif
