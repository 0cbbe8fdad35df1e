/* SPDX-License-Identifier: GPL-2.0 */
/* Option values that loadgen and udpgen parse the same way. */
#ifndef MMPB_CLI_H
#define MMPB_CLI_H

#include <sys/types.h>

/* A number in [min, max], the whole string; 0, or -EINVAL (out untouched). */
int cli_num(const char *s, double min, double max, double *out);
/* --watch-pid PID: appends PID to watch[]; -EINVAL when bad or max reached. */
int cli_watch_pid(const char *s, pid_t *watch, unsigned int *nwatch, unsigned int max);
/* The default of --threads: the online CPUs, at least 1. */
unsigned int cli_default_threads(void);

#endif
