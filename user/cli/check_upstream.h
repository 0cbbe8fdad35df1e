/* SPDX-License-Identifier: GPL-2.0 */
/* `check` for an upstream beyond loopback (docs/DESIGN.md §14): a spoofed connection to the real upstream. */
#ifndef MMP_CHECK_UPSTREAM_H
#define MMP_CHECK_UPSTREAM_H

#include <stdbool.h>

struct mmp_config;

/*
 * For family's upstream (-4 or -6) when it is neither on loopback nor local:
 * its route, the fwmark rule, then a spoofed connection from a TEST-NET
 * client through the steering program. Prints "ok"/"FAIL" lines with the
 * fixes. *handled is false when the upstream is on this host (the loopback
 * probe applies). Returns true when it passed.
 */
bool mmp_check_upstream(const struct mmp_config *cfg, int family, bool *handled);

#endif
