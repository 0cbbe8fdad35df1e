/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMP_CLEANUP_H
#define MMP_CLEANUP_H

#include "lib/config.h"

/*
 * Remove the filters and pins of a stopped instance: --pin-dir (or -p/-l),
 * the only one found, or with --all every stopped one. Returns 0, or 1 when
 * the instance still runs (nothing is touched then) or the choice is unclear.
 */
int mmp_cleanup_command(const struct mmp_config *cfg);

#endif
