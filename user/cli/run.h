/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The `run` command: the instance's locks, the policy, the XDP gate, the
 * metrics server and the protocols' runs (cli/run_protocols.h), served until
 * a signal; --takeover and being taken over (docs/DESIGN.md §15).
 */
#ifndef MMP_RUN_H
#define MMP_RUN_H

#include "lib/config.h"

/* argv as given (--takeover compares it with its predecessor's). Returns 0 or a negative errno after logging. */
int mmp_run_command(const struct mmp_config *cfg, int argc, char **argv);

#endif
