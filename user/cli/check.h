/* SPDX-License-Identifier: GPL-2.0 */
/* `mmproxy-bpf check` and the start-up self-check it shares with `run`. */
#ifndef MMP_CHECK_H
#define MMP_CHECK_H

#include <stdbool.h>
#include "lib/config.h"

/* The check subcommand: prints ok or the exact fix per item. Returns 0 if all ok, 1 otherwise. */
int mmp_check_command(const struct mmp_config *cfg);

/*
 * Before `run` opens anything: fail with the fix when a needed capability is
 * missing (returns a negative errno), warn when the routing probe fails.
 */
int mmp_check_startup(const struct mmp_config *cfg);

#endif
