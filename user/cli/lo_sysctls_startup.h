/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMP_LO_SYSCTLS_STARTUP_H
#define MMP_LO_SYSCTLS_STARTUP_H

#include "lib/config.h"

/*
 * `run` with an in-kernel path (the tc engine, the UDP fast path): turn on
 * lo's route_localnet and accept_local where they are off, with one log
 * line, so that go-mmproxy's routing recipe (the ip rules only) still gets
 * remote IPv4 load balancers the kernel path. docs/DESIGN.md §3b has why
 * this is safe: both affect only packets that arrive on lo.
 */
void mmp_lo_sysctls_at_start(const struct mmp_config *cfg);

#endif
