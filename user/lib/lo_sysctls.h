/* SPDX-License-Identifier: GPL-2.0 */
/* lo's route_localnet and accept_local, which the in-kernel paths need for remote load balancers. */
#ifndef MMP_LO_SYSCTLS_H
#define MMP_LO_SYSCTLS_H

#include <stdbool.h>

#define MMP_LO_SYSCTLS 2
extern const char *const mmp_lo_sysctls[MMP_LO_SYSCTLS];

/* Both are 1 (setup-routing sets them). */
bool mmp_lo_sysctls_ok(void);

#endif
