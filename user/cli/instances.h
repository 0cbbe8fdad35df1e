/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stats and cleanup without --pin-dir: the instances pinned under
 * MMP_PIN_ROOT (each default pin directory is one level below it; an older
 * version pinned into the root itself), and which of them to act on.
 */
#ifndef MMP_INSTANCES_H
#define MMP_INSTANCES_H

#include <stdbool.h>
#include "lib/config.h"

#define MMP_INSTANCES_MAX 256

struct mmp_instances {
	int n;
	char dir[MMP_INSTANCES_MAX][300];
};

/*
 * The directories `command` acts on: cfg->pin_dir if given; otherwise the only
 * instance found, or every one with --all. Returns 0, or 1 after saying what
 * was found and how to choose (--pin-dir DIR, --all).
 */
int mmp_instances_choose(const struct mmp_config *cfg, const char *command, struct mmp_instances *out);

#endif
